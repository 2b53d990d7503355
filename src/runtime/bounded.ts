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
