import { describe, expect, it } from 'vitest';
import { countFailedRepair, DRIFT_REPAIR_ATTEMPTS, driftRepairStopped } from '../../../../src/reconciler/drift/drift-budget.js';
import { readStatus } from '../../../../src/reconciler/status/status.js';

const at = { revision: 3, generation: 7 };

describe('the drift repair budget', () => {
  it('allows five failed passes, and the fifth is the one that says retries are exhausted', () => {
    let record = undefined as ReturnType<typeof countFailedRepair>['record'] | undefined;
    const exhausted: boolean[] = [];
    for (let pass = 1; pass <= DRIFT_REPAIR_ATTEMPTS; pass++) {
      expect(driftRepairStopped(record, at)).toBe(false);
      const next = countFailedRepair(record, at);
      record = next.record;
      exhausted.push(next.exhausted);
    }
    expect(DRIFT_REPAIR_ATTEMPTS).toBe(5);
    expect(exhausted).toEqual([false, false, false, false, true]);
    expect(record).toEqual({ revision: 3, generation: 7, count: 5 });
  });

  it('stays stopped for the same revision and spec: no further pass, so no further count or warning', () => {
    const spent = { revision: 3, generation: 7, count: 5 };
    expect(driftRepairStopped(spent, at)).toBe(true);
    // Read back from status after a restart, it still is.
    expect(driftRepairStopped(readStatus({ driftRepairFailures: spent }).driftRepairFailures, at)).toBe(true);
  });

  it.each([
    ['a new revision (an upgrade)', { revision: 4, generation: 7 }],
    ['a spec change (a new generation)', { revision: 3, generation: 8 }],
  ])('starts again after %s', (_what, key) => {
    const spent = { revision: 3, generation: 7, count: 5 };
    expect(driftRepairStopped(spent, key)).toBe(false);
    expect(countFailedRepair(spent, key)).toEqual({ record: { ...key, count: 1 }, exhausted: false });
  });

  it('counts a record written before generations were kept as the same spec only without a generation', () => {
    const old = { revision: 3, count: 5 };
    expect(driftRepairStopped(old, { revision: 3 })).toBe(true);
    expect(driftRepairStopped(old, at)).toBe(false);
  });

  it('reads a malformed record as none', () => {
    expect(readStatus({ driftRepairFailures: { revision: '3', count: 5 } }).driftRepairFailures).toBeUndefined();
    expect(readStatus({ driftRepairFailures: { revision: 3, count: 2, generation: 'x' } }).driftRepairFailures).toEqual({
      revision: 3,
      count: 2,
    });
  });
});
