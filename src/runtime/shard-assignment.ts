/**
 * Which replica owns which namespaces when replicas share the work (docs/adr/0085): namespaces fall
 * into a fixed number of hash buckets, and each bucket goes to a live peer by rendezvous
 * (highest-random-weight) with bounded loads (docs/adr/0110), counted in the CRs each bucket holds
 * once the group has published them (docs/adr/0113). Pure: the same peers and weights give every
 * replica the same answer, and a peer joining or leaving moves the buckets it wins or held and a
 * few more (about 1.2/N of them).
 */

/** Buckets namespaces hash into: a power of two, so a bucket is the top bits of a 64-bit hash. */
export const SHARD_BUCKETS = 64;

/**
 * Names the bucket function below; every peer Lease carries it, and replicas that see a live peer
 * on another one own nothing until it is gone (a rolling upgrade across a change of the function
 * must never give one namespace two owners; docs/adr/0110).
 */
export const SHARD_HASH = 'fnv1a64-splitmix64';

/** The bucket function before docs/adr/0110 (top bits of FNV-1a alone), named for peers that carry no name. */
export const LEGACY_SHARD_HASH = 'fnv1a64';

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

/**
 * 64-bit FNV-1a over the UTF-8 bytes of `text`: the hash KEP-5866's `shardRange(object.metadata.namespace, …)`
 * compares (shard-selector.ts).
 */
export function fnv1a64(text: string): bigint {
  let h = FNV_OFFSET;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= BigInt(byte);
    h = (h * FNV_PRIME) & MASK64;
  }
  return h;
}

/**
 * splitmix64's finaliser: a bijection of 64-bit values in which every input bit moves every output
 * bit. FNV-1a alone does not: the last bytes of a name reach only its middle and low bits, so
 * `tenant-001` … `tenant-040` share their top six bits (docs/adr/0110).
 */
export function mix64(value: bigint): bigint {
  let h = value & MASK64;
  h = ((h ^ (h >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  h = ((h ^ (h >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return h ^ (h >> 31n);
}

/** The bucket of `namespace`: the top bits of its mixed hash, so names that differ only at the end spread evenly. */
export function namespaceBucket(namespace: string, buckets = SHARD_BUCKETS): number {
  const known = buckets === SHARD_BUCKETS ? bucketOf.get(namespace) : undefined;
  if (known !== undefined) return known;
  assertBuckets(buckets);
  const bucket = Number((mix64(fnv1a64(namespace)) * BigInt(buckets)) >> 64n);
  if (buckets === SHARD_BUCKETS) {
    if (bucketOf.size >= BUCKETS_REMEMBERED) bucketOf.clear();
    bucketOf.set(namespace, bucket);
  }
  return bucket;
}

/**
 * The default bucket of each namespace hashed so far: every watch event, cache read and reconcile
 * asks again, and the BigInt hash costs microseconds (a steady-state profile, ADR 0112). Bounded.
 */
const bucketOf = new Map<string, number>();
const BUCKETS_REMEMBERED = 65_536;

/** A peer's score for a bucket: a well-mixed 64-bit hash of both. */
export function rendezvousScore(peer: string, bucket: number): bigint {
  return mix64(fnv1a64(`${peer}\u0000${bucket}`));
}

/**
 * Every bucket's owner among `peers`: rendezvous with bounded loads. The (bucket, peer) pairs are
 * taken best score first, and a bucket goes to the best-scoring peer that still has room. Without
 * `weights` a peer's room is counted in buckets: each holds ⌊buckets / peers⌋, the first to fill up
 * one more, so all own the same number (±1). Plain rendezvous leaves the busiest of four peers
 * about 20 of 64 (a quarter more than its share); the bound moves about a fifth more buckets when a
 * peer joins or leaves (docs/adr/0110). With `weights` (what each bucket holds: the CRs the group
 * published, docs/adr/0113) room is counted in weight, so the shares hold the same work, not the
 * same number of buckets. Ties go to the smaller identity.
 */
export function assignment(peers: readonly string[], buckets = SHARD_BUCKETS, weights?: readonly number[]): Map<number, string> {
  assertBuckets(buckets);
  const members = [...new Set(peers)].sort();
  const weighed = weights !== undefined && weights.length === buckets && weights.some((w) => w > 0) ? weights : undefined;
  // Every replica asks again each retry period, nearly always for the same peers: 64 × N 64-bit
  // hashes and a sort were a tenth of an idle replica's CPU.
  const key = `${buckets}\u0000${weighed?.join(',') ?? ''}\u0000${members.join('\u0000')}`;
  if (lastAssignment?.key !== key)
    lastAssignment = { key, owners: weighed === undefined ? assign(members, buckets) : assignWeighed(members, weighed) };
  return new Map(lastAssignment.owners);
}

/** The last assignment made: a pure function of its key, so a copy of it is the answer. */
let lastAssignment: { readonly key: string; readonly owners: ReadonlyMap<number, string> } | undefined;

interface Pair {
  readonly score: bigint;
  readonly bucket: number;
  readonly peer: string;
}

/** Every (bucket, peer) pair, best score first; ties to the smaller identity. */
function rankedPairs(members: readonly string[], buckets: number): Pair[] {
  const pairs: Pair[] = [];
  for (let bucket = 0; bucket < buckets; bucket++) {
    for (const peer of members) pairs.push({ score: rendezvousScore(peer, bucket), bucket, peer });
  }
  return pairs.sort((a, b) => (a.score === b.score ? (a.peer < b.peer ? -1 : 1) : a.score > b.score ? -1 : 1));
}

function assign(members: readonly string[], buckets: number): Map<number, string> {
  const owners = new Map<number, string>();
  if (members.length === 0) return owners;
  // Each peer holds ⌊buckets / peers⌋, and the first `extra` to fill up one more.
  const floor = Math.floor(buckets / members.length);
  let extra = buckets % members.length;
  const load = new Map(members.map((p) => [p, 0]));
  for (const { bucket, peer } of rankedPairs(members, buckets)) {
    const held = load.get(peer) ?? 0;
    if (owners.has(bucket) || held > floor || (held === floor && extra === 0)) continue;
    if (held === floor) extra--;
    owners.set(bucket, peer);
    load.set(peer, held + 1);
  }
  return sortedByBucket(owners);
}

/**
 * Bounded loads counted in weight (docs/adr/0113). Best score first, a weighed bucket goes to the
 * best-scoring peer it fits under the cap (the total over the peers, rounded up); what fits nowhere
 * goes, heaviest first, to the lightest peer. An empty bucket goes to its best-scoring peer, as
 * plain rendezvous has it: it holds no work, and its owner does not change while weights do.
 */
function assignWeighed(members: readonly string[], weights: readonly number[]): Map<number, string> {
  const owners = new Map<number, string>();
  if (members.length === 0) return owners;
  const cap = Math.ceil(weights.reduce((sum, w) => sum + w, 0) / members.length);
  const load = new Map(members.map((p) => [p, 0]));
  const put = (bucket: number, peer: string): void => {
    owners.set(bucket, peer);
    load.set(peer, (load.get(peer) ?? 0) + (weights[bucket] ?? 0));
  };
  const best = new Map<number, string>();
  for (const { bucket, peer } of rankedPairs(members, weights.length)) {
    if (!best.has(bucket)) best.set(bucket, peer);
    const w = weights[bucket] ?? 0;
    if (owners.has(bucket) || w === 0 || (load.get(peer) ?? 0) + w > cap) continue;
    put(bucket, peer);
  }
  const left = weights.flatMap((w, bucket) => (w > 0 && !owners.has(bucket) ? [bucket] : []));
  for (const bucket of left.sort((a, b) => (weights[b] ?? 0) - (weights[a] ?? 0) || a - b)) {
    // The first of the lightest, in identity order: every replica picks the same one.
    const lightest = members.reduce((a, b) => ((load.get(b) ?? 0) < (load.get(a) ?? 0) ? b : a));
    put(bucket, lightest);
  }
  for (const [bucket, peer] of best) if (!owners.has(bucket)) owners.set(bucket, peer);
  return sortedByBucket(owners);
}

const sortedByBucket = (owners: Map<number, string>): Map<number, string> => new Map([...owners].sort(([a], [b]) => a - b));

/** The owner of `bucket` among `peers` (undefined when there are none). */
export function bucketOwner(
  bucket: number,
  peers: readonly string[],
  buckets = SHARD_BUCKETS,
  weights?: readonly number[],
): string | undefined {
  return assignment(peers, buckets, weights).get(bucket);
}

/** The buckets `self` should own among `peers` (self is counted whether listed or not). */
export function bucketsOf(self: string, peers: readonly string[], buckets = SHARD_BUCKETS, weights?: readonly number[]): Set<number> {
  const mine = new Set<number>();
  for (const [bucket, owner] of assignment([...peers, self], buckets, weights)) if (owner === self) mine.add(bucket);
  return mine;
}

function assertBuckets(buckets: number): void {
  if (!Number.isInteger(buckets) || buckets < 1 || buckets > 4096 || (buckets & (buckets - 1)) !== 0) {
    throw new RangeError(`shard buckets must be a power of two between 1 and 4096, got ${buckets}`);
  }
}
