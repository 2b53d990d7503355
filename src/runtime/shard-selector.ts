/**
 * A replica's share of the namespace buckets (docs/adr/0085) as the `shardSelector` a Kubernetes
 * 1.36+ API server with `ShardedListAndWatch` (KEP-5866) filters LIST and WATCH by
 * (docs/adr/0103). Pure.
 *
 * The server hashes `object.metadata.namespace` with 64-bit FNV-1a (k8s.io/apimachinery
 * pkg/sharding `HashField`) and keeps an object when the hash is in one of the half-open ranges
 * `shardRange(object.metadata.namespace, '0x<16 hex>', '0x<16 hex>')` joined by `||`; the upper
 * bound of the whole space is written `0x10000000000000000`. A bucket is the top bits of that same
 * hash (`namespaceBucket`), so a set of buckets is exactly a union of ranges: adjacent buckets merge
 * into one range, and the server returns precisely the objects of the namespaces this replica owns.
 */
import { bucketHashRange, SHARD_BUCKETS } from './shard-assignment.js';

/** The field the shares are cut by: the namespace, so one owner has all of a namespace's objects. */
export const SHARD_FIELD = 'object.metadata.namespace';

/**
 * A range no namespace's hash falls in, in practice: the single value 0 (FNV-1a of a name is 0 with
 * probability 2^-64). An empty share cannot be written otherwise (the server refuses an empty
 * selector and a range whose start is not below its end), and no selector would mean everything.
 */
const NOTHING = `shardRange(${SHARD_FIELD}, '0x0000000000000000', '0x0000000000000001')`;

/**
 * The selector of `buckets` (of `total`): undefined when they are all of them (no filter needed),
 * a range that matches no namespace when there are none.
 */
export function shardSelectorOf(buckets: Iterable<number>, total = SHARD_BUCKETS): string | undefined {
  const sorted = [...new Set(buckets)].sort((a, b) => a - b);
  for (const b of sorted) {
    if (!Number.isInteger(b) || b < 0 || b >= total) throw new RangeError(`bucket ${b} is not one of 0..${total - 1}`);
  }
  if (sorted.length === total) return undefined;
  if (sorted.length === 0) return NOTHING;
  const runs: [number, number][] = [];
  for (const b of sorted) {
    const last = runs.at(-1);
    if (last !== undefined && last[1] === b) last[1] = b + 1;
    else runs.push([b, b + 1]);
  }
  return runs
    .map(([first, end]) => `shardRange(${SHARD_FIELD}, '${bucketHashRange(first, total).start}', '${bucketHashRange(end - 1, total).end}')`)
    .join(' || ');
}
