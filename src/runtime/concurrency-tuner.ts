/**
 * How many reconciles (so, helm runs) may be in flight across every kind, tuned while the operator
 * runs (docs/adr/0059-self-tuning-concurrency.md). An AIMD controller, as TCP's congestion window:
 *
 * - start from the CPUs the operator's cgroup allows (cpu-limit.ts);
 * - every window (3 s), {@link decide} looks at what finished in it: helm run durations, API
 *   request latencies and 429 answers, and whether work waited for a slot;
 * - a 429 halves the limit (the API server's priority and fairness says it is overloaded);
 * - helm runs or API requests clearly slower than their best (median over 2× / 3× the baseline)
 *   take a quarter off: past the point where the CPU (or the API server) is saturated, more
 *   concurrency only makes each run longer;
 * - otherwise, if work waited for a slot, one more slot (additive increase);
 * - `--max-concurrent-reconciles` (or a watch's own maxConcurrentReconciles) pins the number instead.
 *
 * The state is in memory only: a restarted operator starts again from the CPU limit.
 */
import { AdaptiveGate } from './adaptive-gate.js';

export interface TunerBounds {
  readonly initial: number;
  readonly min: number;
  readonly max: number;
}

/**
 * What the limit starts from and stays within, for `cpus` CPUs (a cgroup quota, or the host's):
 * two helm runs per CPU to start with (a run waits on the API server for much of its time), and at
 * most four per CPU, at least six: each helm process holds 50-60 MiB, which a pod's memory limit
 * (the tuner does not read it) must still fit.
 */
export function tunerBounds(cpus: number): TunerBounds {
  const whole = Math.max(1, Math.ceil(cpus));
  return { initial: 2 * whole, min: 1, max: Math.max(6, 4 * whole) };
}

export interface TunerState {
  readonly limit: number;
  /** The best recent median duration of helm runs per verb (an uninstall is not an install), and of API latencies. */
  readonly helmBaselineMs?: Readonly<Record<string, number>>;
  readonly apiBaselineMs?: number;
}

/** What finished during one window. */
export interface Observations {
  /** Durations of the helm runs that ended, by verb. */
  readonly helmMs: Readonly<Record<string, readonly number[]>>;
  readonly apiMs: readonly number[];
  /** API answers with status 429 (Too Many Requests). */
  readonly throttled: number;
  /** Work waited for a slot during the window. */
  readonly saturated: boolean;
}

export type Reason = 'throttled' | 'slower' | 'probe' | 'hold';

/** Fewer samples than these say nothing about latency. */
const MIN_HELM_SAMPLES = 3;
const MIN_API_SAMPLES = 5;
/** How much slower than the baseline counts as saturated: helm runs queue on the CPU first. */
const HELM_TOLERANCE = 2;
const API_TOLERANCE = 3;
/** A baseline rises this much per window at most, so a lasting change (a bigger chart) is learnt, slowly. */
const BASELINE_DRIFT = 1.02;
const DECREASE = 0.75;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
}

/** The new baseline: the window's median when lower, else the old one drifting up. */
function baseline(old: number | undefined, samples: readonly number[], min: number): number | undefined {
  if (samples.length < min) return old;
  const m = median(samples);
  return old === undefined ? m : Math.min(m, old * BASELINE_DRIFT);
}

/** Pure: the next state from the last one and one window's observations. */
/** Whether `samples` are enough and their median over `tolerance` × `base`. */
const slowerThan = (samples: readonly number[], min: number, base: number | undefined, tolerance: number): boolean =>
  samples.length >= min && base !== undefined && median(samples) > tolerance * base;

export function decide(state: TunerState, obs: Observations, bounds: TunerBounds): { state: TunerState; reason: Reason } {
  const clamp = (n: number): number => Math.min(bounds.max, Math.max(bounds.min, n));
  const helm = Object.entries(obs.helmMs);
  const slower =
    helm.some(([verb, ms]) => slowerThan(ms, MIN_HELM_SAMPLES, state.helmBaselineMs?.[verb], HELM_TOLERANCE)) ||
    slowerThan(obs.apiMs, MIN_API_SAMPLES, state.apiBaselineMs, API_TOLERANCE);
  const helmBaselineMs: Record<string, number> = { ...state.helmBaselineMs };
  for (const [verb, ms] of helm) {
    const b = baseline(helmBaselineMs[verb], ms, MIN_HELM_SAMPLES);
    if (b !== undefined) helmBaselineMs[verb] = b;
  }
  const apiBaselineMs = baseline(state.apiBaselineMs, obs.apiMs, MIN_API_SAMPLES);
  const next = (limit: number): TunerState => ({
    limit: clamp(limit),
    ...(Object.keys(helmBaselineMs).length === 0 ? {} : { helmBaselineMs }),
    ...(apiBaselineMs === undefined ? {} : { apiBaselineMs }),
  });
  const finished = helm.some(([, ms]) => ms.length > 0);
  if (obs.throttled > 0) return { state: next(Math.floor(state.limit / 2)), reason: 'throttled' };
  if (slower) return { state: next(Math.min(state.limit - 1, Math.floor(state.limit * DECREASE))), reason: 'slower' };
  // Probe only with evidence that work completes at this width (a helm run finished in the window).
  if (obs.saturated && finished && state.limit < bounds.max) return { state: next(state.limit + 1), reason: 'probe' };
  return { state: next(state.limit), reason: 'hold' };
}

/** Verbs whose duration is a helm run of a reconcile (status and template reads are quick and many). */
const RELEASE_RUNS: ReadonlySet<string> = new Set(['install', 'upgrade', 'rollback', 'uninstall']);

export interface ConcurrencyTunerOptions {
  readonly bounds: TunerBounds;
  /** Default 3 s. */
  readonly windowMs?: number;
  /** Sees every change of the limit (the metric, the log). */
  readonly onChange?: (limit: number, reason: Reason) => void;
}

/** Collects observations, decides once per window and resizes {@link gate}. */
export class ConcurrencyTuner {
  readonly gate: AdaptiveGate;
  readonly bounds: TunerBounds;
  readonly #windowMs: number;
  readonly #onChange: ((limit: number, reason: Reason) => void) | undefined;
  #state: TunerState;
  #helmMs: Record<string, number[]> = {};
  #apiMs: number[] = [];
  #throttled = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: ConcurrencyTunerOptions) {
    this.bounds = options.bounds;
    this.#windowMs = options.windowMs ?? 3_000;
    this.#onChange = options.onChange;
    this.#state = { limit: options.bounds.initial };
    // Past the tuned width only for a namespace holding no slot (adaptive-gate.ts), never past the ceiling of workers.
    this.gate = new AdaptiveGate(options.bounds.initial, options.bounds.max);
  }

  get limit(): number {
    return this.#state.limit;
  }

  /**
   * A helm process ended (the helm runner's observer). A batched uninstall counts as its time per
   * release: a batch of ten is not a run ten times slower than its baseline.
   */
  observeHelm(e: { readonly verb: string; readonly durationMs: number; readonly releases?: number }): void {
    if (RELEASE_RUNS.has(e.verb)) (this.#helmMs[e.verb] ??= []).push(e.durationMs / Math.max(1, e.releases ?? 1));
  }

  /** An API request was answered. */
  observeApi(status: number, durationMs: number): void {
    if (status === 429) this.#throttled++;
    else this.#apiMs.push(durationMs);
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      this.tick();
    }, this.#windowMs);
    // Tuning alone must not keep the process alive.
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Ends the window: decides, resizes the gate, starts the next window. */
  tick(): Reason {
    const obs: Observations = {
      helmMs: this.#helmMs,
      apiMs: this.#apiMs,
      throttled: this.#throttled,
      saturated: this.gate.takeSaturated(),
    };
    this.#helmMs = {};
    this.#apiMs = [];
    this.#throttled = 0;
    const before = this.#state.limit;
    const { state, reason } = decide(this.#state, obs, this.bounds);
    this.#state = state;
    if (state.limit !== before) {
      this.gate.limit = state.limit;
      this.#onChange?.(state.limit, reason);
    }
    return reason;
  }
}
