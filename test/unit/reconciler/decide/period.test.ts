import { describe, expect, it } from 'vitest';
import { ANNOTATIONS, parseReleaseAnnotations } from '../../../../src/reconciler/decide/annotations.js';
import {
  annotationFloorMs,
  DEFAULT_ANNOTATION_PERIOD_FLOOR_MS,
  PERIOD_JITTER,
  resyncAfterMs,
  withPeriodFloor,
} from '../../../../src/reconciler/decide/period.js';

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

describe('the floor of a CR annotation (the tenant writes it)', () => {
  const parsed = (raw: string) => parseReleaseAnnotations({ [ANNOTATIONS.reconcilePeriod]: raw });

  it('is the configured floor, or the period the watch would use when that is shorter', () => {
    expect(annotationFloorMs({ defaultMs: 60_000 }, DEFAULT_ANNOTATION_PERIOD_FLOOR_MS)).toBe(30_000);
    expect(annotationFloorMs({ watchMs: 10_000, defaultMs: 60_000 }, 30_000)).toBe(10_000);
    expect(annotationFloorMs({ defaultMs: 5_000 }, 30_000)).toBe(5_000);
    // Periodic reconciles off for the operator: the annotation still may not go under the floor.
    expect(annotationFloorMs({ defaultMs: 0 }, 30_000)).toBe(30_000);
  });

  it('raises 1ms to the floor and says so in a problem (an InvalidAnnotation warning event)', () => {
    const floored = withPeriodFloor(parsed('1ms'), 30_000);
    expect(floored.reconcilePeriodMs).toBe(30_000);
    expect(floored.problems).toEqual([
      `annotation ${ANNOTATIONS.reconcilePeriod}: 1ms is shorter than the 30s a CR may ask for; using 30s`,
    ]);
    expect(resyncAfterMs({ annotationMs: floored.reconcilePeriodMs, defaultMs: 60_000 }, lowest)).toBe(30_000 * (1 - PERIOD_JITTER));
  });

  it('keeps a period at or above the floor, 0 (fewer reconciles), an absent one and an unparsable one as they are', () => {
    for (const raw of ['30s', '1h', '0']) expect(withPeriodFloor(parsed(raw), 30_000)).toStrictEqual(parsed(raw));
    expect(withPeriodFloor(parseReleaseAnnotations({}), 30_000)).toStrictEqual(parseReleaseAnnotations({}));
    expect(withPeriodFloor(parsed('soon'), 30_000)).toStrictEqual(parsed('soon'));
  });
});
