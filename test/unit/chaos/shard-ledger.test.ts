/** The sharding chaos scenario's proof (test/chaos/support/shard-ledger.ts) on hand-made timelines: it must catch what it claims to. */
import { describe, expect, it } from 'vitest';
import type { LeaseRecord } from '../../../src/runtime/leader.js';
import { identityDigest } from '../../../src/runtime/shard-coordinator.js';
import {
  epochs,
  historyProblems,
  ownerless,
  shareProblems,
  type LeaseSample,
  type StoredRevision,
} from '../../chaos/support/shard-ledger.js';

const G = 'g';
const rec = (holder: string, epoch: number, acquire: number, renew = acquire): LeaseRecord => ({
  holderIdentity: holder,
  leaseDurationSeconds: 10,
  acquireTime: acquire,
  renewTime: renew,
  leaseTransitions: epoch,
});
const fence = (at: number, r: LeaseRecord, bucket = 3): LeaseSample => ({ at, name: `${G}-shard-${bucket}`, role: 'fence', record: r });
const peer = (at: number, holder: string): LeaseSample => ({
  at,
  name: `${G}-peer-${holder}`,
  role: 'peer',
  record: rec(holder, 0, 0, at),
});

/** a takes bucket 3 at 1000 and releases it at 5000; b takes it at 5200, renews until 8000 and freezes; c takes it at 19000. */
const timeline: LeaseSample[] = [
  peer(900, 'a'),
  fence(1000, rec('a', 1, 1000)),
  peer(2000, 'a'),
  peer(4900, 'b'),
  fence(5000, rec('', 1, 1000, 5000)),
  fence(5200, rec('b', 2, 5200)),
  ...[6000, 7000, 8000].map((t) => peer(t, 'b')),
  peer(18500, 'c'),
  fence(19000, rec('c', 3, 19000)),
  peer(19500, 'c'),
];

const revision = (o: Partial<StoredRevision>): StoredRevision => ({
  namespace: 'ns',
  release: 'r',
  revision: 1,
  status: 'deployed',
  description: 'Install complete',
  deployedAt: 2000,
  rev: 'v1',
  shard: `b3-e1-${identityDigest('a')}`,
  ...o,
});

describe('shard ledger', () => {
  it('reads epochs from the fence records: a release ends one, a take starts the next', () => {
    expect(epochs(G, timeline).get(3)).toEqual([
      { bucket: 3, epoch: 1, holder: 'a', from: 1000, to: 5000, released: true },
      { bucket: 3, epoch: 2, holder: 'b', from: 5200, to: 19000, released: false },
      { bucket: 3, epoch: 3, holder: 'c', from: 19000, to: undefined, released: false },
    ]);
  });

  it('measures ownerless time from a release, or from the last renewal of an owner that stopped, to the next take', () => {
    const gaps = ownerless(G, timeline, 20000);
    expect(gaps.map((g) => [g.from, g.to, g.ms, g.why])).toEqual([
      ['a', 'b', 200, 'released'],
      ['b', 'c', 11000, 'owner stopped renewing'],
      ['c', undefined, 500, 'owner stopped renewing'],
    ]);
  });

  it('accepts a revision made by the holder within its epoch, and names every other', () => {
    const by = epochs(G, timeline);
    const problems = (r: StoredRevision): string[] => shareProblems(r, () => 3, by);
    expect(problems(revision({}))).toEqual([]);
    expect(problems(revision({ deployedAt: 5100 }))[0]).toContain('outside epoch 1');
    expect(problems(revision({ shard: `b3-e1-${identityDigest('b')}` }))[0]).toContain("was a's");
    expect(problems(revision({ shard: `b3-e9-${identityDigest('a')}` }))[0]).toContain('never had epoch 9');
    expect(problems(revision({ shard: undefined }))[0]).toContain('no shard label');
    expect(problems(revision({ shard: 'unowned' }))[0]).toContain('names no ownership');
    // helm copies a rollback's labels from the revision it goes back to: only the label is checked.
    expect(problems(revision({ deployedAt: 9999, description: 'Rollback to 1' }))).toEqual([]);
  });

  it('flags a value applied twice, one never desired, and a latest revision off the desired state', () => {
    const ok = [revision({ revision: 1, status: 'superseded' }), revision({ revision: 2, rev: 'v2' })];
    expect(historyProblems('ns/r', ok, ['v1', 'v2'])).toEqual([]);
    // A pending upgrade a rollback unlocked (superseded, never completed) and its retry: applied once.
    const retried = [
      revision({ revision: 1, status: 'superseded' }),
      revision({ revision: 2, status: 'superseded', description: 'Preparing upgrade', rev: 'v2' }),
      revision({ revision: 3, status: 'superseded', description: 'Rollback to 1' }),
      revision({ revision: 4, rev: 'v2', description: 'Upgrade complete' }),
    ];
    expect(historyProblems('ns/r', retried, ['v1', 'v2'])).toEqual([]);
    const twice = [revision({ revision: 1, status: 'superseded' }), revision({ revision: 2, description: 'Upgrade complete' })];
    expect(historyProblems('ns/r', twice, ['v1'])).toEqual(['ns/r: value v1 applied 2 times (revisions 1, 2)']);
    expect(historyProblems('ns/r', [revision({ rev: 'v7' })], ['v1'])).toEqual([
      'ns/r: value v7 applied but never desired',
      'ns/r: deployed value v7, desired v1',
    ]);
    expect(historyProblems('ns/r', [revision({ status: 'pending-upgrade' })], ['v1'])).toEqual([
      'ns/r: latest revision 1 is pending-upgrade',
    ]);
  });
});
