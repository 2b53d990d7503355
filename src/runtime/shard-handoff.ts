/**
 * The handoff of one namespace bucket between replicas, as a pure decision (docs/adr/0085): what a
 * replica does next with a bucket, from what it last read of the bucket's fence Lease and of its
 * peers' Leases. The coordinator (shard-coordinator.ts) performs the step and its Lease write.
 *
 * - `none` → `owned` only by writing the fence with this replica as holder, and only when the fence
 *   is free: absent, released (''), already ours, or held by a peer whose own Lease this replica
 *   has seen expire. The write carries the read resourceVersion, so of two takers one gets 409.
 * - `owned` → `draining` the moment rendezvous gives the bucket to another live peer: no new helm
 *   run starts for it, and in-flight reconciles are cancelled.
 * - `draining` → `none` by releasing the fence (holder ''), once nothing is in flight or the drain
 *   bound has passed; only then may the new owner take it.
 * - A fence that names someone else while this replica thinks it owns the bucket (written by hand,
 *   or after this replica was judged dead) is lost at once, with no write.
 */

export type BucketPhase = 'none' | 'owned' | 'draining';

export interface BucketFacts {
  readonly phase: BucketPhase;
  /** Whether rendezvous over the live peers gives this bucket to this replica. */
  readonly desired: boolean;
  /** This replica's identity. */
  readonly self: string;
  /** The fence Lease's holder as last read; undefined when it does not exist. */
  readonly fenceHolder: string | undefined;
  /** Whether the fence's holder is a live peer (its own Lease not seen expired); false for ''. */
  readonly holderLive: boolean;
  /** Reconciles of the bucket's namespaces still running. */
  readonly inFlight: number;
  /** When draining started (our clock), for the bound. */
  readonly drainingSince?: number;
  readonly now: number;
  readonly drainBoundMs: number;
}

export type BucketStep =
  /** Write the fence with this replica as holder; on success the bucket is owned. */
  | 'acquire'
  /** Stop starting helm for it and cancel what runs; release once drained. */
  | 'drain'
  /** Write the fence with holder '' (draining is over). */
  | 'release'
  /** Owned again after a drain was started (the peer that won it left): no write, the fence is still ours. */
  | 'keep'
  /** The fence names another holder: the bucket is no longer ours, with no write. */
  | 'lose'
  /** Nothing to do this round. */
  | 'stay';

export function bucketStep(f: BucketFacts): BucketStep {
  if (f.phase === 'none') return f.desired && fenceFree(f) ? 'acquire' : 'stay';
  if (heldByAnother(f)) return 'lose';
  if (f.phase === 'owned') return f.desired ? 'stay' : 'drain';
  if (f.desired) return 'keep';
  return drained(f) ? 'release' : 'stay';
}

const heldByAnother = (f: BucketFacts): boolean => f.fenceHolder !== undefined && f.fenceHolder !== '' && f.fenceHolder !== f.self;

/** Absent, released, ours, or held by a peer seen expired. */
const fenceFree = (f: BucketFacts): boolean =>
  f.fenceHolder === undefined || f.fenceHolder === '' || f.fenceHolder === f.self || !f.holderLive;

/** Nothing in flight any more, or the drain bound has passed. */
const drained = (f: BucketFacts): boolean =>
  f.inFlight === 0 || (f.drainingSince !== undefined && f.now - f.drainingSince >= f.drainBoundMs);

/** A fence holder is free to be replaced once its peer Lease is gone or seen unchanged for its whole duration. */
export function peerLive(observedAt: number, leaseDurationSeconds: number, holder: string, now: number): boolean {
  return holder !== '' && observedAt + leaseDurationSeconds * 1000 > now;
}
