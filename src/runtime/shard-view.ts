/**
 * Who owns what in a shard group, read from its Leases alone (docs/adr/0085, 0096): which Lease is a
 * peer and which a bucket's fence, which peers are live, and each bucket's holder against the owner
 * rendezvous wants. Pure: the coordinator decides by it every round, `helm-operator shards` prints it.
 */
import type { LeaseRecord } from './leader.js';
import { assignment, namespaceBucket, SHARD_BUCKETS, SHARD_HASH } from './shard-assignment.js';
import { shareLoads, weightsInUse } from './shard-balance.js';

/** A Lease of the group as listed: its name, its role label and its record. */
export interface GroupLease {
  readonly name: string;
  readonly role: 'peer' | 'fence' | 'balance';
  readonly record: LeaseRecord;
  /** The writer's bucket function (docs/adr/0110). */
  readonly hash?: string;
  /** The writer's balance rule (docs/adr/0113). */
  readonly balance?: string;
  /** The balance Lease's weights: CRs per bucket. */
  readonly weights?: readonly number[];
}

/** The bucket of a fence Lease's name (`<group>-shard-<b>`), undefined for any other name. */
export function fenceBucket(group: string, name: string): number | undefined {
  const prefix = `${group}-shard-`;
  if (!name.startsWith(prefix)) return undefined;
  const n = Number(name.slice(prefix.length));
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** The identities of the peers `live` accepts (a released peer Lease names nobody), `self` included when given. */
export function liveIdentities<L extends GroupLease>(leases: Iterable<L>, live: (peer: L) => boolean, self?: string): Set<string> {
  const ids = new Set<string>(self === undefined ? [] : [self]);
  for (const lease of leases)
    if (lease.role === 'peer' && lease.record.holderIdentity !== '' && live(lease)) ids.add(lease.record.holderIdentity);
  return ids;
}

/**
 * For a reader that looks once (the CLI), not a member that watches records change: a peer is live
 * while its last renewal plus its duration is ahead of `nowMs`. This trusts the clocks to agree;
 * the coordinator never does (it times a record from when it saw it change, leader.ts's rule).
 */
export const liveByRecord =
  (nowMs: number) =>
  (peer: GroupLease): boolean =>
    peer.record.holderIdentity !== '' && peer.record.renewTime + peer.record.leaseDurationSeconds * 1000 > nowMs;

export type PeerState = 'live' | 'expired' | 'released';

export interface PeerView {
  readonly identity: string;
  readonly lease: string;
  readonly state: PeerState;
  /** ISO time of its last renewal. */
  readonly renewed: string;
  /** Its bucket function: a live peer on another one than SHARD_HASH keeps the others idle (docs/adr/0110). */
  readonly hash: string;
  /** Buckets whose fence names it now. */
  readonly holds: readonly number[];
  /** Buckets rendezvous gives it among the live peers (what it holds once every handoff is done). */
  readonly wants: readonly number[];
  /** The CRs in what it wants, by the published weights; undefined while the group assigns by bucket count (docs/adr/0113). */
  readonly load?: number;
}

/**
 * A bucket whose fence is not held by the owner rendezvous wants: `draining` (a live peer still
 * holds it and is handing it off), `free` (released or never taken: the owner takes it next round),
 * `orphaned` (its holder's peer Lease expired: taken once the others have seen it so for a lease
 * duration).
 */
export interface HandoffView {
  readonly bucket: number;
  readonly state: 'draining' | 'free' | 'orphaned';
  /** '' when nobody holds it. */
  readonly holder: string;
  /** The fence's leaseTransitions: the ownership a revision names (ADR 0086). */
  readonly epoch: number;
  /** undefined with no live peer. */
  readonly to: string | undefined;
}

export interface NamespaceView {
  readonly namespace: string;
  readonly bucket: number;
  /** The fence's holder now; '' when nobody holds it. */
  readonly holder: string;
  readonly epoch: number;
  /** The owner rendezvous wants among the live peers. */
  readonly owner: string | undefined;
}

export interface ShardGroupView {
  readonly group: string;
  readonly buckets: number;
  /** What the shares are balanced by: the published CRs per bucket, or the bucket count. */
  readonly balancedBy: 'crs' | 'buckets';
  readonly peers: readonly PeerView[];
  readonly handoffs: readonly HandoffView[];
  readonly namespace?: NamespaceView;
}

/** The group as its Leases say, with `live` deciding which peers count (see {@link liveByRecord}). */
export function shardGroupView(o: {
  readonly group: string;
  readonly leases: readonly GroupLease[];
  readonly live: (peer: GroupLease) => boolean;
  readonly buckets?: number;
  /** Which bucket this namespace hashes to, and its owner. */
  readonly namespace?: string;
}): ShardGroupView {
  const buckets = o.buckets ?? SHARD_BUCKETS;
  const fences = new Map<number, LeaseRecord>();
  for (const l of o.leases) {
    const b = l.role === 'fence' ? fenceBucket(o.group, l.name) : undefined;
    if (b !== undefined && b < buckets) fences.set(b, l.record);
  }
  const live = liveIdentities(o.leases, o.live);
  const weights = weightsInUse(o.leases, live);
  const wanted = assignment([...live].sort(), buckets, weights);
  const loads = weights === undefined ? undefined : shareLoads(wanted, weights);
  const holder = (b: number): string => fences.get(b)?.holderIdentity ?? '';
  const epoch = (b: number): number => fences.get(b)?.leaseTransitions ?? 0;
  const all = Array.from({ length: buckets }, (_, b) => b);
  const peers = o.leases
    .filter((l) => l.role === 'peer')
    .map((l): PeerView => {
      const id = l.record.holderIdentity;
      const state: PeerState = id === '' ? 'released' : live.has(id) ? 'live' : 'expired';
      return {
        identity: id,
        lease: l.name,
        state,
        renewed: new Date(l.record.renewTime).toISOString(),
        hash: l.hash ?? SHARD_HASH,
        holds: id === '' ? [] : all.filter((b) => holder(b) === id),
        wants: id === '' ? [] : all.filter((b) => wanted.get(b) === id),
        ...(loads === undefined || id === '' || !live.has(id) ? {} : { load: loads.get(id) ?? 0 }),
      };
    })
    .sort((a, b) => stateOrder(a.state) - stateOrder(b.state) || a.identity.localeCompare(b.identity) || a.lease.localeCompare(b.lease));
  const handoffs = all
    .filter((b) => holder(b) !== (wanted.get(b) ?? ''))
    .map((b): HandoffView => {
      const h = holder(b);
      const state = h === '' ? 'free' : live.has(h) ? 'draining' : 'orphaned';
      return { bucket: b, state, holder: h, epoch: epoch(b), to: wanted.get(b) };
    });
  const ns =
    o.namespace === undefined
      ? undefined
      : ((b: number): NamespaceView => ({
          namespace: o.namespace ?? '',
          bucket: b,
          holder: holder(b),
          epoch: epoch(b),
          owner: wanted.get(b),
        }))(namespaceBucket(o.namespace, buckets));
  const balancedBy = weights === undefined ? 'buckets' : 'crs';
  return { group: o.group, buckets, balancedBy, peers, handoffs, ...(ns === undefined ? {} : { namespace: ns }) };
}

const stateOrder = (s: PeerState): number => (s === 'live' ? 0 : s === 'expired' ? 1 : 2);

/** `0-2,5,7-9`: a sorted list of buckets as ranges. */
export function bucketRanges(buckets: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < buckets.length;) {
    const start = buckets[i] ?? 0;
    let end = start;
    while (buckets[i + 1] === end + 1) {
      end++;
      i++;
    }
    out.push(start === end ? `${start}` : `${start}-${end}`);
    i++;
  }
  return out.join(',');
}
