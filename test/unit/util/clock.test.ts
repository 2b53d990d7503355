import { describe, expect, it } from 'vitest';
import { ManualClock, TIMED_OUT, withDeadline } from '../../../src/util/clock.js';

describe('ManualClock', () => {
  it('fires due timers in time order, then scheduling order, and honours cancel', () => {
    const clock = new ManualClock(1_000);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('b'), 20);
    clock.setTimeout(() => fired.push('a'), 10);
    clock.setTimeout(() => fired.push('b2'), 20);
    const cancelled = clock.setTimeout(() => fired.push('never'), 5);
    cancelled.cancel();
    clock.advance(15);
    expect(fired).toEqual(['a']);
    expect(clock.now()).toBe(1_015);
    clock.advance(5);
    expect(fired).toEqual(['a', 'b', 'b2']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('runs timers scheduled by callbacks when they fall due inside the window', () => {
    const clock = new ManualClock();
    const at: number[] = [];
    clock.setTimeout(() => {
      at.push(clock.now());
      clock.setTimeout(() => at.push(clock.now()), 10);
    }, 10);
    clock.advance(25);
    expect(at).toEqual([10, 20]);
    expect(clock.now()).toBe(25);
  });
});

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
