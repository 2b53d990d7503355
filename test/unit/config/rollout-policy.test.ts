import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ROLLOUT } from '../../../src/config/rollout-policy.js';
import { parseWatches } from '../../../src/config/watches.js';
import { WatchesError } from '../../../src/config/watches-problems.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'rollout-policy-'));
  await mkdir(join(tmp, 'chart', 'templates'), { recursive: true });
  await writeFile(join(tmp, 'chart', 'Chart.yaml'), 'apiVersion: v2\nname: app\nversion: 0.1.0\n');
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const entry = (...rollout: string[]): string =>
  ['- group: example.com', '  version: v1', '  kind: App', '  chart: chart', ...rollout].join('\n') + '\n';
const parse = (text: string) => parseWatches(text, { file: 'watches.yaml', env: {}, baseDir: tmp });
async function problems(text: string): Promise<string[]> {
  const err = await parse(text).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WatchesError);
  return (err as WatchesError).problems.map((p) => p.message);
}

describe('watches.yaml rollout', () => {
  it('is absent by default: the reconciler applies DEFAULT_ROLLOUT (one canary, waves of 25%, halt on the first failure)', async () => {
    const [w] = await parse(entry());
    expect(w).not.toHaveProperty('rollout');
    expect(DEFAULT_ROLLOUT).toEqual({
      canary: { count: 1 },
      waveSize: { percent: 25 },
      healthTimeoutMs: 300_000,
      stableForMs: 10_000,
      failureBudget: { count: 0 },
      pauseBetweenWavesMs: 0,
    });
  });

  it('reads every key, counts and percentages, durations, a canary selector', async () => {
    const [w] = await parse(
      entry(
        '  rollout:',
        '    canarySelector: { matchLabels: { tier: canary } }',
        '    waveSize: 10%',
        '    healthTimeout: 2m',
        '    stableFor: 30s',
        '    failureBudget: 3',
        '    pauseBetweenWaves: 1m',
      ),
    );
    expect(w?.rollout).toEqual({
      canary: { selector: { matchLabels: { tier: 'canary' } } },
      waveSize: { percent: 10 },
      healthTimeoutMs: 120_000,
      stableForMs: 30_000,
      failureBudget: { count: 3 },
      pauseBetweenWavesMs: 60_000,
    });
  });

  it("takes operator-sdk's all-at-once as canary 0 and waveSize 100%, other keys at their defaults", async () => {
    const [w] = await parse(entry('  rollout:', '    canary: 0', '    waveSize: 100%'));
    expect(w?.rollout).toEqual({ ...DEFAULT_ROLLOUT, canary: { count: 0 }, waveSize: { percent: 100 } });
  });

  it('reports each bad key and value at its file:line:column', async () => {
    expect(
      await problems(
        entry(
          '  rollout:',
          '    canary: 10%',
          '    waveSize: 0',
          '    healthTimeout: 10',
          '    stableFor: soon',
          '    failureBudget: 150%',
          '    wave: 2',
        ),
      ),
    ).toEqual([
      'watches.yaml:6:13: entry 0 (example.com/v1, Kind=App): field "rollout.canary": expected a whole number of CRs (0 for none), not a percentage',
      'watches.yaml:7:15: entry 0 (example.com/v1, Kind=App): field "rollout.waveSize": expected a whole number of at least 1 or a percentage such as "25%", got number 0',
      'watches.yaml:8:20: entry 0 (example.com/v1, Kind=App): field "rollout.healthTimeout": expected a duration string such as "30s" or "5m", got number 10',
      expect.stringMatching(
        /^watches\.yaml:9:16: entry 0 \(example\.com\/v1, Kind=App\): field "rollout\.stableFor": /,
      ) as unknown as string,
      'watches.yaml:10:20: entry 0 (example.com/v1, Kind=App): field "rollout.failureBudget": expected a whole number of at least 0 or a percentage such as "25%", got string "150%"',
      'watches.yaml:11:5: entry 0 (example.com/v1, Kind=App): field "rollout.wave": unknown key (did you mean "waveSize"?)',
    ]);
  });

  it('refuses a canary count and selector together, and a rollout that is not a map', async () => {
    expect(await problems(entry('  rollout:', '    canary: 1', '    canarySelector: { matchLabels: { a: b } }'))).toEqual([
      'watches.yaml:7:21: entry 0 (example.com/v1, Kind=App): field "rollout.canarySelector": set canary (a count) or canarySelector (a label selector), not both',
    ]);
    expect((await problems(entry('  rollout: waves')))[0]).toMatch(
      /^watches\.yaml:5:12: .*field "rollout": expected a map of canary, canarySelector/,
    );
  });
});
