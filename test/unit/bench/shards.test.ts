import { describe, expect, it } from 'vitest';
import { spread } from '../../../bench/fleet.js';
import { seriesOf } from '../../../bench/compare/operators.js';
import { cached, median, memoryFigures, memoryTable, table, type ConfigResult } from '../../../bench/shards.js';

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

  it('reads every series of a metric with its labels', () => {
    const text = [
      '# HELP helm_operator_informer_objects x',
      'helm_operator_informer_objects{cache="cr",kind="Nginx"} 200',
      'helm_operator_informer_objects{cache="dependent",kind="Deployment"} 50',
      'helm_operator_informer_objects_other 1',
      'nodejs_heap_size_used_bytes 1048576',
    ].join('\n');
    expect(seriesOf(text, 'helm_operator_informer_objects')).toEqual([
      { labels: { cache: 'cr', kind: 'Nginx' }, value: 200 },
      { labels: { cache: 'dependent', kind: 'Deployment' }, value: 50 },
    ]);
    expect(seriesOf(text, 'nodejs_heap_size_used_bytes')).toEqual([{ labels: {}, value: MiB }]);
  });

  it('takes the median of the finite samples', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, NaN, 2, 3])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it("reports a replica's memory: median RSS and heap, its caches by kind, its watch filter", () => {
    const text = [
      'helm_operator_informer_objects{cache="cr",kind="Nginx"} 200',
      'helm_operator_informer_objects{cache="dependent",kind="Deployment"} 50',
      'helm_operator_informer_objects{cache="dependent",kind="Service"} 50',
      'helm_operator_shard_watch_filter{mode="server"} 0',
      'helm_operator_shard_watch_filter{mode="client"} 1',
    ].join('\n');
    const m = memoryFigures(
      [
        { rssBytes: 100 * MiB, heapUsedBytes: 30 * MiB },
        { rssBytes: 120 * MiB, heapUsedBytes: 20 * MiB },
        { rssBytes: 110 * MiB, heapUsedBytes: 25 * MiB },
      ],
      text,
    );
    expect(m).toEqual({
      rssBytes: 110 * MiB,
      heapUsedBytes: 25 * MiB,
      objects: { 'cr/Nginx': 200, 'dependent/Deployment': 50, 'dependent/Service': 50 },
      watchFilter: 'client',
    });
    expect(cached(m, 'dependent')).toBe(100);
    expect(cached(m, 'cr')).toBe(200);
    expect(memoryFigures([], undefined)).toEqual({ rssBytes: NaN, heapUsedBytes: NaN, objects: {}, watchFilter: undefined });
  });

  it('writes one memory row per configuration that was held, a figure per replica', () => {
    const mem = (rssMiB: number, deployments: number) => ({
      rssBytes: rssMiB * MiB,
      heapUsedBytes: (rssMiB / 2) * MiB,
      objects: { 'cr/Nginx': 100, 'dependent/Deployment': deployments },
      watchFilter: 'server',
    });
    const rows = memoryTable([
      {
        operator: 'ours',
        replicas: 2,
        convergeSeconds: 10,
        deleteSeconds: NaN,
        perReplica: [
          { ...replica(1, 1, 1), memory: mem(80, 60) },
          { ...replica(1, 1, 1), memory: mem(70, 40) },
        ],
      },
      // Not held (no --hold): no row.
      { operator: 'ours', replicas: 1, convergeSeconds: 10, deleteSeconds: 5, perReplica: [replica(1, 1, 1)] },
    ]).split('\n');
    expect(rows).toHaveLength(3);
    expect(rows[2]).toBe('| ours × 2 | server | 80 / 70 | 40 / 35 | 60 / 40 | 100 / 100 | Deployment 100 |');
    expect(table([{ operator: 'ours', replicas: 1, convergeSeconds: 10, deleteSeconds: NaN, perReplica: [] }])).toContain('| – |');
  });
});
