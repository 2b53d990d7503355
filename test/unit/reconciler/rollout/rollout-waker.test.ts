/**
 * The waker on the manual clock: whom it wakes and when, read from the cache when its look is
 * due, through the controller's request source; and nothing once that source is stopped.
 */
import { describe, expect, it } from 'vitest';
import type { RolloutPolicy } from '../../../../src/config/rollout-policy.js';
import type { Member } from '../../../../src/reconciler/rollout/rollout-gate.js';
import { DECIDE_MARGIN_MS, WaveWaker } from '../../../../src/reconciler/rollout/rollout-waker.js';
import { RequeueSource } from '../../../../src/runtime/requeue-source.js';
import { ManualClock } from '../../../../src/util/clock.js';

const POLICY: RolloutPolicy = {
  canary: { count: 1 },
  waveSize: { count: 2 },
  healthTimeoutMs: 60_000,
  stableForMs: 10_000,
  failureBudget: { count: 0 },
  pauseBetweenWavesMs: 0,
};
const OLD = 'r1';
const TARGET = 'r2';

const waiting = (name: string): Member => ({ key: `ns/${name}`, labels: {}, fleetRevision: OLD, ready: { status: 'True', sinceMs: 0 } });
/** Moved to the target at `atMs`, Ready since then (`ready: false`: not Ready). */
const moved = (name: string, atMs: number, o: { ready?: boolean; failed?: boolean } = {}): Member => ({
  key: `ns/${name}`,
  labels: {},
  fleetRevision: TARGET,
  attempt: { fleetRevision: TARGET, atMs, failed: o.failed === true },
  ready: { status: o.ready === false ? 'False' : 'True', sinceMs: atMs },
});

function setup(policy: RolloutPolicy = POLICY) {
  const clock = new ManualClock(1_000_000);
  const source = new RequeueSource(clock);
  const woken: string[] = [];
  source.start((r) => woken.push(`${r.namespace}/${r.name}`));
  /** The cache as the look reads it when due. */
  let members: Member[] = [];
  const waker = new WaveWaker({ policy, wakeups: source, members: () => members, now: () => clock.now() });
  return {
    clock,
    source,
    woken,
    waker,
    cache: (m: Member[]) => {
      members = m;
    },
  };
}

describe('WaveWaker', () => {
  it("looks when the canary's health window ends, not before, and wakes the next wave from what the cache says then", () => {
    const { clock, woken, waker, cache } = setup();
    const t0 = clock.now();
    const canary = moved('a', t0);
    cache([canary, waiting('b'), waiting('c'), waiting('d')]);
    waker.after(() => [canary, waiting('b'), waiting('c'), waiting('d')], canary, {
      target: TARGET,
      newlyFailed: false,
      decideInMs: POLICY.stableForMs + DECIDE_MARGIN_MS,
    });
    expect(woken).toEqual([]);
    clock.advance(POLICY.stableForMs + DECIDE_MARGIN_MS - 1);
    expect(woken).toEqual([]);
    clock.advance(1);
    // Wave 2 is b and c (waves of 2); d waits for them.
    expect(woken).toEqual(['ns/b', 'ns/c']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('re-arms at the end of the next window it reads, and wakes each CR once per target', () => {
    const { clock, woken, waker, cache } = setup();
    const t0 = clock.now();
    const canary = moved('a', t0);
    cache([canary, waiting('b'), waiting('c'), waiting('d')]);
    waker.after(() => [canary], canary, { target: TARGET, newlyFailed: false, decideInMs: POLICY.stableForMs + DECIDE_MARGIN_MS });
    clock.advance(POLICY.stableForMs + DECIDE_MARGIN_MS);
    expect(woken).toEqual(['ns/b', 'ns/c']);
    // b and c upgrade; the look is armed by the last one noted, and finds both stable then.
    const t1 = clock.now();
    const wave2 = [moved('b', t1), moved('c', t1)];
    cache([canary, ...wave2, waiting('d')]);
    for (const m of wave2)
      waker.after(() => [canary, ...wave2, waiting('d')], m, {
        target: TARGET,
        newlyFailed: false,
        decideInMs: POLICY.stableForMs + DECIDE_MARGIN_MS,
      });
    clock.advance(POLICY.stableForMs + DECIDE_MARGIN_MS);
    expect(woken).toEqual(['ns/b', 'ns/c', 'ns/d']);
    // The same turn seen again (a late reconcile of c) wakes nobody twice.
    waker.after(() => [canary, ...wave2, waiting('d')], wave2[1]!, { target: TARGET, newlyFailed: false });
    expect(woken).toEqual(['ns/b', 'ns/c', 'ns/d']);
  });

  it('waits out the pause between waves on the clock', () => {
    const { clock, woken, waker, cache } = setup({ ...POLICY, pauseBetweenWavesMs: 30_000 });
    const canary = moved('a', clock.now());
    cache([canary, waiting('b')]);
    waker.after(() => [canary, waiting('b')], canary, {
      target: TARGET,
      newlyFailed: false,
      decideInMs: POLICY.stableForMs + DECIDE_MARGIN_MS,
    });
    clock.advance(POLICY.stableForMs + DECIDE_MARGIN_MS);
    expect(woken).toEqual([]);
    clock.advance(30_000 - DECIDE_MARGIN_MS - 1);
    expect(woken).toEqual([]);
    clock.advance(1);
    expect(woken).toEqual(['ns/b']);
  });

  it('a CR that fails wakes every waiting CR at once, to say halted, and only once', () => {
    const { clock, woken, waker } = setup();
    const failed = moved('a', clock.now(), { ready: false, failed: true });
    const members = [failed, waiting('b'), waiting('c'), waiting('d')];
    waker.after(() => members, failed, { target: TARGET, newlyFailed: true });
    expect(woken).toEqual(['ns/b', 'ns/c', 'ns/d']);
    waker.after(() => members, failed, { target: TARGET, newlyFailed: true });
    expect(woken).toHaveLength(3);
  });

  it('stops with its controller: once the source is stopped no look is pending and nothing is woken however far the clock goes', () => {
    const { clock, source, woken, waker, cache } = setup();
    const canary = moved('a', clock.now());
    cache([canary, waiting('b')]);
    waker.after(() => [canary, waiting('b')], canary, {
      target: TARGET,
      newlyFailed: false,
      decideInMs: POLICY.stableForMs + DECIDE_MARGIN_MS,
    });
    expect(clock.pendingTimers()).toBe(1);
    source.stop();
    expect(clock.pendingTimers()).toBe(0);
    clock.advance(10 * 60_000);
    // A reconcile still finishing after the stop arms nothing either.
    waker.after(() => [canary, waiting('b')], canary, { target: TARGET, newlyFailed: false, decideInMs: 1_000 });
    clock.advance(10 * 60_000);
    expect(woken).toEqual([]);
    expect(clock.pendingTimers()).toBe(0);
  });
});
