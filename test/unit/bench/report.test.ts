import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { median, percentile, rows, type CompareResult } from '../../../bench/compare/report.js';

describe('bench-compare report statistics', () => {
  it('median is the middle value, and the mean of the two middle ones for an even count', () => {
    expect(median([3, 1, 2])).toBe(2);
    // Two interleaved rounds report their mean, not their minimum.
    expect(median([1.34, 0.78])).toBeCloseTo(1.06);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([Number.NaN, 5])).toBe(5);
    expect(median([])).toBeNaN();
  });

  it('percentile is nearest-rank (p95 of latencies)', () => {
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95)).toBe(10);
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50)).toBe(5);
  });
});

describe('bench-compare targets', () => {
  const result = JSON.parse(
    readFileSync(path.join(import.meta.dirname, '../../../docs/benchmarks/compare-N1000-first-pass.json'), 'utf8'),
  ) as CompareResult;
  const peak = (r: CompareResult) => rows(r).find((row) => row.metric === 'operator RSS peak during converge')!;

  it('judges the RSS peak at N=1000 against 150 MiB too, not only against operator-sdk', () => {
    expect(peak(result).ratio).toBeLessThan(1);
    expect(peak(result).ours).toBeGreaterThan(150);
    expect(peak(result).target).toMatchObject({ met: false });
    expect(peak({ ...result, n: 100 }).target).toMatchObject({ met: true });
  });
});
