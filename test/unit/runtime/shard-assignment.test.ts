import { describe, expect, it } from 'vitest';
import {
  assignment,
  bucketHashRange,
  bucketsOf,
  fnv1a64,
  namespaceBucket,
  rendezvousOwner,
  SHARD_BUCKETS,
} from '../../../src/runtime/shard-assignment.js';
import { bucketStep, peerLive, type BucketFacts } from '../../../src/runtime/shard-handoff.js';

describe('namespace buckets', () => {
  it('hashes with 64-bit FNV-1a (the published test vectors)', () => {
    expect(fnv1a64('')).toBe(0xcbf29ce484222325n);
    expect(fnv1a64('a')).toBe(0xaf63dc4c8601ec8cn);
    expect(fnv1a64('foobar')).toBe(0x85944171f73967e8n);
  });

  it('puts a namespace in the bucket whose hash range holds its hash', () => {
    for (const ns of ['default', 'kube-system', 'tenant-a', 'tenant-b', 'x']) {
      const b = namespaceBucket(ns);
      const { start, end } = bucketHashRange(b);
      const h = fnv1a64(ns);
      expect(h >= BigInt(start) && h < BigInt(end)).toBe(true);
    }
    expect(bucketHashRange(0).start).toBe('0x0000000000000000');
    expect(bucketHashRange(SHARD_BUCKETS - 1).end).toBe('0x10000000000000000');
  });

  it('rejects a bucket count that is not a power of two', () => {
    expect(() => namespaceBucket('a', 48)).toThrow(/power of two/);
  });
});

describe('rendezvous assignment', () => {
  const peers = ['pod-a_1', 'pod-b_2', 'pod-c_3'];

  it('gives every bucket to exactly one peer, the same whatever the order peers are listed in', () => {
    const one = assignment(peers);
    const other = assignment([...peers].reverse());
    expect(one.size).toBe(SHARD_BUCKETS);
    expect([...one]).toEqual([...other]);
    const mine = peers.map((p) => bucketsOf(p, peers));
    expect(mine.reduce((n, s) => n + s.size, 0)).toBe(SHARD_BUCKETS);
    // Spread: no peer gets nothing or nearly everything.
    for (const s of mine) expect(s.size).toBeGreaterThan(SHARD_BUCKETS / 6);
  });

  it('moves only the leaving peer’s buckets when a peer leaves, and only buckets to a joining one', () => {
    const before = assignment(peers);
    const after = assignment(['pod-a_1', 'pod-c_3']);
    for (const [b, owner] of before) if (owner !== 'pod-b_2') expect(after.get(b)).toBe(owner);
    const joined = assignment([...peers, 'pod-d_4']);
    for (const [b, owner] of joined) if (owner !== 'pod-d_4') expect(before.get(b)).toBe(owner);
  });

  it('has no owner without peers, and one peer owns everything', () => {
    expect(rendezvousOwner(3, [])).toBeUndefined();
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
