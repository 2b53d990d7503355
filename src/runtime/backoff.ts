/**
 * Backoff utilities shared by the work queue and the informer, on the injected {@link Clock}
 * (src/util/clock.ts), so retry schedules are unit-testable without real waiting.
 */
import { systemClock, type Clock } from '../util/clock.js';

export interface ItemBackoffOptions {
  /** Delay after the first failure. Default 1 s (the brief's "never a hot loop"). */
  baseMs?: number;
  /** Upper bound of any delay. Default 5 min. */
  capMs?: number;
  /**
   * Fraction of random spread added on top of the delay, `0` (default) for none: `0.1` turns a
   * 10 s delay into 10–11 s. Off by default so schedules stay predictable in logs and tests.
   */
  jitter?: number;
  /** Random source in [0, 1) for jitter; injectable for tests. */
  random?: () => number;
}

/**
 * Per-key exponential backoff (client-go's ItemExponentialFailureRateLimiter): the n-th consecutive
 * failure of a key waits `base * 2^(n-1)`, capped; `forget` resets a key after a success.
 */
export class ItemBackoff {
  readonly #failures = new Map<string, number>();
  readonly #baseMs: number;
  readonly #capMs: number;
  readonly #jitter: number;
  readonly #random: () => number;

  constructor(options: ItemBackoffOptions = {}) {
    this.#baseMs = options.baseMs ?? 1_000;
    this.#capMs = options.capMs ?? 5 * 60_000;
    this.#jitter = options.jitter ?? 0;
    this.#random = options.random ?? Math.random;
    if (this.#baseMs <= 0 || this.#capMs < this.#baseMs) throw new RangeError('backoff needs 0 < baseMs <= capMs');
  }

  /** Records one more failure of `key` and returns how long to wait before retrying it. */
  when(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    // 2^failures overflows to Infinity past ~1024 failures; Math.min still yields the cap.
    const delay = Math.min(this.#baseMs * 2 ** failures, this.#capMs);
    return this.#jitter > 0 ? Math.min(delay * (1 + this.#jitter * this.#random()), this.#capMs) : delay;
  }

  /** Consecutive failures recorded for `key` since it was last forgotten. */
  numRequeues(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Resets `key`: its next failure waits the base delay again. */
  forget(key: string): void {
    this.#failures.delete(key);
  }
}

export interface BackoffOptions {
  /** Default 1 s. */
  initialMs?: number;
  /** Default 30 s. */
  maxMs?: number;
  /** A failure this long after the previous one starts again from `initialMs`. Default 60 s. */
  resetAfterMs?: number;
  clock?: Clock;
}

/**
 * A single backoff sequence (1 s, 2 s, 4 s … 30 s) for one failing thing, such as an informer's
 * restarts. It resets itself after a quiet period so a watch that broke once an hour restarts fast.
 */
export class Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #resetAfterMs: number;
  readonly #clock: Clock;
  #nextMs: number;
  #lastFailureAt: number | undefined;

  constructor(options: BackoffOptions = {}) {
    this.#initialMs = options.initialMs ?? 1_000;
    this.#maxMs = options.maxMs ?? 30_000;
    this.#resetAfterMs = options.resetAfterMs ?? 60_000;
    this.#clock = options.clock ?? systemClock;
    this.#nextMs = this.#initialMs;
  }

  /** Records a failure now and returns the delay to wait before the next attempt. */
  next(): number {
    const now = this.#clock.now();
    if (this.#lastFailureAt !== undefined && now - this.#lastFailureAt > this.#resetAfterMs) this.reset();
    const delay = this.#nextMs;
    this.#nextMs = Math.min(delay * 2, this.#maxMs);
    this.#lastFailureAt = now;
    return delay;
  }

  reset(): void {
    this.#nextMs = this.#initialMs;
    this.#lastFailureAt = undefined;
  }
}

/**
 * `ms` spread by up to `fraction` either way (`0.05`: 60 s becomes 57–63 s), so that periods
 * started together, such as the resyncs of CRs installed or listed in one burst, drift apart
 * instead of coming back in the same burst each time. The mean stays `ms`. `random`: in [0, 1).
 */
export function jitter(ms: number, fraction: number, random: () => number = Math.random): number {
  if (!(fraction >= 0 && fraction < 1)) throw new RangeError(`jitter fraction must be in [0, 1), got ${fraction}`);
  return Math.round(ms * (1 + fraction * (2 * random() - 1)));
}
