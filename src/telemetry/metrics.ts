/**
 * Prometheus metrics on a private prom-client {@link Registry}: controller-runtime's names and labels
 * (so existing controller-runtime/operator-sdk dashboards and alerts work unchanged) plus our own
 * `helm_operator_*` series about helm processes and releases.
 *
 * - `controller_runtime_*` and `workqueue_*` come from the {@link ControllerMetrics} and
 *   {@link WorkqueueMetrics} hooks the runtime calls; every `result` label of
 *   `controller_runtime_reconcile_total` starts at 0 when a controller registers.
 * - `workqueue_unfinished_work_seconds` / `workqueue_longest_running_processor_seconds` are read from
 *   the live queues at scrape time ({@link OperatorMetrics.trackQueues}).
 * - `helm_operator_releases{controller,state}` is computed at scrape time from the last state each CR
 *   reported, so a CR moves between state labels instead of being counted twice.
 * - `helm_operator_watch_identity{controller,kind,identity}` is 1 per running watch: an alert on
 *   `identity="operator"` finds watches that lend the operator's rights to CR authors.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { CrMetrics, type CrSample } from './cr-metrics.js';
import type { Logger } from './logger.js';
import type { ControllerMetrics, HelmExecution, ReconcileResultLabel, WorkqueueMetrics } from './metric-hooks.js';

export const RECONCILE_RESULTS: readonly ReconcileResultLabel[] = ['success', 'error', 'requeue', 'requeue_after'];

/** controller-runtime's buckets for `controller_runtime_reconcile_time_seconds`. */
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5,
  4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
/** client-go's workqueue buckets: ExponentialBuckets(10e-9, 10, 12), 10 ns … 1000 s. */
const WORKQUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => Number((1e-8 * 10 ** i).toPrecision(1)));
/** helm processes run from tens of milliseconds (status) to minutes (upgrade --wait). */
const HELM_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** How often the `nodejs_eventloop_lag_*` histogram samples the event loop's delay. */
export const EVENT_LOOP_SAMPLE_MS = 100;

/** What a live work queue reports at scrape time; {@link Controller.queue} provides it. */
export interface QueueGauges {
  unfinishedWorkSeconds(): number;
  longestRunningProcessorSeconds(): number;
}

export type QueueProvider = () => Iterable<readonly [name: string, queue: QueueGauges | undefined]>;

/**
 * One informer cache's size at scrape time: `cache` is what it holds (the CRs of a kind, a
 * dependent kind, values sources, helm's release storage), `kind` the object kind. Several informers of one cache and kind
 * (one per watched namespace) are summed by the provider.
 */
export interface InformerObjects {
  readonly cache: 'cr' | 'dependent' | 'values-source' | 'release';
  readonly kind: string;
  readonly objects: number;
}

export type InformerProvider = () => Iterable<InformerObjects>;

export interface OperatorMetricsOptions {
  /** `helm_operator_build_info{version}`. */
  readonly version: string;
  /** Process metrics (CPU, memory, event loop, GC …); default true. */
  readonly processMetrics?: boolean;
  /** CRs with per-CR series (cr-metrics.ts); 0: none; default {@link DEFAULT_CR_LIMIT}. */
  readonly crLimit?: number;
}

/** `--metrics-cr-limit`'s default (ADR 0080). */
export const DEFAULT_CR_LIMIT = 1000;

/** A rollout's progress (the reconciler's RolloutProgress, by shape). */
export interface RolloutSample {
  readonly target: string;
  readonly chartVersion: string;
  readonly total: number;
  readonly onTarget: number;
  readonly failed: number;
  readonly halted: boolean;
  readonly paused: boolean;
}

export class OperatorMetrics implements ControllerMetrics {
  readonly registry = new Registry();
  readonly #reconcileTotal: Counter<'controller' | 'result'>;
  readonly #reconcileErrors: Counter<'controller'>;
  readonly #terminalErrors: Counter<'controller'>;
  readonly #panics: Counter<'controller'>;
  readonly #reconcileTime: Histogram<'controller'>;
  readonly #maxConcurrent: Gauge<'controller'>;
  readonly #activeWorkers: Gauge<'controller'>;
  readonly #wqDepth: Gauge<'name' | 'controller'>;
  readonly #wqAdds: Counter<'name' | 'controller'>;
  readonly #wqQueueDuration: Histogram<'name' | 'controller'>;
  readonly #wqWorkDuration: Histogram<'name' | 'controller'>;
  readonly #wqRetries: Counter<'name' | 'controller'>;
  readonly #leader: Gauge<'name'>;
  readonly #helmExecutions: Counter<'verb' | 'outcome'>;
  readonly #helmDuration: Histogram<'verb'>;
  readonly #concurrencyLimit: Gauge;
  readonly #drift: Counter<'controller' | 'kind'>;
  readonly #driftConflicts: Counter<'controller' | 'kind'>;
  readonly #settledLooks: Counter<'controller'>;
  readonly #uninstalled: Counter<'controller' | 'by'>;
  readonly #eventsDropped: Counter<'controller' | 'reason'>;
  /** Controller → labels of its `helm_operator_watch_identity` series. */
  readonly #identities = new Map<string, { readonly kind: string; readonly identity: string }>();
  readonly #queues = new Map<string, WorkqueueMetrics>();
  #queueProvider: QueueProvider = () => [];
  #informerProvider: InformerProvider = () => [];
  /** controller → `namespace/name` → last reported release state. */
  readonly #releaseStates = new Map<string, Map<string, string>>();
  /** controller → every state label ever reported, so an emptied state reads 0 instead of vanishing. */
  readonly #statesSeen = new Map<string, Set<string>>();
  /** controller → how to read its rollout's progress (reconciler/rollout.ts). */
  readonly #rollouts = new Map<string, () => RolloutSample | undefined>();
  /** The rollouts' progress as one scrape reads it: both rollout gauges, from one walk of each kind's CRs. */
  #rolloutSamples: { readonly atMs: number; readonly samples: Map<string, RolloutSample> } | undefined;
  /** Per-CR series (ADR 0080). */
  readonly #crs: CrMetrics;

  constructor(options: OperatorMetricsOptions) {
    const registers = [this.registry];
    this.#reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.#reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.#terminalErrors = new Counter({
      name: 'controller_runtime_terminal_reconcile_errors_total',
      help: 'Total number of terminal reconciliation errors per controller',
      labelNames: ['controller'],
      registers,
    });
    this.#panics = new Counter({
      name: 'controller_runtime_reconcile_panics_total',
      help: 'Total number of reconciliation panics per controller (always 0: a thrown error counts as an error)',
      labelNames: ['controller'],
      registers,
    });
    this.#reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.#maxConcurrent = new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'],
      registers,
    });
    this.#activeWorkers = new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'],
      registers,
    });
    this.#wqDepth = new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name', 'controller'],
      registers,
    });
    this.#wqAdds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name', 'controller'],
      registers,
    });
    this.#wqQueueDuration = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames: ['name', 'controller'],
      buckets: WORKQUEUE_BUCKETS,
      registers,
    });
    this.#wqWorkDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes.',
      labelNames: ['name', 'controller'],
      buckets: WORKQUEUE_BUCKETS,
      registers,
    });
    this.#wqRetries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name', 'controller'],
      registers,
    });
    const queues = (): QueueProvider => this.#queueProvider;
    new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help:
        "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. " +
        'Large values indicate stuck threads.',
      labelNames: ['name', 'controller'],
      registers,
      collect(this: Gauge<'name' | 'controller'>) {
        this.reset();
        for (const [name, q] of queues()()) if (q !== undefined) this.set({ name, controller: name }, q.unfinishedWorkSeconds());
      },
    });
    new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running.',
      labelNames: ['name', 'controller'],
      registers,
      collect(this: Gauge<'name' | 'controller'>) {
        this.reset();
        for (const [name, q] of queues()()) if (q !== undefined) this.set({ name, controller: name }, q.longestRunningProcessorSeconds());
      },
    });
    const informers = (): InformerProvider => this.#informerProvider;
    new Gauge({
      name: 'helm_operator_informer_objects',
      help:
        'Objects held in the informer caches, by cache (cr, dependent, values-source, release) and kind: what the ' +
        "replica's memory grows with; sharded, all but the CRs are the replica's share",
      labelNames: ['cache', 'kind'],
      registers,
      collect(this: Gauge<'cache' | 'kind'>) {
        this.reset();
        for (const { cache, kind, objects } of informers()()) this.inc({ cache, kind }, objects);
      },
    });
    this.#leader = new Gauge({
      name: 'leader_election_master_status',
      help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
      labelNames: ['name'],
      registers,
    });
    this.#helmExecutions = new Counter({
      name: 'helm_operator_helm_executions_total',
      help: 'helm processes run by the operator, by verb and outcome (success, error, or timeout: out of --helm-timeout)',
      labelNames: ['verb', 'outcome'],
      registers,
    });
    this.#helmDuration = new Histogram({
      name: 'helm_operator_helm_execution_duration_seconds',
      help: 'Wall-clock duration of helm processes, by verb',
      labelNames: ['verb'],
      buckets: HELM_BUCKETS,
      registers,
    });
    this.#concurrencyLimit = new Gauge({
      name: 'helm_operator_concurrency_limit',
      help: 'Reconciles (helm runs) allowed in flight across every kind, as self-tuned (absent when --max-concurrent-reconciles pins it)',
      registers: [],
    });
    const releaseStates = this.#releaseStates;
    const statesSeen = this.#statesSeen;
    new Gauge({
      name: 'helm_operator_releases',
      help: 'Custom resources by the state of their helm release, as of their last reconcile',
      labelNames: ['controller', 'state'],
      registers,
      collect(this: Gauge<'controller' | 'state'>) {
        this.reset();
        for (const [controller, seen] of statesSeen) {
          const counts = new Map<string, number>([...seen].map((s): [string, number] => [s, 0]));
          for (const state of releaseStates.get(controller)?.values() ?? []) counts.set(state, (counts.get(state) ?? 0) + 1);
          for (const [state, n] of counts) this.set({ controller, state }, n);
        }
      },
    });
    this.#drift = new Counter({
      name: 'helm_operator_drift_corrections_total',
      help: 'Release resources repaired after they drifted from the release manifest, by controller and resource kind',
      labelNames: ['controller', 'kind'],
      registers,
    });
    const rollouts = (): Map<string, RolloutSample> => this.#sampledRollouts();
    new Gauge({
      name: 'helm_operator_rollout_releases',
      help: 'CRs of a controller by where its rollout of the current chart (fleet_revision, chart_version) left them: on_target, pending, failed',
      labelNames: ['controller', 'fleet_revision', 'chart_version', 'state'],
      registers,
      collect(this: Gauge<'controller' | 'fleet_revision' | 'chart_version' | 'state'>) {
        this.reset();
        for (const [controller, r] of rollouts()) {
          const base = { controller, fleet_revision: r.target, chart_version: r.chartVersion };
          this.set({ ...base, state: 'on_target' }, r.onTarget);
          this.set({ ...base, state: 'pending' }, r.total - r.onTarget - r.failed);
          this.set({ ...base, state: 'failed' }, r.failed);
        }
      },
    });
    new Gauge({
      name: 'helm_operator_rollout_halted',
      help: "Whether a controller's rollout is halted (1: failures beyond the budget) or paused (2), else 0",
      labelNames: ['controller'],
      registers,
      collect(this: Gauge<'controller'>) {
        this.reset();
        for (const [controller, r] of rollouts()) this.set({ controller }, r.halted ? 1 : r.paused ? 2 : 0);
      },
    });
    this.#driftConflicts = new Counter({
      name: 'helm_operator_drift_conflicts_total',
      help: 'Fields of release resources no longer restored because another field manager rewrote them after each repair (a fight), by controller and resource kind',
      labelNames: ['controller', 'kind'],
      registers,
    });
    this.#settledLooks = new Counter({
      name: 'helm_operator_settled_looks_total',
      help: 'Reconciles that found everything their CR was last found settled from unchanged (its resourceVersion, its release record, its objects) and decided nothing again (ADR 0112), by controller',
      labelNames: ['controller'],
      registers,
    });
    this.#uninstalled = new Counter({
      name: 'helm_operator_releases_uninstalled_total',
      help: 'Releases of deleted CRs uninstalled, by controller and by whom: helm (a helm uninstall process) or operator (the same deletes made by the operator itself, for a release without delete hooks)',
      labelNames: ['controller', 'by'],
      registers,
    });
    this.#eventsDropped = new Counter({
      name: 'helm_operator_events_dropped_total',
      help: "Kubernetes Events not written, by controller and reason: rate-limited (one object flooding its token bucket, as client-go's spam filter) or queue-full",
      labelNames: ['controller', 'reason'],
      registers,
    });
    const identities = this.#identities;
    new Gauge({
      name: 'helm_operator_watch_identity',
      help: 'Who each running watch acts as: identity="operator" (its own rights, lent to whoever may create a CR) or "serviceaccount" (impersonated, per CR namespace)',
      labelNames: ['controller', 'kind', 'identity'],
      registers,
      collect(this: Gauge<'controller' | 'kind' | 'identity'>) {
        this.reset();
        for (const [controller, labels] of identities) this.set({ controller, ...labels }, 1);
      },
    });
    const buildInfo = new Gauge({
      name: 'helm_operator_build_info',
      help: "A metric with a constant '1' value labeled by the helm-operator version and the Node.js version it runs on",
      labelNames: ['version', 'node_version'],
      registers,
    });
    buildInfo.set({ version: options.version, node_version: process.version }, 1);
    this.#crs = new CrMetrics(this.registry, options.crLimit ?? DEFAULT_CR_LIMIT);
    // The event loop delay histogram samples every 10 ms by default: a timer that wakes an idle
    // process 100 times a second, 0.4 CPU-s a minute measured (ADR 0112). 100 ms still sees a stall.
    if (options.processMetrics !== false)
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  }

  // ---- ControllerMetrics ----------------------------------------------------------------------

  register(controller: string, maxConcurrentReconciles: number): void {
    for (const result of RECONCILE_RESULTS) this.#reconcileTotal.inc({ controller, result }, 0);
    this.#reconcileErrors.inc({ controller }, 0);
    this.#terminalErrors.inc({ controller }, 0);
    this.#panics.inc({ controller }, 0);
    this.#maxConcurrent.set({ controller }, maxConcurrentReconciles);
    this.#activeWorkers.set({ controller }, 0);
  }

  reconcileTotal(controller: string, result: ReconcileResultLabel): void {
    this.#reconcileTotal.inc({ controller, result });
  }

  reconcileError(controller: string): void {
    this.#reconcileErrors.inc({ controller });
  }

  terminalReconcileError(controller: string): void {
    this.#terminalErrors.inc({ controller });
  }

  reconcileTime(controller: string, seconds: number): void {
    this.#reconcileTime.observe({ controller }, seconds);
  }

  activeWorkers(controller: string, active: number): void {
    this.#activeWorkers.set({ controller }, active);
  }

  /** The hooks of one queue; the same object for the same name (a restarted controller reuses its series). */
  workqueue(name: string): WorkqueueMetrics {
    let hooks = this.#queues.get(name);
    if (hooks !== undefined) return hooks;
    const labels = { name, controller: name };
    this.#wqAdds.inc(labels, 0);
    this.#wqRetries.inc(labels, 0);
    this.#wqDepth.set(labels, 0);
    hooks = {
      add: () => {
        this.#wqAdds.inc(labels);
      },
      depth: (depth) => {
        this.#wqDepth.set(labels, depth);
      },
      queueDuration: (seconds) => {
        this.#wqQueueDuration.observe(labels, seconds);
      },
      workDuration: (seconds) => {
        this.#wqWorkDuration.observe(labels, seconds);
      },
      retry: () => {
        this.#wqRetries.inc(labels);
      },
    };
    this.#queues.set(name, hooks);
    return hooks;
  }

  /** Where the scrape-time queue gauges read from, e.g. the operator's running controllers. */
  trackQueues(provider: QueueProvider): void {
    this.#queueProvider = provider;
  }

  /** Where `helm_operator_informer_objects` reads from at scrape time: the operator's informers. */
  trackInformers(provider: InformerProvider): void {
    this.#informerProvider = provider;
  }

  // ---- leader election, helm, releases ----------------------------------------------------------

  /** `leader_election_master_status{name}`: 1 while this process holds the lease, else 0. */
  leaderStatus(name: string, leading: boolean): void {
    this.#leader.set({ name }, leading ? 1 : 0);
  }

  /** Pass as HelmClient's `observer`. */
  readonly helmExecution = (e: HelmExecution): void => {
    this.#helmExecutions.inc({ verb: e.verb, outcome: e.outcome });
    this.#helmDuration.observe({ verb: e.verb }, e.durationMs / 1000);
  };

  /** `helm_operator_concurrency_limit`: registered on the first value, so a pinned operator has no such series. */
  readonly concurrencyLimit = (limit: number): void => {
    if (this.registry.getSingleMetric('helm_operator_concurrency_limit') === undefined)
      this.registry.registerMetric(this.#concurrencyLimit);
    this.#concurrencyLimit.set(limit);
  };

  /** Records the release state a CR's reconcile found (it replaces the CR's previous state). */
  releaseState(controller: string, namespace: string, name: string, state: string): void {
    let states = this.#releaseStates.get(controller);
    if (states === undefined) this.#releaseStates.set(controller, (states = new Map<string, string>()));
    states.set(`${namespace}/${name}`, state);
    let seen = this.#statesSeen.get(controller);
    if (seen === undefined) this.#statesSeen.set(controller, (seen = new Set<string>()));
    seen.add(state);
  }

  /** Drops a CR from `helm_operator_releases` (after its deletion). */
  forget(controller: string, namespace: string, name: string): void {
    this.#releaseStates.get(controller)?.delete(`${namespace}/${name}`);
    this.#crs.forget(controller, namespace, name);
  }

  /** The per-CR series of a CR, after its reconcile (cr-metrics.ts). */
  crState(controller: string, namespace: string, name: string, sample: CrSample): void {
    this.#crs.report(controller, namespace, name, sample);
  }

  /**
   * Drops a stopped controller from `helm_operator_releases`: a removed kind's CRs are no longer
   * reconciled by anything here, and a restarted one re-reports each CR its first LIST finds (a CR
   * deleted meanwhile would otherwise be counted for good).
   */
  forgetController(controller: string): void {
    this.#rollouts.delete(controller);
    this.#rolloutSamples = undefined;
    this.#crs.forgetController(controller);
    this.#releaseStates.delete(controller);
    this.#statesSeen.delete(controller);
  }

  /** `helm_operator_watch_identity` of a running controller; undefined: it stopped. */
  watchIdentity(controller: string, labels?: { readonly kind: string; readonly identity: string }): void {
    if (labels === undefined) this.#identities.delete(controller);
    else this.#identities.set(controller, labels);
  }

  /** How to read the progress of a controller's rollout, as its last reconcile handed it over; read when scraped. */
  rollout(controller: string, sample: () => RolloutSample | undefined): void {
    this.#rollouts.set(controller, sample);
  }

  /** Each rollout's progress, read at most once a second: one scrape collects both rollout gauges. */
  #sampledRollouts(): Map<string, RolloutSample> {
    const nowMs = Date.now();
    const last = this.#rolloutSamples;
    if (last !== undefined && nowMs - last.atMs >= 0 && nowMs - last.atMs < 1_000) return last.samples;
    const samples = new Map<string, RolloutSample>();
    for (const [controller, read] of this.#rollouts) {
      const sample = read();
      if (sample !== undefined) samples.set(controller, sample);
    }
    this.#rolloutSamples = { atMs: nowMs, samples };
    return samples;
  }

  /** One release resource of `kind` was repaired after drifting. */
  driftCorrected(controller: string, kind: string): void {
    this.#drift.inc({ controller, kind });
  }

  /** A reconcile of `controller` took its CR's last settled decision again (ADR 0112). */
  settledLook(controller: string): void {
    this.#settledLooks.inc({ controller });
  }

  /** A fight over a field of a release resource of `kind` was found; the field is no longer restored. */
  driftConflict(controller: string, kind: string): void {
    this.#driftConflicts.inc({ controller, kind });
  }

  /** `count` releases of deleted CRs of `controller` uninstalled `by` a helm process or the operator itself. */
  releasesUninstalled(controller: string, by: 'helm' | 'operator', count: number): void {
    this.#uninstalled.inc({ controller, by }, count);
  }

  /** An Event about a CR of `controller` was not written. */
  eventDropped(controller: string, reason: string): void {
    this.#eventsDropped.inc({ controller, reason });
  }

  /** The exposition text of every metric. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** The request handler of the metrics server: `GET /metrics`, everything else 404. */
export function metricsHandler(metrics: OperatorMetrics, log: Logger): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
      return;
    }
    metrics.metrics().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': metrics.contentType }).end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        log.error({ error: err }, 'collecting metrics failed');
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('error collecting metrics\n');
      },
    );
  };
}
