import { describe, expect, it } from 'vitest';
import { mapBounded } from '../../../src/runtime/bounded.js';

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('mapBounded', () => {
  it('keeps the order of the items whatever order the calls end in', async () => {
    expect(await mapBounded([30, 10, 20, 0], 4, async (ms, i) => { await tick(ms); return `${i}:${ms}`; })).toEqual(['0:30', '1:10', '2:20', '3:0']);
  });

  it('never has more than `width` calls in flight, and uses all of them', async () => {
    let inFlight = 0;
    let most = 0;
    await mapBounded(Array.from({ length: 12 }, (_, i) => i), 3, async (i) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await tick(i % 4);
      inFlight--;
    });
    expect(most).toBe(3);
  });

  it('rejects with the first failure', async () => {
    await expect(mapBounded([1, 2, 3], 2, async (n) => { await tick(n); if (n === 2) throw new Error('two'); return n; })).rejects.toThrow('two');
  });

  it('handles no items, and refuses a width below 1', async () => {
    expect(await mapBounded([], 4, () => Promise.resolve(1))).toEqual([]);
    await expect(mapBounded([1], 0, () => Promise.resolve(1))).rejects.toThrow(RangeError);
  });
});
