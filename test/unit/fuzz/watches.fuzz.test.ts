/**
 * Property-based fuzzing of the watches.yaml loader (seeded, bounded): whatever the document, it
 * resolves or throws its own WatchesError whose every problem names the file, never anything
 * else, and it never hangs on YAML alias bombs.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseWatches } from '../../../src/config/watches.js';
import { WatchesError } from '../../../src/config/watches-problems.js';
import { reportFuzz } from '../../support/fuzz-report.js';

const SEED = 20261123;
const RUNS = 300;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'watches-fuzz-'));
  await mkdir(join(dir, 'helm-charts/nginx/templates'), { recursive: true });
  await writeFile(join(dir, 'helm-charts/nginx/Chart.yaml'), 'apiVersion: v2\nname: nginx\nversion: 0.1.0\n');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Resolves when the loader behaved: a result, or a WatchesError naming the file in every problem. */
async function behaves(text: string): Promise<void> {
  try {
    await parseWatches(text, { file: 'watches.yaml', env: {}, baseDir: dir });
  } catch (err) {
    if (!(err instanceof WatchesError)) throw new Error(`threw ${String(err)} for ${JSON.stringify(text)}`, { cause: err });
    expect(err.problems.length).toBeGreaterThan(0);
    for (const p of err.problems) expect(p.message.startsWith('watches.yaml')).toBe(true);
  }
}

const VALID = [
  '- group: example.com',
  '  version: v1alpha1',
  '  kind: Nginx',
  '  chart: helm-charts/nginx',
  '  watchDependentResources: true',
  '  overrideValues: {image.tag: $TAG}',
  '  selector: {matchLabels: {app: web}}',
  '  reconcilePeriod: 1m',
  '  maxConcurrentReconciles: 2',
  '  confineToNamespace: true',
  '  allowClusterScoped: [Namespace]',
  '',
].join('\n');

const FIELDS = [
  'group',
  'version',
  'kind',
  'chart',
  'watchDependentResources',
  'overrideValues',
  'selector',
  'reconcilePeriod',
  'maxConcurrentReconciles',
  'dryRunOption',
  'serviceAccountName',
  'confineToNamespace',
  'allowClusterScoped',
  'bogus',
];
const yamlValue = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constantFrom('null', '~', '[]', '{}', '[a, b]', '{a: 1}', '"1m"', '*x', '&x y', '!!binary aGk=', '{{ .Values }}', '- a', ': :'),
);

// 300 seeded inputs a property: about half a second of CPU each when idle, past the 5 s default at
// load average 40 on 2 cores. The bound only stops a hang.
describe('watches.yaml loader under fuzzing', { timeout: 60_000 }, () => {
  it('mutated valid files: a result or a positioned WatchesError', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: VALID.length }),
        fc.integer({ min: 0, max: 20 }),
        fc.string({ maxLength: 8 }),
        async (at, cut, insert) => {
          await behaves(VALID.slice(0, at) + insert + VALID.slice(at + cut));
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
    reportFuzz('watches.yaml loader (unit)', RUNS);
  });

  it('entries built from known and unknown fields with any values', async () => {
    const entry = fc.dictionary(fc.constantFrom(...FIELDS), yamlValue, { maxKeys: 8 });
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { maxLength: 4 }), async (entries) => {
        const text = entries
          .map(
            (e) =>
              Object.entries(e)
                .map(([k, v], i) => `${i === 0 ? '- ' : '  '}${k}: ${String(v)}`)
                .join('\n') || '- {}',
          )
          .join('\n');
        await behaves(text);
      }),
      { seed: SEED, numRuns: RUNS },
    );
    reportFuzz('watches.yaml loader (unit)', RUNS);
  });

  it('arbitrary text', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 200 }), async (text) => {
        await behaves(text);
      }),
      { seed: SEED, numRuns: RUNS },
    );
    reportFuzz('watches.yaml loader (unit)', RUNS);
  });

  it('refuses or survives alias bombs quickly', async () => {
    const levels = Array.from({ length: 12 }, (_, i) => `l${i + 1}: &l${i + 1} [${Array(9).fill(`*l${i}`).join(', ')}]`);
    const bomb = ['l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]', ...levels].join('\n');
    const docs = [
      `- group: example.com\n  version: v1\n  kind: A\n  chart: helm-charts/nginx\n  overrideValues: &o {${'a: b, '.repeat(3)}c: d}\n  selector: {matchLabels: *o}\nbombs: [${bomb}]`,
      `x: &a [${Array(50).fill('y').join(',')}]\n${Array.from({ length: 20 }, (_, i) => `x${i}: &a${i} [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]`).join('\n')}\n- kind: A`,
      `${bomb}\n`,
      `- &e {group: example.com, version: v1, kind: A, chart: helm-charts/nginx, overrideValues: {a: b}}\n${Array(20).fill('- *e').join('\n')}\n`,
    ];
    // An expansion would run for minutes: the test's own timeout is the bound, not a timing assertion.
    for (const text of docs) await behaves(text);
    reportFuzz('watches.yaml alias bombs (unit)', docs.length);
  }, 30_000);
});
