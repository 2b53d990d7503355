import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/util/clock.js';
import { Backoff, ItemBackoff, jitter } from '../../../src/runtime/backoff.js';

describe('ItemBackoff', () => {
  it('doubles per consecutive failure from the base, up to the cap', () => {
    const b = new ItemBackoff({ baseMs: 1_000, capMs: 10_000 });
    expect([1, 2, 3, 4, 5, 6].map(() => b.when('a'))).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
    expect(b.numRequeues('a')).toBe(6);
  });

  it('defaults to 1 s base and a 5 min cap, and never overflows past the cap', () => {
    const b = new ItemBackoff();
    expect(b.when('a')).toBe(1_000);
    for (let i = 0; i < 2_000; i++) b.when('a');
    expect(b.when('a')).toBe(300_000);
  });

  it('tracks keys independently and forget resets one key', () => {
    const b = new ItemBackoff({ baseMs: 10, capMs: 1_000 });
    b.when('a');
    b.when('a');
    expect(b.when('b')).toBe(10);
    b.forget('a');
    expect(b.numRequeues('a')).toBe(0);
    expect(b.when('a')).toBe(10);
    expect(b.numRequeues('b')).toBe(1);
  });

  it('adds jitter only when asked, within the cap', () => {
    const b = new ItemBackoff({ baseMs: 100, capMs: 1_000, jitter: 0.5, random: () => 0.5 });
    expect(b.when('a')).toBe(125);
    for (let i = 0; i < 10; i++) b.when('a');
    expect(b.when('a')).toBe(1_000);
  });

  it('rejects a base larger than the cap', () => {
    expect(() => new ItemBackoff({ baseMs: 10, capMs: 5 })).toThrow(RangeError);
  });
});

describe('Backoff', () => {
  it('goes 1 s → 30 s and stays there', () => {
    const clock = new ManualClock();
    const b = new Backoff({ clock });
    const delays = Array.from({ length: 7 }, () => {
      const d = b.next();
      clock.advance(d);
      return d;
    });
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
  });

  it('starts over after a quiet minute', () => {
    const clock = new ManualClock();
    const b = new Backoff({ clock });
    b.next();
    b.next();
    clock.advance(60_000);
    expect(b.next()).toBe(4_000); // exactly a minute is not quiet enough
    clock.advance(60_001);
    expect(b.next()).toBe(1_000);
  });

  it('reset() starts over at once', () => {
    const b = new Backoff({ clock: new ManualClock(), initialMs: 5, maxMs: 50 });
    b.next();
    b.next();
    b.reset();
    expect(b.next()).toBe(5);
  });
});

describe('jitter', () => {
  it('spreads a period by up to the fraction either way, centred on it', () => {
    expect(jitter(60_000, 0.05, () => 0)).toBe(57_000);
    expect(jitter(60_000, 0.05, () => 0.5)).toBe(60_000);
    expect(jitter(60_000, 0.05, () => 0.999_999)).toBe(63_000);
    expect(jitter(60_000, 0, () => 0.9)).toBe(60_000);
  });

  it('with the real random source, stays inside the bounds and does not repeat one value', () => {
    const seen = Array.from({ length: 200 }, () => jitter(1_000, 0.1));
    expect(Math.min(...seen)).toBeGreaterThanOrEqual(900);
    expect(Math.max(...seen)).toBeLessThanOrEqual(1_100);
    expect(new Set(seen).size).toBeGreaterThan(10);
  });

  it('rejects a fraction outside [0, 1)', () => {
    expect(() => jitter(1_000, 1)).toThrow(RangeError);
    expect(() => jitter(1_000, -0.1)).toThrow(RangeError);
    expect(() => jitter(1_000, Number.NaN)).toThrow(RangeError);
  });
});
