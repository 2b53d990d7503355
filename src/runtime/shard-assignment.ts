/**
 * Which replica owns which namespaces when replicas share the work (docs/adr/0085): namespaces fall
 * into a fixed number of hash buckets, and each bucket goes to the live peer with the highest
 * rendezvous (highest-random-weight) score. Pure: the same peers give every replica the same answer,
 * and a peer joining or leaving moves only the buckets it wins or held (about 1/N of them).
 */

/** Buckets namespaces hash into: a power of two, so each is one contiguous range of the 64-bit hash. */
export const SHARD_BUCKETS = 64;

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

/**
 * 64-bit FNV-1a over the UTF-8 bytes of `text`: the hash KEP-5866's `shardRange(object.metadata.namespace, …)`
 * uses, so a bucket is a range a server-side sharded watch could ask for.
 */
export function fnv1a64(text: string): bigint {
  let h = FNV_OFFSET;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= BigInt(byte);
    h = (h * FNV_PRIME) & MASK64;
  }
  return h;
}

/** The bucket of `namespace`: the top bits of its hash (bucket b is the hash range [b, b+1) × 2^64 / buckets). */
export function namespaceBucket(namespace: string, buckets = SHARD_BUCKETS): number {
  assertBuckets(buckets);
  return Number((fnv1a64(namespace) * BigInt(buckets)) >> 64n);
}

/** The half-open 64-bit hash range of `bucket`, as KEP-5866's hex bounds (for a future server-side watch). */
export function bucketHashRange(bucket: number, buckets = SHARD_BUCKETS): { readonly start: string; readonly end: string } {
  assertBuckets(buckets);
  const width = (1n << 64n) / BigInt(buckets);
  const hex = (n: bigint): string => `0x${n.toString(16).padStart(16, '0')}`;
  return { start: hex(BigInt(bucket) * width), end: hex(BigInt(bucket + 1) * width) };
}

/** A peer's score for a bucket: a well-mixed 64-bit hash of both (FNV-1a's low bits alone mix poorly, hence the finaliser). */
export function rendezvousScore(peer: string, bucket: number): bigint {
  let h = fnv1a64(`${peer}\u0000${bucket}`);
  // splitmix64's finaliser: spreads FNV's last-byte bias over every bit.
  h = ((h ^ (h >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  h = ((h ^ (h >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return h ^ (h >> 31n);
}

/** The owner of `bucket` among `peers` (undefined when there are none); ties go to the smaller identity. */
export function rendezvousOwner(bucket: number, peers: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = -1n;
  for (const peer of peers) {
    const score = rendezvousScore(peer, bucket);
    if (score > bestScore || (score === bestScore && best !== undefined && peer < best)) {
      best = peer;
      bestScore = score;
    }
  }
  return best;
}

/** The buckets `self` should own among `peers` (self is counted whether listed or not). */
export function bucketsOf(self: string, peers: readonly string[], buckets = SHARD_BUCKETS): Set<number> {
  assertBuckets(buckets);
  const all = peers.includes(self) ? peers : [...peers, self];
  const mine = new Set<number>();
  for (let b = 0; b < buckets; b++) if (rendezvousOwner(b, all) === self) mine.add(b);
  return mine;
}

/** Every bucket's owner among `peers`, for the `shards` listing and tests. */
export function assignment(peers: readonly string[], buckets = SHARD_BUCKETS): Map<number, string> {
  assertBuckets(buckets);
  const owners = new Map<number, string>();
  for (let b = 0; b < buckets; b++) {
    const owner = rendezvousOwner(b, peers);
    if (owner !== undefined) owners.set(b, owner);
  }
  return owners;
}

function assertBuckets(buckets: number): void {
  if (!Number.isInteger(buckets) || buckets < 1 || buckets > 4096 || (buckets & (buckets - 1)) !== 0) {
    throw new RangeError(`shard buckets must be a power of two between 1 and 4096, got ${buckets}`);
  }
}
