import { afterEach, describe, expect, it, vi } from 'vitest';
import { LONGEST_NODE_TIMER_MS, ManualClock, TIMED_OUT, systemClock, withDeadline } from '../../../src/util/clock.js';

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

describe('systemClock', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  // A CR's reconcile-period annotation of 1000h: Node would run such a timer after 1 ms, a busy loop.
  it('waits out a delay longer than one Node timer holds, and cancels it midway', () => {
    vi.useFakeTimers();
    const days = (n: number): number => n * 24 * 3_600_000;
    let fired = 0;
    systemClock.setTimeout(() => fired++, days(60));
    const cancelled = systemClock.setTimeout(() => fired++, days(60));
    vi.advanceTimersByTime(1_000);
    expect(fired).toBe(0);
    vi.advanceTimersByTime(LONGEST_NODE_TIMER_MS);
    expect(fired).toBe(0);
    cancelled.cancel();
    vi.advanceTimersByTime(days(60) - LONGEST_NODE_TIMER_MS - 1_001);
    expect(fired).toBe(0);
    vi.advanceTimersByTime(1);
    expect(fired).toBe(1);
    vi.advanceTimersByTime(days(60));
    expect(fired).toBe(1);
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
