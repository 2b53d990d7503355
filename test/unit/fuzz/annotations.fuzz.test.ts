/** Property-based fuzzing (seeded, bounded) of what a CR's annotations can hold: parsing never throws. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseReleaseAnnotations } from '../../../src/reconciler/decide/annotations.js';
import { composeReferencedValues, parseValuesFrom } from '../../../src/reconciler/desired/values-from.js';
import { reportFuzz } from '../../support/fuzz-report.js';

const SEED = 20261123;
const RUNS = 500;

// Hundreds of seeded inputs a property: under a second of CPU when idle, past the 5 s default at
// load average 40 on 2 cores. The bound only stops a hang.
describe('CR annotations under fuzzing', { timeout: 60_000 }, () => {
  it('values-from: references or one problem, never an exception', () => {
    const ref = fc.record(
      {
        kind: fc.oneof(fc.constantFrom('Secret', 'ConfigMap'), fc.string({ maxLength: 6 })),
        name: fc.oneof(fc.constantFrom('db', 'a.b', 'x-1'), fc.string({ maxLength: 10 })),
        key: fc.oneof(fc.constantFrom('password', 'values.yaml'), fc.string({ maxLength: 6 }), fc.integer()),
        targetPath: fc.oneof(fc.constantFrom('auth.password', 'a[0].b', 'a\\.b'), fc.string({ maxLength: 8 })),
        optional: fc.oneof(fc.boolean(), fc.string({ maxLength: 3 })),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 120 }),
          fc.array(ref, { maxLength: 4 }).map((a) => JSON.stringify(a)),
        ),
        (raw) => {
          const parsed = parseValuesFrom(raw);
          if ('problem' in parsed) {
            expect(parsed.problem).toContain('helm.sdk.operatorframework.io/values-from');
            return;
          }
          // What parses also composes, whatever the objects hold.
          const data = parsed.refs.map((r) => ({ [r.key]: 'a: [1, {b: 2}]\n' }));
          const out = composeReferencedValues(parsed.refs, data);
          expect(out.missing).toEqual([]);
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
    reportFuzz('CR annotation values-from (unit)', RUNS);
  });

  it('release annotations: defaults and problems, never an exception', () => {
    const keys = ['upgrade-force', 'rollback-force', 'uninstall-wait', 'reconcile-period', 'paused', 'drift-repair', 'other'].map(
      (k) => `helm.sdk.operatorframework.io/${k}`,
    );
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...keys), fc.string({ maxLength: 12 })), (annotations) => {
        const parsed = parseReleaseAnnotations(annotations);
        expect(typeof parsed.paused).toBe('boolean');
        expect(Array.isArray(parsed.problems)).toBe(true);
      }),
      { seed: SEED, numRuns: RUNS },
    );
    reportFuzz('CR release annotations (unit)', RUNS);
  });
});
