import { describe, expect, it } from 'vitest';
import { metricSum, table, type ScaleResult } from '../../../bench/scale.js';

const MiB = 1024 * 1024;
const result = (over: Partial<ScaleResult>): ScaleResult => ({
  operator: 'ours',
  replicas: 1,
  convergeSeconds: 600,
  windowMinutes: 5,
  cpuPerMinute: [0.5],
  rssBytes: [200 * MiB],
  apiRequestsPerMinute: 30,
  apiRequestsByVerb: {},
  watchBytesPerMinute: 2 * MiB,
  helmExecutions: 0,
  releaseSecrets: 10_000,
  releaseSecretBytes: 40 * MiB,
  storageBytes: 300 * MiB,
  ...over,
});

describe('the scale bench', () => {
  it('sums a metric over its series and skips metrics that only share its prefix', () => {
    const text = [
      '# HELP apiserver_watch_events_sizes_sum x',
      'apiserver_watch_events_sizes_sum{group="",resource="secrets"} 100',
      'apiserver_watch_events_sizes_sum{group="apps",resource="deployments"} 50.5',
      'apiserver_watch_events_sizes_sum_other 7',
      'apiserver_storage_size_bytes 4096',
    ].join('\n');
    expect(metricSum(text, 'apiserver_watch_events_sizes_sum')).toBe(150.5);
    expect(metricSum(text, 'apiserver_storage_size_bytes')).toBe(4096);
    expect(metricSum(text, 'absent')).toBe(0);
  });

  it("puts the baseline first and gives ours's CPU and requests as ratios to operator-sdk's", () => {
    const lines = table({ apiRequestsPerMinute: 12, watchBytesPerMinute: MiB }, [
      result({ replicas: 2, cpuPerMinute: [0.25, 0.35], rssBytes: [150 * MiB, 160 * MiB] }),
      result({ operator: 'operator-sdk', cpuPerMinute: [60], apiRequestsPerMinute: 600, helmExecutions: undefined, rssBytes: [900 * MiB] }),
    ]).split('\n');
    expect(lines[2]).toBe('| no operator (baseline) | – | – | 12 | – | 1.00 | – | – | – | – | – |');
    expect(lines[3]).toBe('| ours × 2 | 0.60 (0.25 / 0.35) | 0.010× | 30 | 0.050× | 2.00 | 150 / 160 | 0 | 10000 (40 MiB) | 300 | 600 |');
    expect(lines[4]).toBe('| operator-sdk × 1 | 60.00 (60.00) | 1.000× | 600 | 1.000× | 2.00 | 900 | – | 10000 (40 MiB) | 300 | 600 |');
  });
});
