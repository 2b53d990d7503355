import { describe, expect, it } from 'vitest';
import {
  assignment,
  bucketOwner,
  bucketsOf,
  fnv1a64,
  mix64,
  namespaceBucket,
  SHARD_BUCKETS,
} from '../../../src/runtime/shard-assignment.js';
import { bucketStep, peerLive, type BucketFacts } from '../../../src/runtime/shard-handoff.js';

describe('namespace buckets', () => {
  it('hashes with 64-bit FNV-1a (the published test vectors)', () => {
    expect(fnv1a64('')).toBe(0xcbf29ce484222325n);
    expect(fnv1a64('a')).toBe(0xaf63dc4c8601ec8cn);
    expect(fnv1a64('foobar')).toBe(0x85944171f73967e8n);
  });

  it('spreads names that differ only in their last characters (FNV-1a alone kept them in one or two buckets)', () => {
    const sequences = [
      Array.from({ length: 40 }, (_, i) => `team-${i}`),
      Array.from({ length: 40 }, (_, i) => `tenant-${String(i + 1).padStart(3, '0')}`),
      Array.from({ length: 40 }, (_, i) => `ns${String.fromCharCode(97 + (i % 26))}${Math.floor(i / 26)}`),
    ];
    for (const names of sequences) {
      const topBitsOfFnv = new Set(names.map((n) => Number(fnv1a64(n) >> 58n)));
      const buckets = new Set(names.map((n) => namespaceBucket(n)));
      // 40 names thrown into 64 buckets at random fill about 30 of them.
      expect(buckets.size, names[0]).toBeGreaterThanOrEqual(24);
      expect(buckets.size).toBeGreaterThan(2 * topBitsOfFnv.size);
      // And four replicas get about a quarter each: none has more than twice its share.
      const owners = assignment(['pod-a_1', 'pod-b_2', 'pod-c_3', 'pod-d_4']);
      const per = new Map<string, number>();
      for (const n of names) per.set(owners.get(namespaceBucket(n))!, (per.get(owners.get(namespaceBucket(n))!) ?? 0) + 1);
      expect(Math.max(...per.values()), names[0]).toBeLessThanOrEqual(20);
    }
  });

  it('mixes with a bijection, so distinct FNV-1a hashes keep distinct mixed ones', () => {
    const seen = new Set<bigint>();
    for (let i = 0n; i < 2000n; i++) seen.add(mix64(i));
    expect(seen.size).toBe(2000);
    expect(mix64(0n)).toBe(0n);
    expect(mix64(1n)).not.toBe(1n);
  });

  it('rejects a bucket count that is not a power of two', () => {
    expect(() => namespaceBucket('a', 48)).toThrow(/power of two/);
    namespaceBucket('a');
    expect(() => namespaceBucket('a', 48), 'after the default count remembered it').toThrow(/power of two/);
  });

  it('answers a namespace asked again the same, for the bucket count asked', () => {
    const hashed = (ns: string, buckets: number): number => Number((mix64(fnv1a64(ns)) * BigInt(buckets)) >> 64n);
    for (const ns of ['tenant-001', 'tenant-002', 'kube-system']) {
      expect([namespaceBucket(ns), namespaceBucket(ns)]).toEqual([hashed(ns, SHARD_BUCKETS), hashed(ns, SHARD_BUCKETS)]);
      expect(namespaceBucket(ns, 8)).toBe(hashed(ns, 8));
      expect(namespaceBucket(ns, 1024)).toBe(hashed(ns, 1024));
    }
  });
});

describe('rendezvous assignment', () => {
  const peers = ['pod-a_1', 'pod-b_2', 'pod-c_3'];

  it('gives every bucket to exactly one peer, the same whatever the order peers are listed in', () => {
    const one = assignment(peers);
    const other = assignment([...peers].reverse());
    expect(one.size).toBe(SHARD_BUCKETS);
    expect([...one].sort()).toEqual([...other].sort());
    const mine = peers.map((p) => bucketsOf(p, peers));
    expect(mine.reduce((n, s) => n + s.size, 0)).toBe(SHARD_BUCKETS);
  });

  it('gives every peer the same number of buckets, ±1 (bounded loads)', () => {
    for (let n = 1; n <= 7; n++) {
      const ids = Array.from({ length: n }, (_, i) => `helm-operator-7d9f8-${i}_${(i * 7919).toString(16)}`);
      const sizes = ids.map((id) => bucketsOf(id, ids).size);
      expect(Math.max(...sizes) - Math.min(...sizes), `${n} peers: ${sizes.join('/')}`).toBeLessThanOrEqual(1);
    }
  });

  it('moves few buckets when a peer leaves or joins: its own, and about a fifth more', () => {
    const moved = (a: Map<number, string>, b: Map<number, string>): number => [...a].filter(([k, v]) => b.get(k) !== v).length;
    let leaves = 0;
    let joins = 0;
    const rounds = 40;
    for (let r = 0; r < rounds; r++) {
      const ids = Array.from({ length: 4 }, (_, i) => `replica-${r}-${i}`);
      const before = assignment(ids);
      leaves += moved(before, assignment(ids.slice(1)));
      joins += moved(before, assignment([...ids, `replica-${r}-new`]));
    }
    // Ideal: 16 of 64 when one of four leaves, 12.8 when a fifth joins; plain rendezvous is that.
    expect(leaves / rounds).toBeLessThan(16 * 1.4);
    expect(joins / rounds).toBeLessThan(12.8 * 1.4);
    // A peer that leaves loses all of its buckets, and a newcomer takes only its share.
    const after = assignment(['pod-a_1', 'pod-c_3']);
    expect([...after.values()]).not.toContain('pod-b_2');
    expect(bucketsOf('pod-d_4', [...peers, 'pod-d_4']).size).toBe(SHARD_BUCKETS / 4);
  });

  it('has no owner without peers, and one peer owns everything', () => {
    expect(bucketOwner(3, [])).toBeUndefined();
    expect(bucketOwner(3, ['solo'])).toBe('solo');
    expect(bucketsOf('solo', []).size).toBe(SHARD_BUCKETS);
  });
});

describe('bucket handoff steps', () => {
  const base: BucketFacts = {
    phase: 'none',
    desired: true,
    self: 'me',
    fenceHolder: undefined,
    holderLive: false,
    inFlight: 0,
    now: 100_000,
    drainBoundMs: 10_000,
  };

  it('takes a wanted bucket only when its fence is free', () => {
    expect(bucketStep(base)).toBe('acquire');
    expect(bucketStep({ ...base, fenceHolder: '' })).toBe('acquire');
    expect(bucketStep({ ...base, fenceHolder: 'me' })).toBe('acquire');
    expect(bucketStep({ ...base, fenceHolder: 'old', holderLive: true })).toBe('stay');
    expect(bucketStep({ ...base, fenceHolder: 'old', holderLive: false })).toBe('acquire');
    expect(bucketStep({ ...base, desired: false })).toBe('stay');
  });

  it('drains a bucket it no longer wants, and releases it once drained or past the bound', () => {
    expect(bucketStep({ ...base, phase: 'owned', fenceHolder: 'me' })).toBe('stay');
    expect(bucketStep({ ...base, phase: 'owned', desired: false, fenceHolder: 'me' })).toBe('drain');
    const draining: BucketFacts = { ...base, phase: 'draining', desired: false, fenceHolder: 'me', inFlight: 2, drainingSince: 95_000 };
    expect(bucketStep(draining)).toBe('stay');
    expect(bucketStep({ ...draining, inFlight: 0 })).toBe('release');
    expect(bucketStep({ ...draining, now: 105_000 })).toBe('release');
    expect(bucketStep({ ...draining, desired: true })).toBe('keep');
  });

  it('loses a bucket at once when its fence names another holder', () => {
    expect(bucketStep({ ...base, phase: 'owned', fenceHolder: 'thief', holderLive: true })).toBe('lose');
    expect(bucketStep({ ...base, phase: 'draining', desired: false, fenceHolder: 'thief', inFlight: 1, drainingSince: 99_000 })).toBe(
      'lose',
    );
  });

  it('counts a peer live until its record stays unchanged for the lease duration', () => {
    expect(peerLive(0, 15, 'p', 14_999)).toBe(true);
    expect(peerLive(0, 15, 'p', 15_000)).toBe(false);
    expect(peerLive(0, 15, '', 1)).toBe(false);
  });
});

describe('assignment, asked again', () => {
  it('answers the same for the same peers in any order, after other peers were asked, and a caller cannot change it', () => {
    const first = assignment(['a', 'b', 'c']);
    const copy = new Map(first);
    first.clear();
    expect(assignment(['c', 'a', 'b'])).toEqual(copy);
    expect(assignment(['a', 'b'])).not.toEqual(copy);
    expect(assignment(['b', 'c', 'a', 'a'])).toEqual(copy);
    expect(assignment(['a', 'b', 'c'], 8).size).toBe(8);
  });
});
