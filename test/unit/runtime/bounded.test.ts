import { describe, expect, it } from 'vitest';
import { boundedRunner, mapBounded } from '../../../src/runtime/bounded.js';

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('mapBounded', () => {
  it('keeps the order of the items whatever order the calls end in', async () => {
    expect(
      await mapBounded([30, 10, 20, 0], 4, async (ms, i) => {
        await tick(ms);
        return `${i}:${ms}`;
      }),
    ).toEqual(['0:30', '1:10', '2:20', '3:0']);
  });

  it('never has more than `width` calls in flight, and uses all of them', async () => {
    let inFlight = 0;
    let most = 0;
    await mapBounded(
      Array.from({ length: 12 }, (_, i) => i),
      3,
      async (i) => {
        inFlight++;
        most = Math.max(most, inFlight);
        await tick(i % 4);
        inFlight--;
      },
    );
    expect(most).toBe(3);
  });

  it('rejects with the first failure', async () => {
    await expect(
      mapBounded([1, 2, 3], 2, async (n) => {
        await tick(n);
        if (n === 2) throw new Error('two');
        return n;
      }),
    ).rejects.toThrow('two');
  });

  it('handles no items, and refuses a width below 1', async () => {
    expect(await mapBounded([], 4, () => Promise.resolve(1))).toEqual([]);
    await expect(mapBounded([1], 0, () => Promise.resolve(1))).rejects.toThrow(RangeError);
  });
});

describe('boundedRunner', () => {
  it('runs calls that arrive over time with at most `width` in flight, each with its own result', async () => {
    const run = boundedRunner(2);
    let inFlight = 0;
    let most = 0;
    const job = (i: number) => async (): Promise<number> => {
      inFlight++;
      most = Math.max(most, inFlight);
      await tick(i % 3);
      inFlight--;
      return i * 10;
    };
    const early = [0, 1, 2].map((i) => run(job(i)));
    await tick(1);
    const late = [3, 4, 5, 6].map((i) => run(job(i)));
    expect(await Promise.all([...early, ...late])).toEqual([0, 10, 20, 30, 40, 50, 60]);
    expect(most).toBe(2);
  });

  it('starts waiting calls in the order they arrived', async () => {
    const run = boundedRunner(1);
    const started: number[] = [];
    await Promise.all(
      [3, 1, 2, 0].map((ms, i) =>
        run(async () => {
          started.push(i);
          await tick(ms);
        }),
      ),
    );
    expect(started).toEqual([0, 1, 2, 3]);
  });

  it('frees the slot of a call that rejects, and rejects with its error', async () => {
    const run = boundedRunner(1);
    await expect(run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await run(() => Promise.resolve('next'))).toBe('next');
    expect(() => boundedRunner(0)).toThrow(RangeError);
  });
});
