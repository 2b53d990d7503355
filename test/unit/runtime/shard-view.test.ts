import { describe, expect, it } from 'vitest';
import type { LeaseRecord } from '../../../src/runtime/leader.js';
import { assignment, namespaceBucket } from '../../../src/runtime/shard-assignment.js';
import { SHARD_BALANCE } from '../../../src/runtime/shard-balance.js';
import {
  bucketRanges,
  fenceBucket,
  liveByRecord,
  liveIdentities,
  shardGroupView,
  type GroupLease,
} from '../../../src/runtime/shard-view.js';

const NOW = Date.parse('2026-12-02T08:00:00Z');
const record = (holder: string, o: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holderIdentity: holder,
  leaseDurationSeconds: 15,
  acquireTime: NOW - 60_000,
  renewTime: NOW - 2_000,
  leaseTransitions: 0,
  ...o,
});
const peer = (name: string, holder: string, o: Partial<LeaseRecord> = {}): GroupLease => ({
  name: `g-peer-${name}`,
  role: 'peer',
  record: record(holder, o),
});
const fence = (b: number, holder: string, epoch = 1): GroupLease => ({
  name: `g-shard-${b}`,
  role: 'fence',
  record: record(holder, { leaseTransitions: epoch }),
});

describe('shard-view: the group as its Leases say (docs/adr/0096)', () => {
  it('reads the bucket from a fence name only', () => {
    expect(fenceBucket('g', 'g-shard-7')).toBe(7);
    expect(fenceBucket('g', 'g-shard-x')).toBeUndefined();
    expect(fenceBucket('g', 'g-peer-abc')).toBeUndefined();
    expect(fenceBucket('g', 'other-shard-1')).toBeUndefined();
  });

  it('counts live peers by the rule it is given, never a released one, and self always', () => {
    const leases = [peer('a', 'a'), peer('b', 'b', { renewTime: NOW - 20_000 }), peer('c', ''), fence(0, 'x')];
    expect([...liveIdentities(leases, liveByRecord(NOW))]).toEqual(['a']);
    expect([...liveIdentities(leases, () => true, 'me')].sort()).toEqual(['a', 'b', 'me']);
  });

  it('wants what the published CRs per bucket give each replica, with the CRs of its share, once every live peer assigns by them (docs/adr/0113)', () => {
    const weights = [10, 0, 0, 0, 10, 10, 10, 1];
    const balance: GroupLease = { name: 'g-balance', role: 'balance', record: record('a'), weights };
    const marked = (l: GroupLease): GroupLease => ({ ...l, balance: SHARD_BALANCE });
    const wanted = assignment(['a', 'b'], 8, weights);
    const fences = Array.from({ length: 8 }, (_, b) => fence(b, wanted.get(b) ?? ''));
    const view = shardGroupView({
      group: 'g',
      leases: [marked(peer('a', 'a')), marked(peer('b', 'b')), balance, ...fences],
      live: liveByRecord(NOW),
      buckets: 8,
    });
    expect(view.balancedBy).toBe('crs');
    expect(view.handoffs).toEqual([]);
    expect(view.peers.map((p) => p.load)).toEqual(
      ['a', 'b'].map((id) => [...wanted].reduce((s, [b, o]) => s + (o === id ? (weights[b] ?? 0) : 0), 0)),
    );
    // b from a release before the rule: bucket count, which these fences are not, and no CRs column.
    const mixed = shardGroupView({
      group: 'g',
      leases: [marked(peer('a', 'a')), peer('b', 'b'), balance, ...fences],
      live: liveByRecord(NOW),
      buckets: 8,
    });
    expect(mixed.balancedBy).toBe('buckets');
    expect(mixed.peers.map((p) => p.load)).toEqual([undefined, undefined]);
    expect(mixed.handoffs.map((h) => h.bucket)).toEqual(
      [...assignment(['a', 'b'], 8)].filter(([b, o]) => wanted.get(b) !== o).map(([b]) => b),
    );
  });

  it('names each replica with what it holds and wants, the handoffs under way, and a namespace’s owner', () => {
    const wanted = assignment(['a', 'b'], 8);
    // Every bucket held by its owner, but for three: one draining from a (b wants it), one released, one held by the dead c.
    const draining = [...wanted].find(([, o]) => o === 'b')?.[0] ?? -1;
    const free = [...wanted].find(([b, o]) => o === 'a' && b !== draining)?.[0] ?? -1;
    const orphaned = [...wanted].find(([b]) => b !== draining && b !== free)?.[0] ?? -1;
    const fences = Array.from({ length: 8 }, (_, b) =>
      fence(b, b === draining ? 'a' : b === free ? '' : b === orphaned ? 'c' : (wanted.get(b) ?? ''), b === orphaned ? 4 : 1),
    );
    const leases = [peer('b', 'b'), peer('a', 'a'), peer('c', 'c', { renewTime: NOW - 16_000 }), peer('d', ''), ...fences];
    const ns = 'tenant-a';
    const view = shardGroupView({ group: 'g', leases, live: liveByRecord(NOW), buckets: 8, namespace: ns });

    expect(view.peers.map((p) => [p.identity, p.state])).toEqual([
      ['a', 'live'],
      ['b', 'live'],
      ['c', 'expired'],
      ['', 'released'],
    ]);
    const a = view.peers[0];
    expect(a?.wants).toEqual([...wanted].filter(([, o]) => o === 'a').map(([b]) => b));
    expect(a?.holds).toEqual(fences.filter((f) => f.record.holderIdentity === 'a').map((f) => fenceBucket('g', f.name)));
    expect(view.peers[2]?.holds).toEqual([orphaned]);
    expect(view.handoffs).toEqual(
      [
        { bucket: draining, state: 'draining', holder: 'a', epoch: 1, to: 'b' },
        { bucket: free, state: 'free', holder: '', epoch: 1, to: 'a' },
        { bucket: orphaned, state: 'orphaned', holder: 'c', epoch: 4, to: wanted.get(orphaned) },
      ].sort((x, y) => x.bucket - y.bucket),
    );
    const b = namespaceBucket(ns, 8);
    expect(view.namespace).toEqual({
      namespace: ns,
      bucket: b,
      holder: fences[b]?.record.holderIdentity,
      epoch: fences[b]?.record.leaseTransitions,
      owner: wanted.get(b),
    });
  });

  it('writes bucket lists as ranges', () => {
    expect(bucketRanges([])).toBe('');
    expect(bucketRanges([0, 1, 2, 5, 7, 8, 9, 63])).toBe('0-2,5,7-9,63');
  });
});
