import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/runtime/backoff.js';
import { TIMED_OUT, withDeadline } from '../../../src/runtime/deadline.js';

describe('withDeadline', () => {
  it('resolves with the value when the promise settles in time, and cancels its timer', async () => {
    const clock = new ManualClock();
    expect(await withDeadline(Promise.resolve(7), 1_000, clock)).toBe(7);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('resolves with TIMED_OUT once the clock passes the deadline; a later rejection is not unhandled', async () => {
    const clock = new ManualClock();
    const late = Promise.withResolvers<number>();
    const result = withDeadline(late.promise, 1_000, clock);
    clock.advance(999);
    await Promise.resolve();
    clock.advance(1);
    expect(await result).toBe(TIMED_OUT);
    late.reject(new Error('too late'));
    await new Promise((r) => setImmediate(r));
  });

  it('rethrows a rejection within the window', async () => {
    const clock = new ManualClock();
    await expect(withDeadline(Promise.reject(new Error('refused')), 1_000, clock)).rejects.toThrow('refused');
    expect(clock.pendingTimers()).toBe(0);
  });
});
