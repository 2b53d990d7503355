import { describe, expect, it } from 'vitest';
import { AdaptiveGate } from '../../../src/runtime/adaptive-gate.js';
import { ConcurrencyTuner, decide, tunerBounds, type Observations, type TunerState } from '../../../src/runtime/concurrency-tuner.js';

const bounds = { initial: 2, min: 1, max: 8 };
const quiet: Observations = { helmMs: {}, apiMs: [], throttled: 0, saturated: false };
const measured: TunerState = { limit: 4, helmBaselineMs: { install: 1000 }, apiBaselineMs: 10 };

describe('tunerBounds', () => {
  it('starts from two runs per CPU the limit allows and may grow to four per CPU, at least six', () => {
    expect(tunerBounds(1)).toEqual({ initial: 2, min: 1, max: 6 });
    expect(tunerBounds(0.5)).toEqual({ initial: 2, min: 1, max: 6 });
    expect(tunerBounds(2.5)).toEqual({ initial: 6, min: 1, max: 12 });
  });
});

describe('decide', () => {
  it('adds one slot when work waited and helm runs finished at their usual speed', () => {
    const r = decide(measured, { ...quiet, helmMs: { install: [900, 1100, 1000] }, saturated: true }, bounds);
    expect(r).toMatchObject({ reason: 'probe', state: { limit: 5 } });
  });

  it('does not probe without a finished helm run, without waiting work, or at the ceiling', () => {
    expect(decide(measured, { ...quiet, saturated: true }, bounds).reason).toBe('hold');
    expect(decide(measured, { ...quiet, helmMs: { install: [1000] } }, bounds).reason).toBe('hold');
    expect(decide({ ...measured, limit: 8 }, { ...quiet, helmMs: { install: [1000] }, saturated: true }, bounds)).toMatchObject({
      reason: 'hold',
      state: { limit: 8 },
    });
  });

  it('takes a quarter off when helm runs take over twice their baseline (the CPU is saturated)', () => {
    const r = decide(measured, { ...quiet, helmMs: { install: [2500, 2600, 2400] }, saturated: true }, bounds);
    expect(r).toMatchObject({ reason: 'slower', state: { limit: 3 } });
    // Each verb against its own baseline: slow uninstalls are not compared with fast installs.
    const mixed = decide(
      { ...measured, helmBaselineMs: { install: 1000, uninstall: 3000 } },
      { ...quiet, helmMs: { uninstall: [3100, 3200, 3000] }, saturated: true },
      bounds,
    );
    expect(mixed.reason).toBe('probe');
  });

  it('takes a quarter off when API requests take over three times their baseline', () => {
    const r = decide({ ...measured, limit: 8 }, { ...quiet, apiMs: [40, 35, 50, 45, 38], saturated: true }, bounds);
    expect(r).toMatchObject({ reason: 'slower', state: { limit: 6 } });
  });

  it('halves on a 429, and never goes below the minimum', () => {
    expect(decide({ ...measured, limit: 7 }, { ...quiet, throttled: 1 }, bounds)).toMatchObject({
      reason: 'throttled',
      state: { limit: 3 },
    });
    expect(decide({ ...measured, limit: 1 }, { ...quiet, throttled: 5 }, bounds).state.limit).toBe(1);
    expect(decide({ ...measured, limit: 1 }, { ...quiet, helmMs: { install: [5000, 5000, 5000] } }, bounds).state.limit).toBe(1);
  });

  it('judges latency only on enough samples: one slow run is noise', () => {
    expect(decide(measured, { ...quiet, helmMs: { install: [9000] } }, bounds).reason).toBe('hold');
    expect(decide(measured, { ...quiet, apiMs: [500, 500] }, bounds).reason).toBe('hold');
  });

  it('learns the baseline from the first window, lowers it at once and raises it only slowly', () => {
    const first = decide({ limit: 2 }, { ...quiet, helmMs: { install: [800, 1200, 1000] }, apiMs: [10, 12, 11, 9, 10] }, bounds).state;
    expect(first).toMatchObject({ helmBaselineMs: { install: 1000 }, apiBaselineMs: 10 });
    expect(decide(first, { ...quiet, helmMs: { install: [500, 500, 500] } }, bounds).state.helmBaselineMs).toEqual({ install: 500 });
    expect(decide(first, { ...quiet, helmMs: { install: [1500, 1500, 1500] } }, bounds).state.helmBaselineMs?.install).toBeCloseTo(1020);
  });
});

describe('AdaptiveGate', () => {
  it('lets `limit` holders in, queues the rest, and admits more when widened', async () => {
    const gate = new AdaptiveGate(1);
    const first = await gate.acquire();
    let second: (() => void) | undefined;
    const waiting = gate.acquire().then((release) => (second = release));
    await Promise.resolve();
    expect(second).toBeUndefined();
    expect(gate.takeSaturated()).toBe(true);
    gate.limit = 2;
    await waiting;
    expect(gate.running).toBe(2);
    first();
    first(); // a second release of the same slot changes nothing
    expect(gate.running).toBe(1);
    second?.();
    expect(gate.running).toBe(0);
    expect(gate.takeSaturated()).toBe(false);
  });

  it('narrows as running work finishes, without interrupting it', async () => {
    const gate = new AdaptiveGate(2);
    const [a, b] = [await gate.acquire(), await gate.acquire()];
    gate.limit = 1;
    let admitted = false;
    const c = gate.acquire().then((release) => {
      admitted = true;
      return release;
    });
    a();
    await Promise.resolve();
    expect(admitted).toBe(false);
    b();
    (await c)();
    expect(admitted).toBe(true);
    expect(() => (gate.limit = 0)).toThrow(RangeError);
  });

  it('lets a namespace that holds no slot past a width another namespace fills (its installs hang), up to the ceiling', async () => {
    const gate = new AdaptiveGate(2, 4);
    // Tenant a's installs hang: they hold the whole width, and a's next one waits.
    const held = [await gate.acquire('a'), await gate.acquire('a')];
    let aThird = false;
    void gate.acquire('a').then(() => (aThird = true));
    // Tenant b holds nothing: in at once, past the width; its second waits like anyone's.
    const b = await gate.acquire('b');
    expect(gate.running).toBe(3);
    let bSecond: (() => void) | undefined;
    const bWaits = gate.acquire('b').then((release) => (bSecond = release));
    // c as well, and then the ceiling holds even for a namespace with no slot.
    const c = await gate.acquire('c');
    let d = false;
    const dIn = gate.acquire('d').then((release) => ((d = true), release));
    await Promise.resolve();
    expect({ running: gate.running, aThird, bSecond, d }).toEqual({ running: 4, aThird: false, bSecond: undefined, d: false });
    // b's slot freed: b holds none again, so its waiting one is let in (still at the ceiling: d waits).
    b();
    await bWaits;
    expect({ running: gate.running, d }).toEqual({ running: 4, d: false });
    c();
    (await dIn)();
    expect(d).toBe(true);
    for (const release of held) release();
    bSecond?.();
  });

  it('keeps arrival order within the width when no namespace is named', async () => {
    const gate = new AdaptiveGate(1, 4);
    const first = await gate.acquire();
    const order: string[] = [];
    const x = gate.acquire().then((r) => (order.push('x'), r));
    const y = gate.acquire().then((r) => (order.push('y'), r));
    await Promise.resolve();
    expect(order).toEqual([]);
    first();
    (await x)();
    (await y)();
    expect(order).toEqual(['x', 'y']);
  });
});

describe('ConcurrencyTuner', () => {
  it('resizes its gate from what it observed, and reports each change', async () => {
    const changes: [number, string][] = [];
    const tuner = new ConcurrencyTuner({ bounds, onChange: (limit, reason) => changes.push([limit, reason]) });
    const held = [await tuner.gate.acquire(), await tuner.gate.acquire()];
    const queued = tuner.gate.acquire();
    for (const ms of [1000, 1000, 1000]) tuner.observeHelm({ verb: 'install', durationMs: ms });
    tuner.observeHelm({ verb: 'status', durationMs: 99_999 }); // not a helm run of a reconcile
    expect(tuner.tick()).toBe('probe');
    expect(tuner.gate.limit).toBe(3);
    (await queued)();
    tuner.observeApi(429, 5);
    expect(tuner.tick()).toBe('throttled');
    expect(tuner.limit).toBe(1);
    expect(changes).toEqual([
      [3, 'probe'],
      [1, 'throttled'],
    ]);
    for (const release of held) release();
  });

  it('takes a batched uninstall at its time per release: ten releases in ten seconds are not a slow run', () => {
    const tuner = new ConcurrencyTuner({ bounds });
    for (const ms of [1000, 1000, 1000]) tuner.observeHelm({ verb: 'uninstall', durationMs: ms });
    expect(tuner.tick()).toBe('hold');
    for (const ms of [10_000, 9_000, 11_000]) tuner.observeHelm({ verb: 'uninstall', durationMs: ms, releases: 10 });
    expect(tuner.tick()).toBe('hold');
    expect(tuner.limit).toBe(bounds.initial);
    // The same durations for one release each are past the knee.
    for (const ms of [10_000, 9_000, 11_000]) tuner.observeHelm({ verb: 'uninstall', durationMs: ms });
    expect(tuner.tick()).toBe('slower');
  });
});
