import { describe, expect, it } from 'vitest';
import { refetchOnMiss } from '../../../src/k8s/restmapper.js';

describe('refetchOnMiss', () => {
  const at = (o: { justFetched?: boolean; lastRefetchAt?: number; now: number }) =>
    refetchOnMiss({ justFetched: o.justFetched ?? false, lastRefetchAt: o.lastRefetchAt, now: o.now, intervalMs: 5_000 });

  it('refetches at once when a kind misses for the first time, however recently its group-version was read', () => {
    // A chart's crds/ installed the CRD a moment after the group-version was cached for other kinds.
    expect(at({ now: 1_000 })).toBe(true);
  });

  it('does not refetch a list this very lookup just fetched', () => {
    expect(at({ justFetched: true, now: 1_000 })).toBe(false);
  });

  it('refetches a kind that keeps missing at most once per interval', () => {
    expect(at({ lastRefetchAt: 1_000, now: 1_001 })).toBe(false);
    expect(at({ lastRefetchAt: 1_000, now: 5_999 })).toBe(false);
    expect(at({ lastRefetchAt: 1_000, now: 6_000 })).toBe(true);
  });
});
