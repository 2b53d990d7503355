/**
 * A controller in controller-runtime's shape: event sources (one informer per watched namespace,
 * and the request sources of requeue-source.ts) feed object keys into a {@link WorkQueue};
 * `maxConcurrentReconciles` workers take keys and call the {@link Reconciler}, which is handed its
 * request and the cached object, never the controller. The queue guarantees a key is never
 * reconciled twice at once.
 *
 * Result handling (as controller-runtime's `reconcileHandler`):
 * - thrown error → `addRateLimited` (per-key exponential backoff), logged as "Reconciler error";
 * - thrown {@link TerminalError} (also as an error's `cause`) → forget, no requeue, logged;
 * - `requeueAfterMs > 0` → forget the backoff and requeue after that long;
 * - otherwise → forget; the key returns on the next event.
 *
 * Update events that change nothing a reconcile reads from metadata (generation, labels, annotations,
 * finalizers, deletionTimestamp) are dropped: status writes, including our own, don't re-trigger.
 * The objects of a source's first LIST are queued `low` (see workqueue.ts), every later event `normal`.
 *
 * Tenants: the queue takes namespaces in turns, and one namespace holds at most
 * {@link namespaceShare} workers at once, so neither a flood of CRs nor installs that hang in one
 * namespace keep another namespace's CRs waiting (ADR 0041).
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../telemetry/logger.js';
import type { ControllerMetrics } from '../telemetry/metric-hooks.js';
import type { ConcurrencyGate } from './adaptive-gate.js';
import { systemClock, type Clock, TIMED_OUT, withDeadline } from '../util/clock.js';
import type { ItemBackoffOptions } from './backoff.js';
import type { NamespaceShard } from './namespace-shard.js';
import { dropManagedFields, Informer, objectKey, objectSummary, type EventSource, type ObjectSummary } from './informer.js';
import {
  LeadershipLostCancellation,
  TerminalError,
  parseRequestKey,
  requestKey,
  type CacheReader,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from './reconcile.js';
import type { RequestSource } from './requeue-source.js';
import { WorkQueue, noopWorkqueueMetrics, type Priority } from './workqueue.js';

export interface ResourceDescriptor {
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

export const noopControllerMetrics: ControllerMetrics = {
  register: () => undefined,
  reconcileTotal: () => undefined,
  reconcileError: () => undefined,
  terminalReconcileError: () => undefined,
  reconcileTime: () => undefined,
  activeWorkers: () => undefined,
  workqueue: () => noopWorkqueueMetrics,
};

export interface ControllerOptions<T extends KubernetesObject = KubernetesObject> {
  readonly name: string;
  readonly kubeConfig: KubeConfig;
  readonly resource: ResourceDescriptor;
  /** Empty: all namespaces. Several: one informer per namespace (WATCH_NAMESPACE semantics). Ignored for cluster-scoped kinds. */
  readonly namespaces: readonly string[];
  /** Applied server-side: non-matching objects are never seen. */
  readonly labelSelector?: string;
  readonly maxConcurrentReconciles: number;
  /** Reconciles of one namespace at once, at most; default {@link namespaceShare}. */
  readonly maxConcurrentReconcilesPerNamespace?: number;
  /**
   * A gate every reconcile passes, shared by the controllers of every kind: the self-tuned number in
   * flight (concurrency-tuner.ts), below `maxConcurrentReconciles` workers. Undefined: the workers alone.
   */
  readonly gate?: ConcurrencyGate;
  /**
   * The reconciler, or how to build it from this controller's cache (read-only): a reconciler that
   * reads other objects of the kind is handed the cache, never the controller.
   */
  readonly reconciler: Reconciler | ((cache: CacheReader<T>) => Reconciler);
  /**
   * Requests from elsewhere than the kind's informers (requeue-source.ts): drained into the queue
   * from when the workers start until the controller stops, when they are stopped too.
   */
  readonly sources?: readonly RequestSource[];
  readonly log: Logger;
  /** Backoff of failed reconciles; default base 1 s, cap 5 min. */
  readonly queue?: { readonly backoff?: ItemBackoffOptions };
  readonly clock?: Clock;
  readonly metrics?: ControllerMetrics;
  /** How long `stop()` lets in-flight reconciles run before aborting them. Default 30 s. */
  readonly shutdownTimeoutMs?: number;
  /** How long `start()` waits for the informers' first LIST. Default 2 min (controller-runtime's CacheSyncTimeout). */
  readonly cacheSyncTimeoutMs?: number;
  /**
   * Applied to every object before it is cached and handed to the handlers (the Informer's
   * `transform`); default {@link dropManagedFields}. {@link keepMetadataOnly} when the cache is
   * read only for metadata (the handlers only ever read metadata).
   */
  readonly cacheTransform?: (obj: T) => T;
  /**
   * Told of each object the cache adds, updates or deletes (`deleted`), before it is queued: for
   * indexes kept over the kind's objects (which CRs refer to which values source).
   */
  readonly onObject?: (obj: T, deleted: boolean) => void;
  /**
   * Sharding (docs/adr/0085): keys of namespaces this replica does not own are dropped, as they are
   * queued and again as they are handed out; a reconcile ends when its namespace is handed off.
   * Undefined: every namespace is this replica's.
   */
  readonly shard?: NamespaceShard;
  /** Builds the event source of one namespace (undefined = all); default an {@link Informer}. For tests. */
  readonly sourceFactory?: (namespace: string | undefined) => EventSource<T>;
}

export interface StopOptions {
  /** How long in-flight reconciles may run before their signal is aborted; 0 aborts at once. */
  readonly timeoutMs?: number;
  /** How long to wait after aborting. Default {@link ABORT_GRACE_MS}. */
  readonly abortGraceMs?: number;
  /** Leadership was lost: reconciles are aborted with a {@link LeadershipLostCancellation}. */
  readonly leadershipLost?: boolean;
}

/** After aborting, how long helm gets to record the release state and exit. */
export const ABORT_GRACE_MS = 5_000;

/**
 * How long a key of this replica's share waits while the peer Lease's renewal is late by the clock
 * (NamespaceShard.owns): about a renewal's round trip, well under the renew deadline after which the
 * loss ends the process.
 */
export const LEASE_WAIT_MS = 1_000;

export class CacheSyncTimeoutError extends Error {
  override readonly name = 'CacheSyncTimeoutError';
}

export class ControllerStateError extends Error {
  override readonly name = 'ControllerStateError';
}

/** Whether an update event may matter to a reconcile; see the module comment. */
export function isMeaningfulUpdate(obj: KubernetesObject, old: ObjectSummary | undefined): boolean {
  if (old === undefined) return true;
  const cur = objectSummary(obj);
  // Kinds without metadata.generation (ConfigMap, Secret …) change content without bumping it.
  if (cur.generation === undefined) return cur.resourceVersion !== old.resourceVersion;
  return (
    cur.generation !== old.generation ||
    cur.deletionTimestamp !== old.deletionTimestamp ||
    !isDeepStrictEqual(cur.labels, old.labels) ||
    !isDeepStrictEqual(cur.annotations, old.annotations) ||
    !isDeepStrictEqual(cur.finalizers, old.finalizers)
  );
}

/**
 * How many workers one namespace may hold at once. Several namespaces: all workers but one, so a
 * namespace whose reconciles hang (a hook that never completes) leaves one for the others, and a
 * single busy tenant still gets nearly every worker. One watched namespace: every worker (there is
 * no other tenant to leave one for). `configured` (a flag) wins, up to `workers`.
 */
export function namespaceShare(workers: number, watchedNamespaces: readonly string[], configured?: number): number {
  if (configured !== undefined) return Math.min(configured, workers);
  if (new Set(watchedNamespaces).size === 1) return workers;
  return Math.max(1, workers - 1);
}

function isTerminal(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 16; e = e.cause, depth++) {
    if (e instanceof TerminalError) return true;
  }
  return false;
}

type State = 'new' | 'starting' | 'running' | 'stopped';

export class Controller<T extends KubernetesObject = KubernetesObject> {
  readonly name: string;
  readonly #options: ControllerOptions<T>;
  readonly #reconciler: Reconciler;
  readonly #clock: Clock;
  readonly #metrics: ControllerMetrics;
  readonly #log: Logger;
  readonly #queue: WorkQueue;
  readonly #abort = new AbortController();
  /** Keyed by namespace; '' is the single all-namespaces (or cluster-scoped) source. */
  readonly #sources = new Map<string, EventSource<T>>();
  #state: State = 'new';
  #workers: Promise<void>[] = [];
  #active = 0;
  #stopping: Promise<void> | undefined;
  readonly #perNamespace: number;

  constructor(options: ControllerOptions<T>) {
    if (!Number.isInteger(options.maxConcurrentReconciles) || options.maxConcurrentReconciles < 1) {
      throw new RangeError(`maxConcurrentReconciles must be a positive integer, got ${options.maxConcurrentReconciles}`);
    }
    this.name = options.name;
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#metrics = options.metrics ?? noopControllerMetrics;
    const { group, kind } = options.resource;
    this.#log = options.log.child({ controller: options.name, controllerGroup: group, controllerKind: kind });
    this.#perNamespace = namespaceShare(options.maxConcurrentReconciles, options.namespaces, options.maxConcurrentReconcilesPerNamespace);
    this.#queue = new WorkQueue({
      backoff: options.queue?.backoff,
      clock: this.#clock,
      metrics: this.#metrics.workqueue(options.name),
      maxInFlightPerNamespace: this.#perNamespace,
    });
    this.#metrics.register(options.name, options.maxConcurrentReconciles);
    this.#reconciler = typeof options.reconciler === 'function' ? options.reconciler(this.cache) : options.reconciler;
  }

  /**
   * Starts the event sources, waits for their first LIST (bounded by `cacheSyncTimeoutMs`, else
   * {@link CacheSyncTimeoutError}), then starts the workers. Events seen during the initial LIST are
   * already queued by then. Resolves without starting workers if `stop()` was called meanwhile.
   */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new ControllerStateError(`controller ${this.name} was already started`);
    this.#state = 'starting';
    this.#log.info('Starting Controller');
    for (const ns of this.#watchedNamespaces()) this.#sources.set(ns ?? '', this.#makeSource(ns));
    try {
      await this.#waitForSync();
    } catch (err) {
      if (this.#stopping !== undefined) return;
      this.#stopRequestSources();
      await this.#stopSources();
      this.#state = 'stopped';
      throw err;
    }
    if (this.#stopping !== undefined) return;
    this.#state = 'running';
    for (const source of this.#options.sources ?? []) {
      source.start((request) => {
        this.enqueue(request);
      });
    }
    this.#log.info({ workerCount: this.#options.maxConcurrentReconciles, workersPerNamespace: this.#perNamespace }, 'Starting workers');
    this.#workers = Array.from({ length: this.#options.maxConcurrentReconciles }, () => this.#worker());
  }

  /**
   * Graceful stop: stops the event sources and stops handing out keys, then lets in-flight reconciles
   * finish (a helm upgrade completes instead of being cancelled half-way) for up to `timeoutMs`
   * (default `shutdownTimeoutMs`). Only when that expires is the reconciles' signal aborted (helm gets
   * SIGTERM and records the release state); then it waits up to `abortGraceMs` more and gives up with
   * a warning. `timeoutMs: 0` aborts at once (lost leadership). Idempotent: the first call's options
   * win; a stopped controller cannot be restarted.
   */
  stop(options: StopOptions = {}): Promise<void> {
    this.#stopping ??= this.#shutdown(
      options.timeoutMs ?? this.#options.shutdownTimeoutMs ?? 30_000,
      options.abortGraceMs ?? ABORT_GRACE_MS,
      options.leadershipLost === true,
    );
    return this.#stopping;
  }

  /**
   * Queues a reconcile of `request` now, or after `afterMs`: from other sources than the controller's
   * own kind (dependents, values sources, the request sources). `low`: handed out after every
   * `normal` key (see workqueue.ts), for changes that only refresh a status, such as a dependent's.
   */
  enqueue(request: Request, options: { readonly afterMs?: number; readonly priority?: Priority } = {}): void {
    if (!this.#mine(request.namespace)) return;
    this.#queue.addAfter(requestKey(request), options.afterMs ?? 0, options.priority);
  }

  /**
   * Queues every cached object once more (low priority: after the queued work), the reconciler
   * having dropped what it remembers first (Reconciler.resync); how many.
   */
  resync(): number {
    this.#reconciler.resync?.();
    let queued = 0;
    for (const obj of this.cache.list()) {
      const { namespace = '', name } = obj.metadata ?? {};
      if (name === undefined) continue;
      this.enqueue({ namespace, name }, { priority: 'low' });
      queued++;
    }
    return queued;
  }

  /**
   * Queues every cached object of the namespaces `take` picks (a shard this replica just took), low
   * priority, as a resync does; how many.
   */
  requeueNamespaces(take: (namespace: string) => boolean): number {
    let queued = 0;
    for (const obj of this.cache.list()) {
      const { namespace = '', name } = obj.metadata ?? {};
      if (name === undefined || !take(namespace)) continue;
      this.enqueue({ namespace, name }, { priority: 'low' });
      queued++;
    }
    return queued;
  }

  /** Whether `namespace` is this replica's share, its keys queued and kept (always, without sharding). */
  #mine(namespace: string): boolean {
    return this.#options.shard?.assigned(namespace) !== false;
  }

  /**
   * What a worker does with a key of `namespace` handed out now: reconcile it; drop it (the
   * namespace was handed off while it waited: its new owner queues it); or put it back for a moment
   * (still ours, but the peer Lease's renewal is late by the clock: dropped, the key would be lost
   * when the renewal lands, with the periodic look it carries; docs/adr/0114).
   */
  #admission(namespace: string): 'reconcile' | 'drop' | 'wait' {
    const shard = this.#options.shard;
    if (shard === undefined) return 'reconcile';
    if (!shard.assigned(namespace)) return 'drop';
    return shard.owns(namespace) ? 'reconcile' : 'wait';
  }

  /** True once every event source has completed its first LIST. */
  hasSynced(): boolean {
    if (this.#sources.size === 0) return false;
    for (const source of this.#sources.values()) if (!source.hasSynced()) return false;
    return true;
  }

  /** Reconciles running right now. */
  activeWorkers(): number {
    return this.#active;
  }

  /** Keys waiting in the queue (not counting delayed or in-flight ones). */
  queueLength(): number {
    return this.#queue.len();
  }

  readonly cache: CacheReader<T> = {
    get: (namespace, name) => this.#sourceFor(namespace)?.get(name, namespace === '' ? undefined : namespace),
    list: (namespace) => {
      if (namespace !== undefined && namespace !== '') return this.#sourceFor(namespace)?.list(namespace) ?? [];
      return [...this.#sources.values()].flatMap((s) => s.list());
    },
  };

  /** The kind this controller reconciles. */
  get kind(): string {
    return this.#options.resource.kind;
  }

  /** Objects the kind's informers hold now (the informer-objects metric). */
  cachedObjects(): number {
    let n = 0;
    for (const source of this.#sources.values()) n += source.list().length;
    return n;
  }

  /** The queue, for metrics collectors (unfinished work gauges). */
  get queue(): Pick<WorkQueue, 'len' | 'unfinishedWorkSeconds' | 'longestRunningProcessorSeconds'> {
    return this.#queue;
  }

  #watchedNamespaces(): (string | undefined)[] {
    const { resource, namespaces } = this.#options;
    if (!resource.namespaced || namespaces.length === 0) return [undefined];
    return [...new Set(namespaces)];
  }

  #sourceFor(namespace: string): EventSource<T> | undefined {
    return this.#sources.get('') ?? this.#sources.get(namespace);
  }

  #makeSource(namespace: string | undefined): EventSource<T> {
    const o = this.#options;
    const source =
      o.sourceFactory?.(namespace) ??
      new Informer<T>(o.kubeConfig, {
        resource: { group: o.resource.group, version: o.resource.version, plural: o.resource.plural, namespace },
        labelSelector: o.labelSelector,
        clock: this.#clock,
        log: this.#log,
        // Every status write adds to managedFields; nothing reads them from the cache.
        transform: o.cacheTransform ?? dropManagedFields,
      });
    source.onAdd((obj) => {
      o.onObject?.(obj, false);
      // The objects of the first LIST wait behind what happens meanwhile, as controller-runtime's
      // priority queue has them: after a restart with many CRs, an edit or a new CR is not served
      // last. Adds after the first LIST (new objects, a re-list) are events like any other.
      this.#enqueueObject(obj, source.hasSynced() ? 'normal' : 'low');
    });
    source.onUpdate((obj, old) => {
      o.onObject?.(obj, false);
      // Another replica's object: its status may decide what spans the kind (docs/adr/0096).
      if (!this.#mine(obj.metadata?.namespace ?? '')) this.#reconciler.observe?.(obj);
      else if (isMeaningfulUpdate(obj, old)) this.#enqueueObject(obj);
    });
    source.onDelete((obj) => {
      o.onObject?.(obj, true);
      this.#enqueueObject(obj);
    });
    return source;
  }

  #enqueueObject(obj: KubernetesObject, priority: Priority = 'normal'): void {
    if ((obj.metadata?.name ?? '') === '' || !this.#mine(obj.metadata?.namespace ?? '')) return;
    this.#queue.add(objectKey(obj), priority);
  }

  async #waitForSync(): Promise<void> {
    const timeoutMs = this.#options.cacheSyncTimeoutMs ?? 120_000;
    const synced = Promise.all([...this.#sources.values()].map((s) => s.start()));
    const inTime = (await withDeadline(synced, timeoutMs, this.#clock)) !== TIMED_OUT;
    if (!inTime) throw new CacheSyncTimeoutError(`controller ${this.name}: caches did not sync within ${timeoutMs} ms`);
  }

  async #shutdown(timeoutMs: number, abortGraceMs: number, leadershipLost: boolean): Promise<void> {
    this.#log.info({ inFlight: this.#active, timeoutMs }, 'Shutdown signal received, waiting for all workers to finish');
    this.#queue.shutDown();
    // No request source queues more, and none of their timers outlives the controller.
    this.#stopRequestSources();
    // Another replica may be reconciling already: cancel before anything is awaited.
    if (leadershipLost) this.#abort.abort(new LeadershipLostCancellation(`controller ${this.name} lost leadership`));
    await this.#stopSources();
    const workers = Promise.all(this.#workers);
    let finished = timeoutMs > 0 && (await withDeadline(workers, timeoutMs, this.#clock)) !== TIMED_OUT;
    if (!finished) {
      if (this.#active > 0) this.#log.warn({ inFlight: this.#active, timeoutMs }, 'Cancelling in-flight reconciles');
      this.#abort.abort(leadershipLost ? new LeadershipLostCancellation(`controller ${this.name} lost leadership`) : undefined);
      finished = (await withDeadline(workers, abortGraceMs, this.#clock)) !== TIMED_OUT;
    }
    this.#state = 'stopped';
    if (finished) this.#log.info('All workers finished');
    else this.#log.warn({ inFlight: this.#active, timeoutMs, abortGraceMs }, 'Reconciles still running after the shutdown timeout');
  }

  #stopRequestSources(): void {
    for (const source of this.#options.sources ?? []) source.stop();
  }

  async #stopSources(): Promise<void> {
    const results = await Promise.allSettled([...this.#sources.values()].map((s) => s.stop()));
    for (const r of results) if (r.status === 'rejected') this.#log.warn({ error: r.reason }, 'event source failed to stop');
  }

  async #worker(): Promise<void> {
    for (let key = await this.#queue.get(); key !== undefined; key = await this.#queue.get()) {
      // Taken after the key, so an idle worker holds no slot another kind could use; its namespace
      // is its flow, so a namespace holding no slot is not held back by another's (adaptive-gate.ts).
      const { namespace } = parseRequestKey(key);
      const admission = this.#admission(namespace);
      if (admission !== 'reconcile') {
        this.#queue.forget(key);
        if (admission === 'wait') this.#queue.addAfter(key, LEASE_WAIT_MS);
        this.#queue.done(key);
        continue;
      }
      const release = await this.#options.gate?.acquire(namespace);
      try {
        await this.#reconcileKey(key);
      } finally {
        release?.();
        this.#queue.done(key);
      }
    }
  }

  async #reconcileKey(key: string): Promise<void> {
    const request = parseRequestKey(key);
    const reconcileID = randomUUID();
    const startedAt = this.#clock.now();
    this.#metrics.activeWorkers(this.name, ++this.#active);
    const shard = this.#options.shard;
    const leave = shard?.enter(request.namespace);
    // The share as it is now: a handoff while the reconcile runs aborts this one.
    const share = shard?.signal(request.namespace);
    const context = lazyContext({
      reconcileID,
      cached: this.cache.get(request.namespace, request.name),
      log: () => this.#log.child({ namespace: request.namespace, name: request.name, reconcileID }),
      signal: () => (share === undefined ? this.#abort.signal : AbortSignal.any([this.#abort.signal, share])),
    });
    try {
      const result = await this.#reconciler.reconcile(request, context);
      this.#handleResult(key, result);
    } catch (err) {
      if (shard !== undefined && !this.#abort.signal.aborted && shard.signal(request.namespace).aborted) {
        // Handed off: the new owner queues it again once it holds the namespace.
        this.#queue.forget(key);
        context.log.info({ error: err }, 'Reconcile ended: the namespace was handed to another replica');
      } else {
        this.#handleError(key, err, context.log);
      }
    } finally {
      leave?.();
      this.#metrics.activeWorkers(this.name, --this.#active);
      this.#metrics.reconcileTime(this.name, (this.#clock.now() - startedAt) / 1000);
    }
  }

  #handleResult(key: string, result: Result): void {
    this.#queue.forget(key);
    const after = result.requeueAfterMs;
    if (after !== undefined && after > 0) {
      // A periodic resync: anything an event brings goes first.
      this.#queue.addAfter(key, after, 'low');
      this.#metrics.reconcileTotal(this.name, 'requeue_after');
      return;
    }
    this.#metrics.reconcileTotal(this.name, 'success');
  }

  #handleError(key: string, err: unknown, log: Logger): void {
    this.#metrics.reconcileTotal(this.name, 'error');
    this.#metrics.reconcileError(this.name);
    if (this.#abort.signal.aborted) {
      // Shutting down: the queue no longer takes keys; the next leader or start picks this up.
      log.info({ error: err }, 'Reconcile interrupted by shutdown');
      return;
    }
    if (isTerminal(err)) {
      this.#metrics.terminalReconcileError(this.name);
      this.#queue.forget(key);
      log.error({ error: err, terminal: true }, 'Reconciler error');
      return;
    }
    this.#queue.addRateLimited(key);
    log.error({ error: err, requeues: this.#queue.numRequeues(key) }, 'Reconciler error');
  }
}

/**
 * A reconcile's context whose logger and signal are made when first read. A reconcile that finds
 * its CR settled (ADR 0112) reads neither, and a child logger and an `AbortSignal.any` for each of
 * thousands of periodic looks a minute were a tenth of the controller's own work at rest.
 */
function lazyContext(o: {
  readonly reconcileID: string;
  readonly cached: ReconcileContext['cached'];
  readonly log: () => Logger;
  readonly signal: () => AbortSignal;
}): ReconcileContext {
  let log: Logger | undefined;
  let signal: AbortSignal | undefined;
  return {
    reconcileID: o.reconcileID,
    cached: o.cached,
    get log(): Logger {
      return (log ??= o.log());
    },
    get signal(): AbortSignal {
      return (signal ??= o.signal());
    },
  };
}
