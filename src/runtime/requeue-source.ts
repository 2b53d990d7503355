/**
 * Requests for reconciles that come from the reconciler's own parts instead of a watch event: a
 * batched uninstall's peers, the next wave of a rollout. Like controller-runtime's `source.Channel`
 * and kube-rs's `reconcile_on`, they are a source registered on the controller, which drains it
 * into its queue while it runs: the reconciler holds only the write end ({@link Requeue},
 * {@link Wakeups}) and never its controller, so data still flows one way (event → key → reconcile
 * → result; docs/adr/0073). Whoever assembles the controller (src/operator) creates the source.
 */
import { systemClock, type Clock, type Timer } from '../util/clock.js';
import type { Request } from './reconcile.js';

/** The write end the reconciler's parts hold: asks for a reconcile of another object of the kind. */
export interface Requeue {
  request(request: Request): void;
}

/**
 * A {@link Requeue} that also looks again later: `look` runs at `atMs` on the source's clock,
 * unless the controller stopped by then (no timer outlives it). For a decision read from the cache
 * when it is due (a rollout's health window ending), not a key known now.
 */
export interface Wakeups extends Requeue {
  at(atMs: number, look: () => void): Timer;
}

/** A source of requests besides the controller's informers: started with the workers, stopped with the controller. */
export interface RequestSource {
  /** From now on, every request goes to `enqueue`. */
  start(enqueue: (request: Request) => void): void;
  /** Drops later requests and cancels every pending look. */
  stop(): void;
}

/**
 * The channel: requests made while no controller drains it (before its start, after its stop) are
 * dropped, as a starting controller lists and queues every object anyway, and a stopped one
 * reconciles nothing more. Once stopped it stays stopped (a restarted kind gets a new source).
 */
export class RequeueSource implements Wakeups, RequestSource {
  readonly #clock: Clock;
  #enqueue: ((request: Request) => void) | undefined;
  #stopped = false;
  readonly #looks = new Set<Timer>();

  constructor(clock: Clock = systemClock) {
    this.#clock = clock;
  }

  start(enqueue: (request: Request) => void): void {
    if (!this.#stopped) this.#enqueue = enqueue;
  }

  stop(): void {
    this.#stopped = true;
    this.#enqueue = undefined;
    for (const t of this.#looks) t.cancel();
    this.#looks.clear();
  }

  request(request: Request): void {
    this.#enqueue?.(request);
  }

  at(atMs: number, look: () => void): Timer {
    if (this.#stopped) return { cancel: () => undefined };
    const timer: Timer = this.#clock.setTimeout(
      () => {
        this.#looks.delete(timer);
        look();
      },
      Math.max(0, atMs - this.#clock.now()),
    );
    this.#looks.add(timer);
    return {
      cancel: () => {
        timer.cancel();
        this.#looks.delete(timer);
      },
    };
  }
}
