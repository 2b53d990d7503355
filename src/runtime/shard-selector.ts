/**
 * A replica's share as the `shardSelector` a Kubernetes 1.36+ API server with `ShardedListAndWatch`
 * (KEP-5866) filters LIST and WATCH by (docs/adr/0103, 0110). Pure.
 *
 * The server hashes `object.metadata.namespace` with 64-bit FNV-1a (k8s.io/apimachinery
 * pkg/sharding `HashField`) and keeps an object when the hash is in one of the half-open ranges
 * `shardRange(object.metadata.namespace, '0x<16 hex>', '0x<16 hex>')` joined by `||`; the upper
 * bound of the whole space is written `0x10000000000000000`. A namespace's bucket is a mixed hash
 * (shard-assignment.ts), not a range of FNV-1a, so the share is asked for by name: the ranges cover
 * the FNV-1a hashes of the namespaces this replica owns among those it knows, and no more than
 * {@link MAX_SHARD_RANGES} of them (the server parses the `||` chain recursively): beyond that the
 * runs merge across the gaps that hold the fewest other namespaces. The informer drops what a merged
 * range lets through, and a namespace learnt later is asked for on the next change of the share.
 */
import { fnv1a64 } from './shard-assignment.js';

/** The field the shares are cut by: the namespace, so one owner has all of a namespace's objects. */
export const SHARD_FIELD = 'object.metadata.namespace';

/** Ranges per selector at most: a few KiB of query string, and well under CEL's parser depth of 250. */
export const MAX_SHARD_RANGES = 32;

const SPACE_END = 1n << 64n;

/** A half-open range of the 64-bit FNV-1a space: start ≤ hash < end. */
export interface HashRange {
  readonly start: bigint;
  readonly end: bigint;
}

/** A run of owned hashes, and how many other namespaces lie between it and the run before. */
interface Run {
  readonly start: bigint;
  end: bigint;
  readonly gapBefore: number;
}

/**
 * The ranges that ask for the namespaces of `owned` and for as few of `others` as
 * {@link MAX_SHARD_RANGES} allows. Empty when nothing is owned.
 */
export function shareRanges(owned: Iterable<string>, others: Iterable<string>, maxRanges = MAX_SHARD_RANGES): HashRange[] {
  if (!Number.isInteger(maxRanges) || maxRanges < 1) throw new RangeError(`maxRanges must be a positive integer, got ${maxRanges}`);
  const runs = ownedRuns(new Set(owned), others);
  while (runs.length > maxRanges) mergeCheapest(runs);
  return runs.map(({ start, end }) => ({ start, end }));
}

/** The owned namespaces' hashes in order, as runs no other known namespace falls inside. */
function ownedRuns(mine: ReadonlySet<string>, others: Iterable<string>): Run[] {
  const points = [...new Set([...mine, ...others])]
    .map((namespace) => ({ hash: fnv1a64(namespace), mine: mine.has(namespace) }))
    .sort((a, b) => (a.hash === b.hash ? Number(b.mine) - Number(a.mine) : a.hash < b.hash ? -1 : 1));
  const runs: Run[] = [];
  let othersSince = 0;
  for (const p of points) {
    if (!p.mine) {
      othersSince++;
      continue;
    }
    const last = runs.at(-1);
    if (last !== undefined && othersSince === 0) last.end = p.hash + 1n;
    else runs.push({ start: p.hash, end: p.hash + 1n, gapBefore: othersSince });
    othersSince = 0;
  }
  return runs;
}

/** Merges into the run before it the run whose gap lets the fewest others in. */
function mergeCheapest(runs: Run[]): void {
  let cheapest = 1;
  for (let i = 2; i < runs.length; i++) if ((runs[i]?.gapBefore ?? Infinity) < (runs[cheapest]?.gapBefore ?? Infinity)) cheapest = i;
  const [merged] = runs.splice(cheapest, 1);
  const before = runs[cheapest - 1];
  if (merged !== undefined && before !== undefined) before.end = merged.end;
}

/** Whether `namespace`'s hash is in one of `ranges`. */
export function rangesInclude(ranges: readonly HashRange[], namespace: string): boolean {
  const h = fnv1a64(namespace);
  return ranges.some((r) => r.start <= h && h < r.end);
}

/** Every hash but `namespace`'s, and `namespace`'s alone: the start-up probe's pair (shard-probe.ts). */
export function rangesAround(namespace: string): { readonly excluding: HashRange[]; readonly including: HashRange[] } {
  const h = fnv1a64(namespace);
  const excluding = [
    { start: 0n, end: h },
    { start: h + 1n, end: SPACE_END },
  ].filter((r) => r.start < r.end);
  return { excluding, including: [{ start: h, end: h + 1n }] };
}

/**
 * The selector of `ranges`. No ranges is written as the range of the single hash 0 (FNV-1a of a name
 * is 0 with probability 2^-64): the server refuses an empty selector, and no selector would mean
 * everything.
 */
export function shardSelectorOf(ranges: readonly HashRange[]): string {
  const written = ranges.length === 0 ? [{ start: 0n, end: 1n }] : ranges;
  for (const r of written) {
    if (r.start < 0n || r.end > SPACE_END || r.start >= r.end)
      throw new RangeError(`not a range of the hash space: [${r.start}, ${r.end})`);
  }
  return written.map((r) => `shardRange(${SHARD_FIELD}, '${hex(r.start)}', '${hex(r.end)}')`).join(' || ');
}

const hex = (n: bigint): string => `0x${n.toString(16).padStart(16, '0')}`;
