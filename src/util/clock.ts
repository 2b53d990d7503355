/**
 * Time as every layer takes it: injected through {@link Clock}, so whatever waits or schedules
 * (retries, deadlines, a rollout's wake-ups) is unit-testable without real waiting
 * ({@link ManualClock}). A leaf of src/util, so the config loop and the reconciler use the same one
 * as the runtime. {@link withDeadline} is the one place a wait is bounded (lease I/O, cache sync,
 * draining reconciles, dependent watches, flushing Events): none leaves a timer or an unhandled
 * rejection behind.
 */

/** A scheduled callback; `cancel()` is idempotent and harmless after the callback ran. */
export interface Timer {
  cancel(): void;
}

/** Wall-clock milliseconds and one-shot timers: the only time source of the operator's loops. */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): Timer;
}

/**
 * The longest delay one Node timer holds (2^31 - 1 ms, about 24.8 days). Node runs a longer one
 * after 1 ms, so a reconcile period of `1000h` (which a CR's annotation may ask for) would become
 * a busy loop: the system clock waits such a delay out in steps of at most this.
 */
export const LONGEST_NODE_TIMER_MS = 2 ** 31 - 1;

/** The real clock. Timers keep the process alive: every owner cancels its timers on shutdown. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(callback: () => void, ms: number): Timer {
    const due = Date.now() + ms;
    let handle: NodeJS.Timeout;
    const arm = (wait: number): void => {
      handle = setTimeout(
        () => {
          const left = due - Date.now();
          if (left > 0 && wait === LONGEST_NODE_TIMER_MS) arm(Math.min(left, LONGEST_NODE_TIMER_MS));
          else callback();
        },
        Math.max(0, wait),
      );
    };
    arm(Math.min(ms, LONGEST_NODE_TIMER_MS));
    return {
      cancel: () => {
        clearTimeout(handle);
      },
    };
  },
};

interface ManualTimer {
  readonly at: number;
  readonly seq: number;
  readonly callback: () => void;
}

/**
 * A clock that only moves when told to. `advance(ms)` runs due timers in time order (ties in
 * scheduling order), including timers scheduled by those callbacks if they fall due in the window.
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: ManualTimer[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): Timer {
    const timer: ManualTimer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, callback };
    this.#timers.push(timer);
    return {
      cancel: () => {
        this.#timers = this.#timers.filter((t) => t !== timer);
      },
    };
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (let next = this.#nextDue(target); next !== undefined; next = this.#nextDue(target)) {
      this.#timers = this.#timers.filter((t) => t !== next);
      this.#now = Math.max(this.#now, next.at);
      next.callback();
    }
    this.#now = target;
  }

  /** Number of timers not yet fired or cancelled. */
  pendingTimers(): number {
    return this.#timers.length;
  }

  #nextDue(target: number): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const t of this.#timers) {
      if (t.at <= target && (best === undefined || t.at < best.at || (t.at === best.at && t.seq < best.seq))) best = t;
    }
    return best;
  }
}

/** What {@link withDeadline} resolves with when `promise` did not settle in time. */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * `promise`'s value, or {@link TIMED_OUT} if it does not settle within `ms`. A rejection within the
 * window is rethrown; one after it is ignored (not "unhandled"). The timer is cancelled either way.
 */
export async function withDeadline<T>(promise: Promise<T>, ms: number, clock: Clock = systemClock): Promise<T | typeof TIMED_OUT> {
  let timer: Timer | undefined;
  const expired = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = clock.setTimeout(() => {
      resolve(TIMED_OUT);
    }, ms);
  });
  promise.catch(() => undefined);
  try {
    return await Promise.race([promise, expired]);
  } finally {
    timer?.cancel();
  }
}
