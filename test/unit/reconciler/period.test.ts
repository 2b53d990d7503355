import { describe, expect, it } from 'vitest';
import { PERIOD_JITTER, resyncAfterMs } from '../../../src/reconciler/period.js';

const lowest = (): number => 0;
const middle = (): number => 0.5;

describe('resyncAfterMs', () => {
  it("takes the CR's annotation first, then the watch's period, then the operator's default", () => {
    expect(resyncAfterMs({ annotationMs: 30_000, watchMs: 120_000, defaultMs: 60_000 }, middle)).toBe(30_000);
    expect(resyncAfterMs({ annotationMs: undefined, watchMs: 120_000, defaultMs: 60_000 }, middle)).toBe(120_000);
    expect(resyncAfterMs({ defaultMs: 60_000 }, middle)).toBe(60_000);
  });

  it('spreads the chosen period by the jitter fraction', () => {
    expect(resyncAfterMs({ defaultMs: 60_000 }, lowest)).toBe(60_000 * (1 - PERIOD_JITTER));
    expect(resyncAfterMs({ watchMs: 60_000, defaultMs: 1 }, () => 0.999_999)).toBe(60_000 * (1 + PERIOD_JITTER));
  });

  it('keeps 0, resyncs off, at 0 whatever the random source says', () => {
    expect(resyncAfterMs({ annotationMs: 0, defaultMs: 60_000 }, lowest)).toBe(0);
    expect(resyncAfterMs({ defaultMs: 0 }, () => 0.9)).toBe(0);
  });

  it('gives CRs reconciled in one burst periods that differ', () => {
    const periods = Array.from({ length: 50 }, () => resyncAfterMs({ defaultMs: 600_000 }));
    expect(new Set(periods).size).toBeGreaterThan(5);
    expect(Math.min(...periods)).toBeGreaterThanOrEqual(570_000);
    expect(Math.max(...periods)).toBeLessThanOrEqual(630_000);
  });
});
