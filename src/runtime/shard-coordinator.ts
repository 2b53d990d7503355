/**
 * Active-active sharding (docs/adr/0085): every replica holds a peer Lease, sees the live peers, and
 * owns the namespace buckets rendezvous hashing gives it, each behind a fence Lease
 * (shard-handoff.ts decides the handoff; shard-assignment.ts the owners).
 *
 * Costs: one LIST of the group's Leases and one peer-Lease write per replica per retry period;
 * fence Leases are written only when a bucket changes hands (never renewed: a fence is valid while
 * its holder's peer Lease is). Lease writes per second in a steady state are replicas / retry period,
 * whatever the number of namespaces or buckets, and at most one write of the balance Lease per
 * rebalance period, when the CRs per bucket have changed enough to move buckets (shard-balance.ts).
 *
 * Safety is the leader election's (leader.ts, docs/adr/0065): another replica takes a fence only
 * after seeing the holder's peer Lease unchanged for a whole lease duration on its own clock; the
 * holder stops acting on it a renew deadline (shorter) after its last successful renewal was sent,
 * by its own clock, checked before every helm run ({@link ShardCoordinator.checkOwns}). Losing the
 * peer Lease is final, as leadership is: the process exits and starts over with a new identity.
 *
 * Time comes from a {@link Clock} and the Leases from a {@link ShardLeaseStore}, so it is unit-tested
 * on a ManualClock with an in-memory store; the Kubernetes store is shard-lease-store.ts.
 */
import { createHash } from 'node:crypto';
import type { Logger } from '../telemetry/logger.js';
import { systemClock, TIMED_OUT, withDeadline, type Clock, type Timer } from '../util/clock.js';
import { LeaseConflictError, LeaderElectionLostError, sameRecord, type LeaseRecord, type VersionedLease } from './leader.js';
import { LeadershipLostCancellation } from './reconcile.js';
import { bucketsOf, namespaceBucket, SHARD_BUCKETS, SHARD_HASH } from './shard-assignment.js';
import {
  balanceLeaseName,
  balancer,
  bucketLoads,
  DEFAULT_REBALANCE_PERIOD_MS,
  SHARD_BALANCE,
  weightsInUse,
  worthPublishing,
} from './shard-balance.js';
import { bucketStep, peerLive, type BucketFacts, type BucketPhase } from './shard-handoff.js';
import { liveIdentities } from './shard-view.js';

/** A replica's membership, a bucket's fence, or the group's published weights (docs/adr/0113). */
export type ShardLeaseRole = 'peer' | 'fence' | 'balance';

export interface ShardLease extends VersionedLease {
  readonly name: string;
  readonly role: ShardLeaseRole;
  /** The bucket function its writer runs: SHARD_HASH, or another across an upgrade (docs/adr/0110). */
  readonly hash: string;
  /** Its writer's balance rule (SHARD_BALANCE); undefined from a release before docs/adr/0113. */
  readonly balance?: string;
  /** The balance Lease's weights: CRs per bucket. */
  readonly weights?: readonly number[];
}

/** What a replica writes of a Lease of the group. */
export interface ShardLeaseWrite {
  readonly role: ShardLeaseRole;
  readonly record: LeaseRecord;
  /** The balance Lease's: CRs per bucket (docs/adr/0113). */
  readonly weights?: readonly number[];
}

/** The group's Leases (the Kubernetes one is shard-lease-store.ts). */
export interface ShardLeaseStore {
  readonly description: string;
  /** Every Lease of the group, peers and fences. */
  list(): Promise<ShardLease[]>;
  /** @throws {LeaseConflictError} when it already exists. */
  create(name: string, lease: ShardLeaseWrite): Promise<VersionedLease>;
  /** @throws {LeaseConflictError} when `resourceVersion` is stale. */
  update(name: string, lease: ShardLeaseWrite, resourceVersion: string): Promise<VersionedLease>;
}

/** A short, label-safe digest of an identity (identities are hostname_uuid, longer than a label value may be). */
export function identityDigest(identity: string): string {
  return createHash('sha256').update(identity).digest('hex').slice(0, 12);
}

export const peerLeaseName = (group: string, identity: string): string => `${group}-peer-${identityDigest(identity)}`;
export const fenceLeaseName = (group: string, bucket: number): string => `${group}-shard-${bucket}`;

export { fenceBucket } from './shard-view.js';

export interface ShardCoordinatorOptions {
  readonly store: ShardLeaseStore;
  readonly identity: string;
  /** The Leases' name prefix (`--leader-election-id`). */
  readonly group: string;
  readonly buckets?: number;
  /** Default 15 s, renew deadline 10 s, retry 2 s: leader election's. */
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  /** How long a bucket being handed off waits for its in-flight reconciles before releasing anyway; default the renew deadline. */
  readonly drainBoundMs?: number;
  readonly clock?: Clock;
  /** In [0, 1), for the round jitter. */
  readonly random?: () => number;
  readonly log: Logger;
  /**
   * The buckets owned now (draining ones excluded), after every change and every round: the
   * metrics, and the share the informers watch (docs/adr/0103). Each handoff this replica took part in.
   */
  readonly onShares?: (owned: readonly number[]) => void;
  readonly onHandoff?: (kind: 'acquired' | 'released' | 'lost') => void;
  /**
   * The CRs in each namespace, every watched kind summed; undefined until the caches have synced.
   * The balancer publishes them by bucket (docs/adr/0113); without it this replica never does.
   */
  readonly load?: () => ReadonlyMap<string, number> | undefined;
  /** How often the balancer may measure and publish the weights; default 30 s. */
  readonly rebalancePeriodMs?: number;
  /** Each time this replica published new weights. */
  readonly onRebalance?: () => void;
}

interface Observed {
  readonly lease: ShardLease;
  /** When this record was first seen (our clock): expiry is measured from here, as in leader.ts. */
  readonly at: number;
}

interface Bucket {
  phase: BucketPhase;
  drainingSince?: number;
  /** Aborted when the bucket stops being ours; a new one per ownership. */
  control: AbortController;
  inFlight: number;
  /** The fence's leaseTransitions when we took it: with the bucket, names this ownership. */
  epoch: number;
  /** A step (a fence write) of an earlier round still runs. */
  busy: boolean;
}

type State = 'idle' | 'running' | 'lost' | 'released';

/** What one round read: whether rendezvous wants the bucket here, when, and the live peers. */
interface Round {
  readonly desired: boolean;
  readonly now: number;
  readonly live: ReadonlySet<string>;
}

export class ShardLostError extends LeaderElectionLostError {}

/**
 * Why a bucket's reconciles are aborted: it left this replica (handed off, taken, released, or the
 * membership lost). Another replica may already reconcile there, so, as with lost leadership, what
 * was started is neither undone nor reported: the new owner decides and writes the status
 * (docs/adr/0114).
 */
export class ShareLostCancellation extends LeadershipLostCancellation {
  override readonly name: string = 'ShareLostCancellation';
}

export class ShardCoordinator {
  readonly identity: string;
  readonly group: string;
  readonly buckets: number;
  /** Resolves once the peer Lease, after being held, is lost. */
  readonly lost: Promise<Error>;
  readonly #o: ShardCoordinatorOptions;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #leaseMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryMs: number;
  readonly #drainBoundMs: number;
  readonly #rebalanceMs: number;
  readonly #peerName: string;
  readonly #balanceName: string;
  /** When the balancer last measured the load (our clock); undefined: not yet. */
  #measuredAt: number | undefined;
  readonly #observed = new Map<string, Observed>();
  readonly #buckets: Bucket[];
  readonly #lostListeners: (() => void)[] = [];
  readonly #grantListeners: ((bucket: number) => void)[] = [];
  #resolveLost!: (err: Error) => void;
  #state: State = 'idle';
  #renewedAt = 0;
  #acquiredPeer = false;
  /** Successful writes of our own peer Lease: a LIST sent before the last one may show it older. */
  #peerWrites = 0;
  /** Live peers last seen on another bucket function, for the log when that changes. */
  #strangers = '';
  #timer: Timer | undefined;
  #deadline: Timer | undefined;
  #round: Promise<void> | undefined;
  /** The bucket steps the last round started. */
  #steps: Promise<void> | undefined;

  constructor(options: ShardCoordinatorOptions) {
    this.#o = options;
    this.identity = options.identity;
    this.group = options.group;
    this.buckets = options.buckets ?? SHARD_BUCKETS;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    const t = timings(options);
    this.#leaseMs = t.leaseMs;
    this.#renewDeadlineMs = t.renewDeadlineMs;
    this.#retryMs = t.retryMs;
    this.#drainBoundMs = options.drainBoundMs ?? t.renewDeadlineMs;
    this.#rebalanceMs = options.rebalancePeriodMs ?? DEFAULT_REBALANCE_PERIOD_MS;
    this.#peerName = peerLeaseName(this.group, this.identity);
    this.#balanceName = balanceLeaseName(this.group);
    this.#buckets = Array.from({ length: this.buckets }, () => ({
      phase: 'none',
      control: abortedController(),
      inFlight: 0,
      epoch: 0,
      busy: false,
    }));
    this.lost = new Promise((resolve) => (this.#resolveLost = resolve));
  }

  // --- The manager's view (runtime/manager.ts `Elector`): the peer Lease is this replica's membership.

  /** Whether the peer Lease is ours by our clock, with no side effect. */
  holdsLease(): boolean {
    return this.#state === 'running' && this.#acquiredPeer && this.#clock.now() - this.#renewedAt < this.#renewDeadlineMs;
  }

  /** {@link holdsLease}, declaring the loss (final) when the clock says the renew deadline passed. */
  isLeader(): boolean {
    if (this.#state !== 'running' || !this.#acquiredPeer) return false;
    if (this.holdsLease()) return true;
    this.#lose(
      `no renewal of the peer lease ${this.#peerName} for the renew deadline of ${this.#renewDeadlineMs} ms (was the process paused?)`,
    );
    return false;
  }

  onLost(listener: () => void): void {
    this.#lostListeners.push(listener);
  }

  /** Called with a bucket the moment it becomes ours: its namespaces' CRs are queued again. */
  onGrant(listener: (bucket: number) => void): void {
    this.#grantListeners.push(listener);
  }

  /** Starts the rounds; true once the peer Lease is written, false if `signal` aborts first. Call once. */
  acquire(signal?: AbortSignal): Promise<boolean> {
    if (this.#state !== 'idle') throw new Error('ShardCoordinator.acquire() may be called once');
    this.#state = 'running';
    this.#o.log.info(
      { group: this.group, identity: this.identity, buckets: this.buckets, lease: this.#peerName },
      'joining the shard group',
    );
    return new Promise<boolean>((resolve) => {
      const onAbort = (): void => {
        this.#stopTimers();
        resolve(false);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const loop = async (): Promise<void> => {
        if (this.#state !== 'running' || signal?.aborted === true) return;
        this.#round = this.tick();
        await this.#round;
        if (this.#acquiredPeer) {
          signal?.removeEventListener('abort', onAbort);
          resolve(true);
        }
        if (!this.#running()) return;
        this.#timer = this.#clock.setTimeout(() => void loop(), this.#retryMs * (1 + 0.2 * this.#random()));
      };
      if (signal?.aborted === true) onAbort();
      else void loop();
    });
  }

  /** Stops the rounds, releases every fence it holds, then its peer Lease. Bounded by the renew deadline each. */
  async release(): Promise<void> {
    const was = this.#state;
    this.#stopTimers();
    if (was !== 'running') return;
    this.#state = 'released';
    await this.#round?.catch(() => undefined);
    await this.#steps?.catch(() => undefined);
    for (let b = 0; b < this.buckets; b++) {
      const bucket = this.#bucket(b);
      // A take that finished after shutdown began wrote the fence but never owned the bucket.
      if (bucket.phase === 'none' && this.#observed.get(fenceLeaseName(this.group, b))?.lease.record.holderIdentity !== this.identity)
        continue;
      bucket.control.abort(new ShareLostCancellation(`bucket ${b} released on shutdown`));
      await this.#bounded(`release bucket ${b}`, () => this.#releaseFence(b));
    }
    this.#o.onShares?.([]);
    const peer = this.#observed.get(this.#peerName)?.lease;
    if (peer !== undefined && this.#acquiredPeer) {
      const now = this.#clock.now();
      const record: LeaseRecord = { ...peer.record, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now };
      await this.#bounded('release the peer lease', () =>
        this.#o.store.update(this.#peerName, { role: 'peer', record }, peer.resourceVersion),
      );
    }
    this.#o.log.info({ group: this.group, identity: this.identity }, 'left the shard group');
  }

  // --- The fence, per namespace (the helm runner's and the controller's view).

  bucketOf(namespace: string): number {
    return namespaceBucket(namespace, this.buckets);
  }

  /** Whether `namespace`'s bucket is owned (taken, not draining) while this replica runs in the group. No side effect. */
  assigned(namespace: string): boolean {
    return this.#state === 'running' && this.#bucket(this.bucketOf(namespace)).phase === 'owned';
  }

  /** Whether this replica owns `namespace` now: {@link assigned}, and the peer Lease holds by the clock. No side effect. */
  owns(namespace: string): boolean {
    return this.assigned(namespace) && this.holdsLease();
  }

  /** {@link owns}, declaring the peer Lease lost when the clock says so (asked before helm runs). */
  checkOwns(namespace: string): boolean {
    return this.isLeader() && this.#bucket(this.bucketOf(namespace)).phase === 'owned';
  }

  /** Aborted when `namespace`'s bucket stops being ours (handed off, lost, shut down). */
  signal(namespace: string): AbortSignal {
    return this.#bucket(this.bucketOf(namespace)).control.signal;
  }

  /** Counts a reconcile of `namespace` in flight until the returned function is called: a handoff waits for it. */
  enter(namespace: string): () => void {
    const bucket = this.#bucket(this.bucketOf(namespace));
    bucket.inFlight++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      bucket.inFlight--;
    };
  }

  /** Names the ownership `namespace` is reconciled under (bucket, fence epoch, holder): recorded on every release revision. */
  ownership(namespace: string): { readonly bucket: number; readonly epoch: number; readonly holder: string } | undefined {
    const b = this.bucketOf(namespace);
    const bucket = this.#bucket(b);
    return bucket.phase === 'owned' ? { bucket: b, epoch: bucket.epoch, holder: identityDigest(this.identity) } : undefined;
  }

  /** Buckets owned now (not draining). */
  ownedBuckets(): number[] {
    return this.#buckets.flatMap((b, i) => (b.phase === 'owned' ? [i] : []));
  }

  /** One round: read the group, renew the peer Lease, take one handoff step per bucket. Exposed for tests. */
  async tick(): Promise<void> {
    if (this.#state !== 'running') return;
    const now = this.#clock.now();
    // Once a member, the renewal is sent with the LIST, not after it. A renewal counts from when it
    // was sent and lands a call's latency L later, so the renewal held ages to L + retry + L
    // before the next lands: 2L + retry must stay under the renew deadline, where after the LIST
    // it was 4L + retry (L ≥ 2 s at load 30-40 here missed the 10 s deadline; docs/adr/0102).
    const writesBefore = this.#peerWrites;
    const renewing = this.#acquiredPeer ? this.#renewPeer(now) : undefined;
    const listed = await this.#bounded('list the shard leases', () => this.#o.store.list());
    if (listed === undefined || !this.#running()) {
      await renewing;
      return;
    }
    this.#observe(listed, now, writesBefore !== this.#peerWrites);
    if (!(await (renewing ?? this.#renewPeer(this.#clock.now())))) return;
    if (!this.isLeader()) return;
    const live = this.#livePeers(now);
    const strangers = this.#otherFunctions(live);
    const weights = weightsInUse(this.#leases(), live);
    const desired = strangers.length === 0 ? bucketsOf(this.identity, [...live], this.buckets, weights) : new Set<number>();
    // Every bucket at once, and not awaited by the round: a first replica takes 64 fences, and
    // fence writes on a busy API server must never delay the next renewal of the peer Lease. A
    // bucket whose step still runs is skipped by the next round.
    this.#steps = Promise.all([
      ...Array.from({ length: this.buckets }, (_, b) => this.#step(b, { desired: desired.has(b), now, live })),
      this.#releaseExpiredPeers(live, now),
      ...(strangers.length === 0 ? [this.#rebalance(live, weights, now)] : []),
    ]).then(() => {
      this.#o.onShares?.(this.ownedBuckets());
    });
  }

  /**
   * Writes released (holder '', as a graceful shutdown does) every peer Lease this replica has seen
   * unchanged for its whole duration. Expiry is judged from when an observer first saw a record, so
   * a replica that joined after a peer died would count it live for a lease duration from its own
   * start, and the buckets rendezvous gives the newcomer in the dead peer's place would stay
   * unowned that long (the sharding chaos test saw 19 s at a 10 s lease). A released record is
   * gone for every reader at once. Safe for the same reason taking its fences is: the peer stopped
   * acting on them a renew deadline after its last renewal, by its own clock; and the write carries
   * the read resourceVersion, so a renewal that lands first wins.
   */
  async #releaseExpiredPeers(live: ReadonlySet<string>, now: number): Promise<void> {
    const expired = [...this.#observed.values()]
      .map(({ lease }) => lease)
      .filter(
        (l) => l.role === 'peer' && l.name !== this.#peerName && l.record.holderIdentity !== '' && !live.has(l.record.holderIdentity),
      );
    await Promise.all(
      expired.map(async (lease) => {
        const record: LeaseRecord = { ...lease.record, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now };
        const written = await this.#bounded(`release the expired peer lease ${lease.name}`, () =>
          this.#o.store.update(lease.name, { role: 'peer', record }, lease.resourceVersion),
        );
        if (written === undefined) return;
        this.#remember(lease.name, { role: 'peer' }, written, now);
        this.#o.log.info({ group: this.group, lease: lease.name, holder: lease.record.holderIdentity }, 'released an expired peer lease');
      }),
    );
  }

  /**
   * The balancer (the smallest live identity) measures the CRs per bucket at most once per
   * rebalance period and publishes them when they would lighten the busiest share enough
   * (shard-balance.ts). Every replica, this one included, assigns by them from its next round.
   */
  async #rebalance(live: ReadonlySet<string>, inUse: readonly number[] | undefined, now: number): Promise<void> {
    const measured = this.#measure(live, now);
    if (measured === undefined || !worthPublishing({ peers: [...live], buckets: this.buckets, inUse, measured })) return;
    const lease = this.#observed.get(this.#balanceName)?.lease;
    const record: LeaseRecord = {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.#leaseMs / 1000,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: (lease?.record.leaseTransitions ?? 0) + 1,
    };
    const written = await this.#bounded('publish the shard weights', () =>
      lease === undefined
        ? this.#o.store.create(this.#balanceName, { role: 'balance', record, weights: measured })
        : this.#o.store.update(this.#balanceName, { role: 'balance', record, weights: measured }, lease.resourceVersion),
    );
    if (written === undefined) return;
    this.#remember(this.#balanceName, { role: 'balance', weights: measured }, written, now);
    this.#o.log.info(
      { group: this.group, crs: measured.reduce((sum, w) => sum + w, 0), peers: live.size },
      'published the CRs per shard bucket: the shares are balanced by them from the next round',
    );
    this.#o.onRebalance?.();
  }

  /** The CRs per bucket, when this replica is the balancer, the period has passed since it last measured and since the weights last changed, and its caches have synced. */
  #measure(live: ReadonlySet<string>, now: number): number[] | undefined {
    if (this.#o.load === undefined || balancer(live) !== this.identity) return undefined;
    const since = (at: number | undefined): boolean => at === undefined || now - at >= this.#rebalanceMs;
    if (!since(this.#measuredAt) || !since(this.#observed.get(this.#balanceName)?.at)) return undefined;
    const byNamespace = this.#o.load();
    if (byNamespace === undefined) return undefined;
    this.#measuredAt = now;
    return bucketLoads(byNamespace, (ns) => this.bucketOf(ns), this.buckets);
  }

  #leases(): ShardLease[] {
    return [...this.#observed.values()].map(({ lease }) => lease);
  }

  async #step(b: number, round: Round): Promise<void> {
    const bucket = this.#bucket(b);
    if (!this.#running() || bucket.busy) return;
    bucket.busy = true;
    try {
      await this.#stepOnce(b, bucket, round);
    } finally {
      bucket.busy = false;
    }
  }

  async #stepOnce(b: number, bucket: Bucket, round: Round): Promise<void> {
    const { now } = round;
    const fence = this.#observed.get(fenceLeaseName(this.group, b))?.lease;
    const step = bucketStep(this.#facts(bucket, fence, round));
    if (step === 'stay') return;
    if (step === 'acquire') {
      await this.#take(b, fence, now);
    } else if (step === 'keep') {
      this.#own(b, bucket.epoch);
      this.#grant(b);
    } else if (step === 'drain') {
      this.#drain(b, now);
      // Nothing in flight: release in the same round, so the new owner starts a round sooner.
      if (bucket.inFlight === 0) await this.#stepOnce(b, bucket, round);
    } else if (step === 'release') {
      await this.#release(b, now);
    } else {
      const holder = fence?.record.holderIdentity;
      this.#disown(b, new ShareLostCancellation(`bucket ${b} is held by ${holder ?? 'another replica'}`));
      this.#o.log.warn({ bucket: b, holder }, 'a shard bucket was taken by another replica');
      this.#o.onHandoff?.('lost');
    }
  }

  #facts(bucket: Bucket, fence: ShardLease | undefined, { desired, now, live }: Round): BucketFacts {
    const holder = fence?.record.holderIdentity;
    return {
      phase: bucket.phase,
      desired,
      self: this.identity,
      fenceHolder: holder,
      holderLive: holder !== undefined && live.has(holder),
      inFlight: bucket.inFlight,
      now,
      drainBoundMs: this.#drainBoundMs,
      ...(bucket.drainingSince === undefined ? {} : { drainingSince: bucket.drainingSince }),
    };
  }

  async #release(b: number, now: number): Promise<void> {
    const since = this.#bucket(b).drainingSince ?? now;
    if (!(await this.#releaseFence(b))) return;
    this.#o.log.info({ bucket: b, drainedMs: now - since }, 'released a shard bucket');
    this.#o.onHandoff?.('released');
  }

  async #take(b: number, fence: ShardLease | undefined, now: number): Promise<void> {
    if (!(await this.#acquireFence(b, fence, now))) return;
    this.#o.log.info({ bucket: b, epoch: this.#bucket(b).epoch, previous: fence?.record.holderIdentity ?? '' }, 'took a shard bucket');
    this.#o.onHandoff?.('acquired');
    this.#grant(b);
  }

  /** The bucket is ours under `epoch`, with a fresh signal for its reconciles. */
  #own(b: number, epoch: number): void {
    const bucket = this.#bucket(b);
    bucket.phase = 'owned';
    delete bucket.drainingSince;
    bucket.epoch = epoch;
    bucket.control = new AbortController();
    this.#o.onShares?.(this.ownedBuckets());
  }

  /** No new helm run for the bucket; what runs there is cancelled; released once drained. */
  #drain(b: number, now: number): void {
    const bucket = this.#bucket(b);
    bucket.phase = 'draining';
    bucket.drainingSince = now;
    bucket.control.abort(new ShareLostCancellation(`bucket ${b} is being handed to another replica`));
    this.#o.log.info({ bucket: b, inFlight: bucket.inFlight }, 'handing off a shard bucket');
    this.#o.onShares?.(this.ownedBuckets());
  }

  #disown(b: number, reason: Error): void {
    const bucket = this.#bucket(b);
    bucket.phase = 'none';
    delete bucket.drainingSince;
    bucket.control.abort(reason);
    this.#o.onShares?.(this.ownedBuckets());
  }

  #grant(b: number): void {
    for (const listener of this.#grantListeners) {
      try {
        listener(b);
      } catch (err) {
        this.#o.log.error({ error: err, bucket: b }, 'a shard grant listener threw');
      }
    }
  }

  async #acquireFence(b: number, fence: ShardLease | undefined, now: number): Promise<boolean> {
    const name = fenceLeaseName(this.group, b);
    const transitions = (fence?.record.leaseTransitions ?? 0) + 1;
    const record: LeaseRecord = {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.#leaseMs / 1000,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: transitions,
    };
    const written = await this.#bounded(`take bucket ${b}`, () =>
      fence === undefined
        ? this.#o.store.create(name, { role: 'fence', record })
        : this.#o.store.update(name, { role: 'fence', record }, fence.resourceVersion),
    );
    if (written === undefined) return false;
    this.#remember(name, { role: 'fence' }, written, now);
    // Paused during the write? Then the peer Lease may be gone, and with it the right to the fence.
    if (!this.isLeader()) return false;
    this.#own(b, transitions);
    return true;
  }

  async #releaseFence(b: number): Promise<boolean> {
    const name = fenceLeaseName(this.group, b);
    const fence = this.#observed.get(name)?.lease;
    if (fence?.record.holderIdentity !== this.identity) {
      this.#disown(b, new ShareLostCancellation(`bucket ${b} released`));
      return true;
    }
    const now = this.#clock.now();
    const record: LeaseRecord = { ...fence.record, holderIdentity: '', renewTime: now };
    const written = await this.#bounded(`release bucket ${b}`, () =>
      this.#o.store.update(name, { role: 'fence', record }, fence.resourceVersion),
    );
    if (written === undefined) return false;
    this.#remember(name, { role: 'fence' }, written, now);
    this.#disown(b, new ShareLostCancellation(`bucket ${b} released`));
    return true;
  }

  /** Creates or renews the peer Lease; false when this round cannot go on (the write failed). */
  async #renewPeer(now: number): Promise<boolean> {
    const current = this.#observed.get(this.#peerName)?.lease;
    const record: LeaseRecord = {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.#leaseMs / 1000,
      acquireTime: current?.record.acquireTime ?? now,
      renewTime: now,
      leaseTransitions: current?.record.leaseTransitions ?? 0,
    };
    if (this.#acquiredPeer && current?.record.holderIdentity !== this.identity) {
      this.#lose(`the peer lease ${this.#peerName} was changed by someone else`);
      return false;
    }
    const written = await this.#bounded('renew the peer lease', () =>
      current === undefined
        ? this.#o.store.create(this.#peerName, { role: 'peer', record })
        : this.#o.store.update(this.#peerName, { role: 'peer', record }, current.resourceVersion),
    );
    if (written === undefined || !this.#running()) return false;
    this.#remember(this.#peerName, { role: 'peer' }, written, now);
    this.#peerWrites++;
    this.#renewedAt = now;
    this.#acquiredPeer = true;
    this.#deadline?.cancel();
    this.#deadline = this.#clock.setTimeout(() => {
      this.#lose(`failed to renew the peer lease ${this.#peerName} within the renew deadline of ${this.#renewDeadlineMs} ms`);
    }, this.#renewDeadlineMs);
    return true;
  }

  /** Identities of the peers whose Lease this replica has not seen expire, itself included. */
  #livePeers(now: number): Set<string> {
    const observed = [...this.#observed.values()].map(({ lease, at }) => ({ ...lease, at }));
    return liveIdentities(observed, (p) => peerLive(p.at, p.record.leaseDurationSeconds, p.record.holderIdentity, now), this.identity);
  }

  /**
   * Live peers whose bucket function is not ours. Two functions put a namespace in two buckets that
   * two replicas may hold at once, so while such a peer lives this replica wants no bucket (it hands
   * off what it has) and waits for it to go: a rolling upgrade across a change of the function
   * leaves the new replicas idle until the old ones have left, never two owners (docs/adr/0110).
   */
  #otherFunctions(live: ReadonlySet<string>): string[] {
    const strangers = [...this.#observed.values()]
      .map(({ lease }) => lease)
      .filter((l) => l.role === 'peer' && l.hash !== SHARD_HASH && l.record.holderIdentity !== '' && live.has(l.record.holderIdentity))
      .map((l) => `${l.record.holderIdentity} (${l.hash})`)
      .sort();
    const said = strangers.join(', ');
    if (said !== this.#strangers) {
      this.#strangers = said;
      if (said === '')
        this.#o.log.info({ group: this.group, hash: SHARD_HASH }, 'every live peer runs this bucket function: taking a share');
      else
        this.#o.log.warn(
          { group: this.group, hash: SHARD_HASH, peers: strangers },
          'live peers run another bucket function: owning nothing until they leave',
        );
    }
    return strangers;
  }

  /** `ownNewer`: our peer Lease was written since the LIST was sent, so its listed record may be older: kept as written. */
  #observe(listed: readonly ShardLease[], now: number, ownNewer = false): void {
    const seen = new Set<string>(ownNewer ? [this.#peerName] : []);
    for (const lease of listed) {
      seen.add(lease.name);
      if (ownNewer && lease.name === this.#peerName) continue;
      const before = this.#observed.get(lease.name);
      const changed = before === undefined || !sameRecord(before.lease.record, lease.record);
      this.#observed.set(lease.name, { lease, at: changed ? now : before.at });
    }
    for (const name of [...this.#observed.keys()]) if (!seen.has(name)) this.#observed.delete(name);
  }

  /** A record this replica wrote itself: seen now, with its new resourceVersion. */
  #remember(name: string, wrote: Omit<ShardLeaseWrite, 'record'>, written: VersionedLease, now: number): void {
    const lease: ShardLease = {
      name,
      role: wrote.role,
      hash: SHARD_HASH,
      balance: SHARD_BALANCE,
      record: written.record,
      resourceVersion: written.resourceVersion,
      ...(wrote.weights === undefined ? {} : { weights: wrote.weights }),
    };
    this.#observed.set(name, { lease, at: now });
  }

  /** `fn` within the renew deadline; undefined (logged) when it failed or timed out. */
  async #bounded<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      const result = await withDeadline(fn(), this.#renewDeadlineMs, this.#clock);
      if (result !== TIMED_OUT) return result;
      this.#o.log.warn({ group: this.group }, `timed out: ${what}`);
    } catch (err) {
      const level = err instanceof LeaseConflictError ? 'debug' : 'warn';
      this.#o.log[level]({ group: this.group, error: err }, `failed to ${what}`);
    }
    return undefined;
  }

  /** A method, not a field test: the state changes while a round awaits the store. */
  #running(): boolean {
    return this.#state === 'running';
  }

  #bucket(b: number): Bucket {
    const bucket = this.#buckets[b];
    if (bucket === undefined) throw new RangeError(`no shard bucket ${b}`);
    return bucket;
  }

  #lose(reason: string): void {
    if (this.#state !== 'running') return;
    this.#state = 'lost';
    this.#stopTimers();
    this.#o.log.error({ group: this.group, identity: this.identity, reason }, 'shard membership lost');
    for (const bucket of this.#buckets) {
      bucket.phase = 'none';
      bucket.control.abort(new ShareLostCancellation(reason));
    }
    for (const listener of this.#lostListeners) {
      try {
        listener();
      } catch (err) {
        this.#o.log.error({ error: err }, 'a shard-lost listener threw');
      }
    }
    this.#o.onShares?.([]);
    this.#resolveLost(new ShardLostError(`shard membership lost: ${reason}`));
  }

  #stopTimers(): void {
    this.#timer?.cancel();
    this.#deadline?.cancel();
  }
}

/** The lease timings with leader election's defaults, checked as leader.ts checks them. */
function timings(o: ShardCoordinatorOptions): { leaseMs: number; renewDeadlineMs: number; retryMs: number } {
  const leaseMs = o.leaseDurationMs ?? 15_000;
  const renewDeadlineMs = o.renewDeadlineMs ?? 10_000;
  const retryMs = o.retryPeriodMs ?? 2_000;
  if (o.identity === '') throw new RangeError('shard identity must not be empty');
  if (leaseMs <= renewDeadlineMs) throw new RangeError('lease duration must be greater than the renew deadline');
  if (renewDeadlineMs <= 1.2 * retryMs) throw new RangeError('renew deadline must be greater than 1.2 × the retry period');
  if (leaseMs < 1_000 || leaseMs % 1_000 !== 0) throw new RangeError('lease duration must be a whole number of seconds');
  return { leaseMs, renewDeadlineMs, retryMs };
}

function abortedController(): AbortController {
  const c = new AbortController();
  c.abort(new ShareLostCancellation('not owned'));
  return c;
}
