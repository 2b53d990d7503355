/**
 * A promise raced against a deadline on a {@link Clock}: the one place the runtime bounds a wait
 * (lease I/O, cache sync, draining reconciles, dependent watches), so each is unit-testable with a
 * ManualClock and none leaves a timer or an unhandled rejection behind.
 */
import { systemClock, type Clock, type Timer } from './backoff.js';

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
