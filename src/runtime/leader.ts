/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's algorithm and
 * controller-runtime's defaults (lease 15 s, renew deadline 10 s, retry 2 s):
 *
 * - A candidate reads the Lease every retry period (jittered ×1.0–2.2). It takes the Lease when it
 *   does not exist, has no holder, or its record has not changed for a lease duration **as measured
 *   on our own clock** since we first saw that record (so clock skew between replicas does not
 *   matter). Every write carries the read `resourceVersion`: of two racing candidates one gets 409.
 * - The leader renews every retry period. Leadership is lost when no renewal has succeeded for the
 *   renew deadline (less than the lease duration, so we stop before anyone may take over), or at
 *   once when a read shows another holder. Loss is final: the process is expected to exit.
 * - `release()` (graceful shutdown) writes an empty holder with a 1 s duration, as client-go's
 *   `ReleaseOnCancel`, so a standby takes over on its next retry instead of after 15 s.
 *
 * This module is the state machine only: time comes from a {@link Clock} and the Lease from a
 * {@link LeaseLock}, so it is unit-tested with a ManualClock and an in-memory lock. The Lease I/O is
 * lease-lock.ts; where the Lease lives and who this replica is, pod-identity.ts.
 */
import type { Logger } from '../telemetry/logger.js';
import { systemClock, type Clock, type Timer, TIMED_OUT, withDeadline } from '../util/clock.js';

/** The Lease fields leader election uses; times are epoch milliseconds. */
export interface LeaseRecord {
  /** '' when released. */
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  readonly acquireTime: number;
  readonly renewTime: number;
  readonly leaseTransitions: number;
}

export interface VersionedLease {
  readonly record: LeaseRecord;
  readonly resourceVersion: string;
}

/** Someone else wrote the Lease first (HTTP 409). */
export class LeaseConflictError extends Error {
  override readonly name = 'LeaseConflictError';
}

/** Storage of the lease record; `KubeLeaseLock` (lease-lock.ts) is the real one. */
export interface LeaseLock {
  /** `namespace/name`, for logs. */
  readonly description: string;
  /** undefined when the Lease does not exist. */
  get(): Promise<VersionedLease | undefined>;
  /** @throws {LeaseConflictError} when it already exists. */
  create(record: LeaseRecord): Promise<VersionedLease>;
  /** @throws {LeaseConflictError} when `resourceVersion` is stale. */
  update(record: LeaseRecord, resourceVersion: string): Promise<VersionedLease>;
}

export interface LeaderElectorOptions {
  readonly lock: LeaseLock;
  readonly identity: string;
  /** How long a lease is valid without renewal. Default 15 s. */
  readonly leaseDurationMs?: number;
  /** How long the leader keeps retrying a failing renewal before it gives up. Default 10 s. */
  readonly renewDeadlineMs?: number;
  /** Interval between attempts. Default 2 s. */
  readonly retryPeriodMs?: number;
  readonly clock?: Clock;
  /** In [0, 1), for the retry jitter. */
  readonly random?: () => number;
  readonly log: Logger;
  /** Called with true when leadership starts and false when it ends (metrics). */
  readonly onLeadershipChange?: (leading: boolean) => void;
}

/** client-go's JitterFactor: candidate retries wait retryPeriod × [1, 2.2). */
const JITTER_FACTOR = 1.2;

type Attempt = 'acquired' | 'held-by-other' | 'failed';
type State = 'idle' | 'acquiring' | 'leading' | 'lost' | 'released';

export class LeaderElectionLostError extends Error {
  override readonly name = 'LeaderElectionLostError';
}

export class LeaderElector {
  readonly identity: string;
  /** Resolves (never rejects) with the reason once leadership, after being acquired, is lost. */
  readonly lost: Promise<LeaderElectionLostError>;
  readonly #o: LeaderElectorOptions;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #leaseMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryMs: number;
  #resolveLost!: (err: LeaderElectionLostError) => void;
  #state: State = 'idle';
  #observed: LeaseRecord | undefined;
  #observedAt = 0;
  /** When the last successful acquire or renew was sent (our clock): the lease is ours until a renew deadline after it. */
  #renewedAt = 0;
  readonly #lostListeners: (() => void)[] = [];
  #resourceVersion = '';
  #lastHolderLogged: string | undefined;
  #retryTimer: Timer | undefined;
  #deadlineTimer: Timer | undefined;
  #inflight: Promise<Attempt> | undefined;
  #abandonAcquire: (() => void) | undefined;

  constructor(options: LeaderElectorOptions) {
    this.#o = options;
    this.identity = options.identity;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#leaseMs = options.leaseDurationMs ?? 15_000;
    this.#renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.#retryMs = options.retryPeriodMs ?? 2_000;
    if (this.identity === '') throw new RangeError('leader election identity must not be empty');
    if (this.#leaseMs <= this.#renewDeadlineMs) throw new RangeError('lease duration must be greater than the renew deadline');
    if (this.#renewDeadlineMs <= JITTER_FACTOR * this.#retryMs)
      throw new RangeError('renew deadline must be greater than 1.2 × the retry period');
    if (this.#leaseMs < 1_000 || this.#leaseMs % 1_000 !== 0) throw new RangeError('lease duration must be a whole number of seconds');
    this.lost = new Promise((resolve) => (this.#resolveLost = resolve));
  }

  /**
   * Whether this replica leads and its clock says the lease is still its own, with no side effect:
   * unlike {@link isLeader}, it never declares the loss.
   */
  holdsLease(): boolean {
    return this.#state === 'leading' && this.#clock.now() - this.#renewedAt < this.#renewDeadlineMs;
  }

  /**
   * Whether this replica leads, by the clock as well as by the timers: a process that was paused
   * (SIGSTOP, a VM stall, a long GC) past the renew deadline may run callbacks before its deadline
   * timer fires, and must not act as leader in them. Noticing that here loses leadership at once.
   */
  isLeader(): boolean {
    if (this.#state !== 'leading') return false;
    if (this.holdsLease()) return true;
    this.#lose(
      `no renewal of the lease ${this.#o.lock.description} for the renew deadline of ${this.#renewDeadlineMs} ms (was the process paused?)`,
    );
    return false;
  }

  /**
   * Calls `listener` synchronously the moment leadership is lost, before {@link lost} resolves:
   * whatever must stop before any other callback runs (in-flight reconciles) is stopped there.
   */
  onLost(listener: () => void): void {
    this.#lostListeners.push(listener);
  }

  /** The holder of the lease as last read ('' when none). */
  observedHolder(): string | undefined {
    return this.#observed?.holderIdentity;
  }

  /**
   * Tries until this candidate holds the lease: resolves true once it does, false if `signal` aborts
   * (or `release()` is called) first. Call once.
   */
  acquire(signal?: AbortSignal): Promise<boolean> {
    if (this.#state !== 'idle') throw new Error('LeaderElector.acquire() may be called once');
    this.#state = 'acquiring';
    this.#o.log.info({ lease: this.#o.lock.description, identity: this.identity }, 'attempting to acquire leader lease');
    return new Promise<boolean>((resolve) => {
      const onAbort = (): void => {
        this.#retryTimer?.cancel();
        resolve(false);
      };
      this.#abandonAcquire = onAbort;
      signal?.addEventListener('abort', onAbort, { once: true });
      const abandoned = (): boolean => this.#state !== 'acquiring' || signal?.aborted === true;
      const attempt = async (): Promise<void> => {
        if (abandoned()) return;
        this.#inflight = this.#tryAcquireOrRenew();
        const result = await this.#inflight;
        // Abandoned while the attempt ran: release() gives the lease back if this attempt won it.
        if (abandoned()) return;
        if (result === 'acquired') {
          signal?.removeEventListener('abort', onAbort);
          this.#becomeLeader();
          resolve(true);
          return;
        }
        if (result === 'held-by-other') this.#logHolder();
        const wait = this.#retryMs * (1 + JITTER_FACTOR * this.#random());
        this.#retryTimer = this.#clock.setTimeout(() => void attempt(), wait);
      };
      if (signal?.aborted === true) onAbort();
      else void attempt();
    });
  }

  /**
   * Stops renewing. If this candidate holds the lease, gives it up (empty holder, 1 s duration) so a
   * standby takes over at its next retry. Bounded by the renew deadline; failures are logged only.
   */
  async release(): Promise<void> {
    const was = this.#state;
    this.#stopTimers();
    if (was === 'lost' || was === 'released') return;
    this.#state = 'released';
    this.#abandonAcquire?.();
    if (was === 'leading') {
      this.#o.onLeadershipChange?.(false);
      await this.#giveUp();
      return;
    }
    // An attempt still running when acquire() was abandoned may have made us the holder.
    if (was === 'acquiring' && (await this.#inflight) === 'acquired') await this.#giveUp();
  }

  async #giveUp(): Promise<void> {
    const observed = this.#observed;
    if (observed?.holderIdentity !== this.identity || this.#resourceVersion === '') return;
    const now = this.#clock.now();
    const record: LeaseRecord = {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: observed.leaseTransitions,
    };
    const lease = this.#o.lock.description;
    try {
      const done = await withDeadline(this.#o.lock.update(record, this.#resourceVersion), this.#renewDeadlineMs, this.#clock);
      if (done === TIMED_OUT) this.#o.log.warn({ lease }, 'timed out releasing the leader lease');
      else this.#o.log.info({ lease, identity: this.identity }, 'released leader lease');
    } catch (err) {
      this.#o.log.warn({ lease, error: err }, 'failed to release the leader lease');
    }
  }

  #becomeLeader(): void {
    this.#state = 'leading';
    this.#o.log.info({ lease: this.#o.lock.description, identity: this.identity }, 'successfully acquired lease');
    this.#o.onLeadershipChange?.(true);
    this.#armDeadline();
    this.#retryTimer = this.#clock.setTimeout(() => void this.#renew(), this.#retryMs);
  }

  #armDeadline(): void {
    this.#deadlineTimer?.cancel();
    this.#deadlineTimer = this.#clock.setTimeout(() => {
      this.#lose(`failed to renew the lease ${this.#o.lock.description} within the renew deadline of ${this.#renewDeadlineMs} ms`);
    }, this.#renewDeadlineMs);
  }

  async #renew(): Promise<void> {
    if (this.#state !== 'leading') return;
    const result = await this.#tryAcquireOrRenew();
    if (!this.isLeader()) return; // lost or released while the attempt ran
    if (result === 'held-by-other') {
      this.#lose(`the lease ${this.#o.lock.description} is now held by ${this.#observed?.holderIdentity ?? 'another candidate'}`);
      return;
    }
    if (result === 'acquired') this.#armDeadline();
    this.#retryTimer = this.#clock.setTimeout(() => void this.#renew(), this.#retryMs);
  }

  #lose(reason: string): void {
    if (this.#state !== 'leading') return;
    this.#state = 'lost';
    this.#stopTimers();
    this.#o.log.error({ lease: this.#o.lock.description, identity: this.identity, reason }, 'leader election lost');
    for (const listener of this.#lostListeners) {
      try {
        listener();
      } catch (err) {
        this.#o.log.error({ error: err }, 'a leadership-lost listener threw');
      }
    }
    this.#o.onLeadershipChange?.(false);
    this.#resolveLost(new LeaderElectionLostError(`leader election lost: ${reason}`));
  }

  #stopTimers(): void {
    this.#retryTimer?.cancel();
    this.#deadlineTimer?.cancel();
  }

  #logHolder(): void {
    const holder = this.#observed?.holderIdentity;
    if (holder === this.#lastHolderLogged) return;
    this.#lastHolderLogged = holder;
    this.#o.log.info({ lease: this.#o.lock.description, holder }, 'lease is held by another candidate; waiting');
  }

  #observe(record: LeaseRecord, resourceVersion: string, now: number): void {
    if (this.#observed === undefined || !sameRecord(this.#observed, record)) {
      this.#observed = record;
      this.#observedAt = now;
    }
    this.#resourceVersion = resourceVersion;
  }

  /** One round of client-go's tryAcquireOrRenew, bounded by the renew deadline. */
  async #tryAcquireOrRenew(): Promise<Attempt> {
    try {
      const attempt = await withDeadline(this.#attempt(), this.#renewDeadlineMs, this.#clock);
      return attempt === TIMED_OUT ? 'failed' : attempt;
    } catch (err) {
      const level = err instanceof LeaseConflictError ? 'debug' : 'warn';
      this.#o.log[level]({ lease: this.#o.lock.description, error: err }, 'error updating the leader lease');
      return 'failed';
    }
  }

  async #attempt(): Promise<Attempt> {
    const now = this.#clock.now();
    const durationSeconds = this.#leaseMs / 1000;
    const current = await this.#o.lock.get();
    if (current === undefined) {
      const record = {
        holderIdentity: this.identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: 0,
      };
      const created = await this.#o.lock.create(record);
      this.#observe(created.record, created.resourceVersion, now);
      this.#renewedAt = now;
      return 'acquired';
    }
    this.#observe(current.record, current.resourceVersion, now);
    const old = current.record;
    const mine = old.holderIdentity === this.identity;
    const valid = this.#observedAt + old.leaseDurationSeconds * 1000 > now;
    if (old.holderIdentity !== '' && !mine && valid) return 'held-by-other';
    const record: LeaseRecord = {
      holderIdentity: this.identity,
      leaseDurationSeconds: durationSeconds,
      acquireTime: mine ? old.acquireTime : now,
      renewTime: now,
      leaseTransitions: mine ? old.leaseTransitions : old.leaseTransitions + 1,
    };
    const updated = await this.#o.lock.update(record, current.resourceVersion);
    this.#observe(updated.record, updated.resourceVersion, now);
    this.#renewedAt = now;
    return 'acquired';
  }
}

/** Whether two reads show the same record (a changed one restarts the expiry clock). */
export function sameRecord(a: LeaseRecord, b: LeaseRecord): boolean {
  return (
    a.holderIdentity === b.holderIdentity &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.acquireTime === b.acquireTime &&
    a.renewTime === b.renewTime &&
    a.leaseTransitions === b.leaseTransitions
  );
}
