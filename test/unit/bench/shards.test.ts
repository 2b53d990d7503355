import { describe, expect, it } from 'vitest';
import { spread } from '../../../bench/fleet.js';
import { table, type ConfigResult } from '../../../bench/shards.js';

const MiB = 1024 * 1024;
const replica = (cpuSeconds: number, helm: number | undefined, rssMiB: number) => ({
  cpuSeconds,
  throttledSeconds: 1,
  helmExecutions: helm,
  rssEndBytes: rssMiB * MiB,
  memoryPeakBytes: (rssMiB + 10) * MiB,
});

describe('the shards bench', () => {
  it('spreads the CRs round-robin over the namespaces', () => {
    expect(spread(5, ['a', 'b'])).toEqual([
      { name: 's-1', namespace: 'a' },
      { name: 's-2', namespace: 'b' },
      { name: 's-3', namespace: 'a' },
      { name: 's-4', namespace: 'b' },
      { name: 's-5', namespace: 'a' },
    ]);
    expect(() => spread(1, [])).toThrow(/no namespaces/);
  });

  it('gives each configuration its ratio to one replica and to operator-sdk', () => {
    const configs: ConfigResult[] = [
      { operator: 'ours', replicas: 1, convergeSeconds: 100, deleteSeconds: 50, perReplica: [replica(30, 100, 80)] },
      {
        operator: 'ours',
        replicas: 4,
        convergeSeconds: 30,
        deleteSeconds: 15,
        perReplica: [1, 2, 3, 4].map((i) => replica(8, 24 + i, 60)),
      },
      { operator: 'operator-sdk', replicas: 1, convergeSeconds: 120, deleteSeconds: 40, perReplica: [replica(28, undefined, 90)] },
    ];
    const lines = table(configs).split('\n');
    expect(lines[2]).toBe('| ours × 1 | 100.0 | 1.00× | 0.83× | 30.0 | 1.0 | 100 | 80 | 90 | 50.0 |');
    expect(lines[3]).toBe('| ours × 4 | 30.0 | 0.30× | 0.25× | 32.0 | 4.0 | 25 / 26 / 27 / 28 | 60 / 60 / 60 / 60 | 70 | 15.0 |');
    expect(lines[4]).toBe('| operator-sdk × 1 | 120.0 | 1.20× | 1.00× | 28.0 | 1.0 | – | 90 | 100 | 40.0 |');
  });

  it('says "–" for a ratio whose reference did not run', () => {
    const [, , row] = table([{ operator: 'ours', replicas: 2, convergeSeconds: 10, deleteSeconds: 5, perReplica: [] }]).split('\n');
    expect(row).toContain('| ours × 2 | 10.0 | – | – |');
  });
});
