/**
 * The hooks the runtime and helm report through, and `OperatorMetrics` implements. They are
 * declared here, below their callers, so telemetry imports nothing above it: the runtime and helm
 * depend on these types, not the other way round (docs/adr/0048-import-rules.md).
 */

/** controller-runtime's `result` label of `controller_runtime_reconcile_total`. */
export type ReconcileResultLabel = 'success' | 'error' | 'requeue' | 'requeue_after';

/**
 * Hooks for controller-runtime's `controller_runtime_*` metrics; a Prometheus module implements them.
 * `register` runs once per controller so every series can start at 0.
 */
export interface ControllerMetrics {
  register(controller: string, maxConcurrentReconciles: number): void;
  reconcileTotal(controller: string, result: ReconcileResultLabel): void;
  reconcileError(controller: string): void;
  terminalReconcileError(controller: string): void;
  reconcileTime(controller: string, seconds: number): void;
  activeWorkers(controller: string, active: number): void;
  /** The workqueue metrics of this controller's queue (`name` = controller). */
  workqueue(controller: string): WorkqueueMetrics;
}

/**
 * Hooks for controller-runtime's `workqueue_*` metrics, bound to one queue (its `name` label):
 * adds_total, depth, queue_duration_seconds, work_duration_seconds and retries_total. Unfinished-work
 * gauges are read on scrape through `WorkQueue.unfinishedWorkSeconds` and
 * `WorkQueue.longestRunningProcessorSeconds`.
 */
export interface WorkqueueMetrics {
  /** A key was accepted (not deduplicated away). */
  add(): void;
  /** Keys waiting to be handed out, after every change. */
  depth(depth: number): void;
  /** Seconds a key waited between being added and being handed out. */
  queueDuration(seconds: number): void;
  /** Seconds between a key being handed out and its `done()`. */
  workDuration(seconds: number): void;
  /** `addRateLimited` was called. */
  retry(): void;
}

/** One helm process, reported after it ends (metrics; tests count spawns with it). */
export interface HelmExecution {
  readonly verb: string;
  /** `timeout`: helm ran out of its deadline (`--helm-timeout`, its hooks' or waits' own). */
  readonly outcome: 'success' | 'error' | 'timeout';
  readonly durationMs: number;
  /** Releases the process worked on, one after the other (a batched uninstall's); 1 when absent. */
  readonly releases?: number;
}
