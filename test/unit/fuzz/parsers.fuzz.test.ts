/**
 * Property-based fuzzing (seeded, bounded) of what a CR author's text reaches first: value paths,
 * setting values at them, the values-from annotation with what its objects hold, and the spec
 * check. Each call must return (or throw its own typed error) within a time and heap budget, and
 * what the checks let through must be safe for the recursive code after them (issue 32: an
 * unclosed `[` looped forever, `a[4294967294]` exhausted the heap, a deep spec the stack).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseValuePath, VALUE_PATH_LIMITS, ValuePathError, type ValuePath } from '../../../src/config/value-path.js';
import type { CustomResource } from '../../../src/k8s/custom-resources.js';
import { invalidInput } from '../../../src/reconciler/desired/desired.js';
import { VALUES_LIMITS, valuesProblem } from '../../../src/reconciler/decide/limits.js';
import { leafStrings } from '../../../src/util/value-leaves.js';
import { composeReferencedValues, deepMerge, parseValuesFrom, secretStrings } from '../../../src/reconciler/desired/values-from.js';
import { mergeValues, setValueAt, type Values } from '../../../src/reconciler/desired/values.js';
import { canonicalJson } from '../../../src/util/canonical-json.js';
import { reportFuzz } from '../../support/fuzz-report.js';

const SEED = 20261126;
const RUNS = 300;
/**
 * Per call, on a machine shared with other work. The parsers take a few ms on these inputs; the
 * largest spec accepted (4 MiB) takes a few hundred ms to clone, merge and hash. A hang or a
 * runaway allocation is orders of magnitude beyond.
 */
const TIME_BUDGET_MS = 1500;
const HEAP_BUDGET_BYTES = 64 * 1024 * 1024;

/**
 * Runs `fn` and asserts it stayed within the budget: the heap it left grown (garbage included,
 * so an upper bound) and the time it took. A hang never returns: the test's timeout is that bound.
 */
function withinBudget<T>(fn: () => T): T {
  const heap = process.memoryUsage().heapUsed;
  const start = performance.now();
  const out = fn();
  const ms = performance.now() - start;
  expect(ms, 'time of one call (ms)').toBeLessThan(TIME_BUDGET_MS);
  expect(process.memoryUsage().heapUsed - heap, 'heap growth of one call (bytes)').toBeLessThan(HEAP_BUDGET_BYTES);
  return out;
}

/** Runs `fn`; a ValuePathError (a refused path) is an answer too, anything else thrown is not. */
function unlessRefused(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof ValuePathError)) throw err;
  }
}

const segment = fc.oneof(fc.string({ minLength: 1, maxLength: 6 }), fc.nat({ max: VALUE_PATH_LIMITS.maxIndex }));
/** Text of a path: the pieces attacks are made of, among ordinary ones. */
const pathText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc
    .array(
      fc.constantFrom(
        'a',
        'b.',
        '[',
        ']',
        '[0]',
        '[-1]',
        '[65536]',
        '[65537]',
        '[4294967294]',
        '\\',
        '\\.',
        '.',
        '=',
        ',',
        '9'.repeat(30),
        '[x]',
      ),
      { maxLength: 40 },
    )
    .map((p) => p.join('')),
  fc.nat({ max: 5000 }).map((n) => `a${'['.repeat(n)}`),
  fc.nat({ max: 5000 }).map((n) => `a[${'9'.repeat(n)}]`),
  fc.nat({ max: 200 }).map((n) => Array.from({ length: n }, () => 'a').join('.')),
);
/** A path as written from its segments, escaping what must be escaped. */
const written = (path: ValuePath): string =>
  path.map((s, i) => (typeof s === 'number' ? `[${s}]` : `${i === 0 ? '' : '.'}${s.replace(/[\\.[\]=,]/g, (c) => `\\${c}`)}`)).join('');

/** Maps and lists `depth` deep, built without recursion. */
function nested(depth: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? { k: v } : [v];
  return v;
}
const deepYaml = (depth: number): string => `${Array.from({ length: depth }, (_, i) => `${' '.repeat(i)}k:`).join('\n')} 1\n`;

// Hundreds of seeded inputs a property: under a second of CPU when idle, past the 5 s default at
// load average 40 on 2 cores. The bound only stops a hang.
describe('parsers under fuzzing, within a time and heap budget', { timeout: 60_000 }, () => {
  it('parseValuePath: a bounded path or a ValuePathError, and paths written from segments read back', () => {
    fc.assert(
      fc.property(pathText, (text) => {
        unlessRefused(() => {
          const path = withinBudget(() => parseValuePath(text));
          expect(path.length).toBeGreaterThan(0);
          expect(path.length).toBeLessThanOrEqual(VALUE_PATH_LIMITS.maxSegments);
          for (const s of path) if (typeof s === 'number') expect(s).toBeLessThanOrEqual(VALUE_PATH_LIMITS.maxIndex);
        });
      }),
      { seed: SEED, numRuns: RUNS },
    );
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 6 }),
        fc.array(segment, { maxLength: VALUE_PATH_LIMITS.maxSegments - 1 }),
        (first, rest) => {
          const path = [first, ...rest];
          const text = written(path);
          if (text.length <= VALUE_PATH_LIMITS.maxLength) expect(withinBudget(() => parseValuePath(text))).toEqual(path);
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
    reportFuzz('value paths (unit)', 2 * RUNS);
  }, 60_000);

  it('setValueAt: refuses or sets, and what it sets stays within the values limits', () => {
    const anySegment = fc.oneof(segment, fc.integer(), fc.constantFrom(4294967294, 2 ** 32, -1, 0.5, Number.NaN, Infinity));
    fc.assert(
      fc.property(fc.array(fc.array(anySegment, { maxLength: 40 }), { minLength: 1, maxLength: 4 }), (paths) => {
        const target: Values = {};
        for (const path of paths) {
          unlessRefused(() => {
            withinBudget(() => {
              setValueAt(target, path, 'v');
            });
          });
        }
        // Four paths of at most 32 segments, each index at most 65536: within the limits, and
        // the recursive code after them runs on the result.
        expect(withinBudget(() => valuesProblem(target))).toBeUndefined();
        withinBudget(() => canonicalJson(target));
      }),
      { seed: SEED, numRuns: RUNS },
    );
    reportFuzz('setValueAt (unit)', RUNS);
  }, 60_000);

  it('values-from: the annotation parsed, the objects composed and hidden, never an exception or a blow-up', () => {
    const ref = fc.record(
      {
        kind: fc.constantFrom('Secret', 'ConfigMap', 'Pod'),
        name: fc.constantFrom('db', 'kube-root-ca.crt', 'Bad_Name'),
        key: fc.constantFrom('values.yaml', 'ca.crt', 'password'),
        targetPath: pathText,
        optional: fc.boolean(),
      },
      { requiredKeys: ['kind', 'name'] },
    );
    const annotation = fc.oneof(
      fc.array(ref, { maxLength: 40 }).map((a) => JSON.stringify(a)),
      fc.array(ref, { maxLength: 5 }).map((a) => a.map((r) => `- ${JSON.stringify(r)}`).join('\n')),
      fc.nat({ max: 20_000 }).map((n) => `- ${'['.repeat(n)}`),
      fc.nat({ max: 20_000 }).map((n) => `- {kind: Secret, name: ${'{a: '.repeat(n)}`),
      fc.string({ maxLength: 200 }),
    );
    const data = fc.oneof(
      fc.constantFrom('a: [1, {b: 2}]\n', '- not a map\n', 'x', '', 'a: &a [x, x]\nb: [*a, *a, *a]\n'),
      fc.nat({ max: 400 }).map(deepYaml),
      fc.nat({ max: 200 }).map((n) => `a: ${'['.repeat(n)}${']'.repeat(n)}\n`),
      fc.nat({ max: 1024 * 1024 }).map((n) => `a: ${'{a: '.repeat(n >> 2)}`),
      fc.nat({ max: 200_000 }).map((n) => `big: ${'x'.repeat(n)}\n`),
    );
    fc.assert(
      fc.property(annotation, data, (raw, text) => {
        const parsed = withinBudget(() => parseValuesFrom(raw));
        if ('problem' in parsed) {
          expect(parsed.problem).toContain('helm.sdk.operatorframework.io/values-from');
          expect(parsed.problem.length).toBeLessThan(2000);
          return;
        }
        const objects = parsed.refs.map((r) => ({ [r.key]: text }));
        withinBudget(() => secretStrings(parsed.refs, objects));
        const out = withinBudget(() => composeReferencedValues(parsed.refs, objects));
        if (out.oversized.length === 0) {
          expect(valuesProblem(out.values)).toBeUndefined();
          withinBudget(() => canonicalJson(deepMerge(out.values, out.values)));
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
    reportFuzz('values-from annotation and objects (unit)', RUNS);
  }, 60_000);

  it('spec check: a refusal or a spec the recursive code handles, at any depth or width', () => {
    // Wide specs up to 5.4 MB, either side of the 4 MiB limit, are few: each takes a while to clone.
    const spec = fc.oneof(
      { arbitrary: fc.jsonValue({ maxDepth: 6 }), weight: 6 },
      {
        arbitrary: fc.tuple(fc.nat({ max: 20_000 }), fc.jsonValue({ maxDepth: 2 })).map(([depth, leaf]) => nested(depth, leaf)),
        weight: 3,
      },
      {
        arbitrary: fc
          .tuple(fc.nat({ max: 30_000 }), fc.nat({ max: 180 }))
          .map(([n, len]) => ({ list: Array.from({ length: n }, () => 'x'.repeat(len)) })),
        weight: 1,
      },
    );
    fc.assert(
      fc.property(spec, (value) => {
        const cr = {
          apiVersion: 'x.example.com/v1',
          kind: 'App',
          metadata: { name: 'app', namespace: 'ns' },
          spec: value,
        } as CustomResource;
        const refused = withinBudget(() => invalidInput(cr, 'app'));
        if (refused !== undefined) {
          expect(refused).toMatchObject({ kind: 'refused', reason: 'InvalidSpec', retry: false });
          return;
        }
        // Accepted: each recursive step after the check stays within the stack and the budget.
        const values = (value ?? {}) as Values;
        const merged = withinBudget(() => mergeValues(deepMerge({}, values), { 'image.tag': 'x' }));
        withinBudget(() => canonicalJson(merged));
        withinBudget(() => leafStrings(merged));
        expect(JSON.stringify(merged).length).toBeLessThan(VALUES_LIMITS.maxBytes * 2);
      }),
      { seed: SEED, numRuns: RUNS },
    );
    reportFuzz('CR spec check (unit)', RUNS);
  }, 60_000);
});
