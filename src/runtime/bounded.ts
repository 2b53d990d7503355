import { AdaptiveGate } from './adaptive-gate.js';

/**
 * `fn` over `items` with at most `width` calls in flight, results in the order of `items`. For
 * independent round trips (one per object of a release) whose latency would otherwise add up, at a
 * width that keeps one reconcile from flooding the API server. The first rejection rejects the
 * whole; calls already started still run to their end.
 */
export async function mapBounded<T, R>(items: readonly T[], width: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  if (!Number.isInteger(width) || width < 1) throw new RangeError(`width must be a positive integer, got ${width}`);
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return results;
}

/**
 * A gate for work that arrives over time (mapBounded needs the items up front): each call runs
 * `fn` once fewer than `width` calls started through this gate are still running. Settles as `fn`
 * does.
 */
export function boundedRunner(width: number): <R>(fn: () => Promise<R>) => Promise<R> {
  if (!Number.isInteger(width) || width < 1) throw new RangeError(`width must be a positive integer, got ${width}`);
  // The tuner's gate at a width that never changes: a finished call hands its slot straight to the
  // next waiter, so a call arriving meanwhile cannot take it too.
  const gate = new AdaptiveGate(width);
  return async <R>(fn: () => Promise<R>): Promise<R> => {
    const release = await gate.acquire();
    try {
      return await fn();
    } finally {
      release();
    }
  };
}
