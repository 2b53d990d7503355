/**
 * A keyed work queue with client-go's semantics, the heart of "one reconcile per object at a time":
 *
 * - `add(key)` dedupes: a key waits in the queue at most once, however many events arrive.
 * - A key handed out by `get()` is *processing* until `done(key)`. Adding it meanwhile marks it dirty;
 *   `done()` then puts it back, so a key is never held by two workers and the last event is not lost.
 * - `addAfter(key, ms)`: the earliest pending time per key wins, and an immediate `add` (or a key that
 *   is already waiting or dirty) supersedes the delayed one.
 * - `addRateLimited(key)`: `addAfter` with per-key exponential backoff; `forget(key)` resets it.
 * - Two priorities, as controller-runtime's priority queue: a `low` key is handed out only when no
 *   `normal` one waits. A key added with both waits as `normal`. The controller
 *   queues its own kind's events as `normal`, and the objects of its first LIST, periodic resyncs
 *   and dependents' events as `low`: under a flood of resyncs, status changes or a restart's
 *   backlog, a new or edited CR is not queued behind them.
 * - Fair across namespaces (tenants), as the API server's priority and fairness queues requests per
 *   flow: within each priority, every namespace with waiting keys gets its turn, round-robin, one key
 *   per turn; FIFO within a namespace. 500 keys of one namespace delay another namespace's key by
 *   one key, not 500. A namespace's key is its part before `/` (see `requestKey`); cluster-scoped
 *   keys share the namespace ''.
 * - `maxInFlightPerNamespace`: a namespace with that many keys processing gets no more until one is
 *   done; its keys wait while other namespaces' go (a `low` key of another namespace before a
 *   `normal` one at its cap: a free worker never idles behind a capped namespace). So installs
 *   that hang in one namespace cannot hold every worker. Keys of namespace '' are never capped.
 *
 * Shutdown: `shutDown()` stops handing out keys at once (every pending and future `get()` resolves
 * `undefined`; queued and delayed keys are dropped; later adds are ignored). Keys already handed out
 * stay processing until their `done()`; `shutDownWithDrain()` also waits for that.
 */
import type { WorkqueueMetrics } from '../telemetry/metric-hooks.js';
import { systemClock, type Clock, type Timer } from '../util/clock.js';
import { ItemBackoff, type ItemBackoffOptions } from './backoff.js';
import { FairQueue } from './fair-queue.js';
import { parseRequestKey } from './reconcile.js';

export const noopWorkqueueMetrics: WorkqueueMetrics = {
  add: () => undefined,
  depth: () => undefined,
  queueDuration: () => undefined,
  workDuration: () => undefined,
  retry: () => undefined,
};

export interface WorkQueueOptions {
  /** Backoff of `addRateLimited`: default base 1 s, cap 5 min, no jitter. */
  backoff?: ItemBackoffOptions;
  clock?: Clock;
  metrics?: WorkqueueMetrics;
  /** Keys of one namespace processing at once, at most (see the module comment). Default: no cap. */
  maxInFlightPerNamespace?: number;
}

interface Waiter {
  readonly resolve: (key: string | undefined) => void;
  readonly release: () => void;
}

interface Delayed {
  readonly readyAt: number;
  readonly timer: Timer;
}

export type Priority = 'normal' | 'low';

export class WorkQueue {
  readonly #clock: Clock;
  readonly #metrics: WorkqueueMetrics;
  readonly #backoff: ItemBackoff;
  /** `normal` keys ready to hand out, per namespace. Always a subset of #dirty, disjoint from #processing. */
  readonly #queue = new FairQueue();
  /** `low` keys ready to hand out, per namespace, after every `normal` one. */
  readonly #low = new FairQueue();
  /** The dirty keys added with `low` priority only. */
  readonly #lowKeys = new Set<string>();
  /** Keys that need processing: queued, or processing and added again. */
  readonly #dirty = new Set<string>();
  /** Keys handed out and not yet done, with the time they were handed out. */
  readonly #processing = new Map<string, number>();
  /** Keys processing per namespace, for the cap. */
  readonly #inFlight = new Map<string, number>();
  readonly #cap: number;
  /** Time each dirty key was added, for queue_duration. */
  readonly #addedAt = new Map<string, number>();
  readonly #delayed = new Map<string, Delayed>();
  #waiters: Waiter[] = [];
  #shuttingDown = false;
  #drained: (() => void)[] = [];

  constructor(options: WorkQueueOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#metrics = options.metrics ?? noopWorkqueueMetrics;
    this.#backoff = new ItemBackoff(options.backoff);
    const cap = options.maxInFlightPerNamespace ?? Infinity;
    if (!(cap >= 1 && (Number.isInteger(cap) || cap === Infinity)))
      throw new RangeError(`maxInFlightPerNamespace must be a positive integer, got ${cap}`);
    this.#cap = cap;
  }

  /** Queues `key` for processing now; see the module comment for deduplication and priorities. */
  add(key: string, priority: Priority = 'normal'): void {
    if (this.#shuttingDown) return;
    this.#cancelDelayed(key);
    if (this.#dirty.has(key)) {
      if (priority === 'normal') this.#raise(key);
      return;
    }
    this.#dirty.add(key);
    if (priority === 'low') this.#lowKeys.add(key);
    this.#addedAt.set(key, this.#clock.now());
    this.#metrics.add();
    if (this.#processing.has(key)) return; // re-queued by done()
    this.#push(key);
  }

  /** Queues `key` after `ms`; `ms <= 0` is `add`. Keeps the earliest of several pending times. */
  addAfter(key: string, ms: number, priority: Priority = 'normal'): void {
    if (this.#shuttingDown) return;
    if (ms <= 0) {
      this.add(key, priority);
      return;
    }
    // Already due for processing: that run comes first and decides about any later requeue.
    if (this.#dirty.has(key)) return;
    const readyAt = this.#clock.now() + ms;
    const pending = this.#delayed.get(key);
    if (pending !== undefined && pending.readyAt <= readyAt) return;
    pending?.timer.cancel();
    const timer = this.#clock.setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key, priority);
    }, ms);
    this.#delayed.set(key, { readyAt, timer });
  }

  /** Queues `key` after its next per-key backoff delay (one more consecutive failure). */
  addRateLimited(key: string): void {
    if (this.#shuttingDown) return;
    this.#metrics.retry();
    this.addAfter(key, this.#backoff.when(key));
  }

  /** Resets `key`'s backoff (after a success or a terminal error); does not dequeue it. */
  forget(key: string): void {
    this.#backoff.forget(key);
  }

  /** Consecutive `addRateLimited` calls for `key` since it was last forgotten. */
  numRequeues(key: string): number {
    return this.#backoff.numRequeues(key);
  }

  /**
   * The next ready key, waiting for one if none is. Resolves `undefined` once the queue is shut
   * down or `signal` aborts. The caller owns the key until it calls `done(key)`.
   */
  get(signal?: AbortSignal): Promise<string | undefined> {
    if (this.#shuttingDown || signal?.aborted === true) return Promise.resolve(undefined);
    const key = this.#pop();
    if (key !== undefined) return Promise.resolve(key);
    return new Promise((resolve) => {
      const onAbort = (): void => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve(undefined);
      };
      const waiter: Waiter = { resolve, release: () => signal?.removeEventListener('abort', onAbort) };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** Marks `key` finished; if it was added while processing, it is queued again now. */
  done(key: string): void {
    const startedAt = this.#processing.get(key);
    if (startedAt === undefined) return;
    this.#processing.delete(key);
    this.#metrics.workDuration((this.#clock.now() - startedAt) / 1000);
    const ns = namespaceOf(key);
    const inFlight = (this.#inFlight.get(ns) ?? 1) - 1;
    if (inFlight === 0) this.#inFlight.delete(ns);
    else this.#inFlight.set(ns, inFlight);
    if (this.#dirty.has(key) && !this.#shuttingDown) this.#push(key);
    // Below its cap again, the namespace's waiting keys may go to a waiting worker.
    else this.#dispatch();
    if (this.#processing.size === 0) this.#notifyDrained();
  }

  /** Keys ready to be handed out (neither processing nor delayed). */
  len(): number {
    return this.#queue.size + this.#low.size;
  }

  /** Keys handed out and not yet done. */
  processing(): number {
    return this.#processing.size;
  }

  shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Stops handing out keys at once; in-flight keys are not waited for. Idempotent. */
  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    for (const { timer } of this.#delayed.values()) timer.cancel();
    this.#delayed.clear();
    this.#queue.clear();
    this.#low.clear();
    this.#lowKeys.clear();
    this.#dirty.clear();
    this.#addedAt.clear();
    this.#metrics.depth(0);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) {
      w.release();
      w.resolve(undefined);
    }
  }

  /** `shutDown()`, then resolves once every handed-out key is `done()`. */
  async shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.#processing.size === 0) return;
    await new Promise<void>((resolve) => this.#drained.push(resolve));
  }

  /** Sum of the ages of all in-flight keys (workqueue_unfinished_work_seconds). */
  unfinishedWorkSeconds(): number {
    const now = this.#clock.now();
    let total = 0;
    for (const startedAt of this.#processing.values()) total += now - startedAt;
    return total / 1000;
  }

  /** Age of the oldest in-flight key (workqueue_longest_running_processor_seconds). */
  longestRunningProcessorSeconds(): number {
    const now = this.#clock.now();
    let oldest = now;
    for (const startedAt of this.#processing.values()) oldest = Math.min(oldest, startedAt);
    return (now - oldest) / 1000;
  }

  #push(key: string): void {
    (this.#lowKeys.has(key) ? this.#low : this.#queue).push(namespaceOf(key), key);
    this.#metrics.depth(this.len());
    this.#dispatch();
  }

  /** Hands keys to waiting workers while both wait (a key may wait for its namespace's cap). */
  #dispatch(): void {
    while (this.#waiters.length > 0) {
      const key = this.#pop();
      if (key === undefined) return;
      const waiter = this.#waiters.shift() as Waiter;
      waiter.release();
      waiter.resolve(key);
    }
  }

  #pop(): string | undefined {
    const belowCap = (ns: string): boolean => ns === '' || (this.#inFlight.get(ns) ?? 0) < this.#cap;
    const key = this.#queue.shift(belowCap) ?? this.#low.shift(belowCap);
    if (key === undefined) return undefined;
    this.#metrics.depth(this.len());
    this.#handOut(key);
    return key;
  }

  #handOut(key: string): void {
    const now = this.#clock.now();
    this.#dirty.delete(key);
    this.#lowKeys.delete(key);
    this.#processing.set(key, now);
    const ns = namespaceOf(key);
    this.#inFlight.set(ns, (this.#inFlight.get(ns) ?? 0) + 1);
    const addedAt = this.#addedAt.get(key);
    this.#addedAt.delete(key);
    if (addedAt !== undefined) this.#metrics.queueDuration((now - addedAt) / 1000);
  }

  /** A dirty `low` key added again as `normal`: it waits as `normal` from now on. */
  #raise(key: string): void {
    if (!this.#lowKeys.delete(key)) return;
    const ns = namespaceOf(key);
    if (!this.#low.remove(ns, key)) return; // processing: done() queues it as normal
    this.#queue.push(ns, key);
  }

  #cancelDelayed(key: string): void {
    const pending = this.#delayed.get(key);
    if (pending === undefined) return;
    pending.timer.cancel();
    this.#delayed.delete(key);
  }

  #notifyDrained(): void {
    const drained = this.#drained;
    this.#drained = [];
    for (const resolve of drained) resolve();
  }
}

const namespaceOf = (key: string): string => parseRequestKey(key).namespace;
