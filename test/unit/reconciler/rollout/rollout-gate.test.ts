import { describe, expect, it } from 'vitest';
import { DEFAULT_ROLLOUT, type RolloutPolicy } from '../../../../src/config/rollout-policy.js';
import {
  gate,
  memberState,
  nextTurn,
  progress,
  WAITING_FALLBACK_MS,
  waves,
  type GateInput,
  type Member,
} from '../../../../src/reconciler/rollout/rollout-gate.js';
import { keepForRollout, memberOf } from '../../../../src/reconciler/rollout/rollout-members.js';
import { AS_FOUND } from './as-found.js';
import { attemptOnTarget } from '../../../../src/reconciler/rollout/rollout.js';

const T = 'v3';
const NOW = 1_000_000;
const POLICY: RolloutPolicy = {
  ...DEFAULT_ROLLOUT,
  canary: { count: 1 },
  waveSize: { count: 2 },
  healthTimeoutMs: 60_000,
  stableForMs: 10_000,
  failureBudget: { count: 0 },
};

/** A CR on v1 (Ready a long time), waiting for the rollout. */
const old = (name: string, labels: Record<string, string> = {}): Member => ({
  key: `ns/${name}`,
  labels,
  fleetRevision: 'v1',
  ready: { status: 'True', sinceMs: 0 },
});
/** Upgraded by the rollout `agoMs` before NOW, Ready since then (or not). */
const moved = (name: string, agoMs: number, ready = true): Member => ({
  key: `ns/${name}`,
  labels: {},
  fleetRevision: T,
  attempt: { fleetRevision: T, atMs: NOW - agoMs, failed: false },
  ready: { status: ready ? 'True' : 'False', sinceMs: NOW - agoMs },
});
const failed = (name: string, fleet = T): Member => ({ ...old(name), attempt: { fleetRevision: fleet, atMs: NOW - 1_000, failed: true } });

const ask = (self: string, members: Member[], over: Partial<GateInput> = {}): ReturnType<typeof gate> =>
  gate({ policy: POLICY, target: T, members, self: `ns/${self}`, paused: false, nowMs: NOW, pollMs: 5_000, ...over });

describe('rollout waves', () => {
  it('orders CRs by namespace/name: the canaries first, then waves of the policy size', () => {
    const members = ['e', 'a', 'd', 'c', 'b'].map((n) => old(n));
    expect(waves(members, POLICY).map((w) => w.map((m) => m.key))).toEqual([['ns/a'], ['ns/b', 'ns/c'], ['ns/d', 'ns/e']]);
  });

  it('takes the canaries by selector, and percentages of the whole kind rounded up', () => {
    const members = ['a', 'b', 'c', 'd', 'e'].map((n) => old(n, n === 'd' ? { tier: 'canary' } : {}));
    const policy: RolloutPolicy = { ...POLICY, canary: { selector: { matchLabels: { tier: 'canary' } } }, waveSize: { percent: 50 } };
    expect(waves(members, policy).map((w) => w.map((m) => m.key))).toEqual([['ns/d'], ['ns/a', 'ns/b', 'ns/c'], ['ns/e']]);
  });

  it('is one wave of everything with canary 0 and waveSize 100% (all at once)', () => {
    const policy: RolloutPolicy = { ...POLICY, canary: { count: 0 }, waveSize: { percent: 100 } };
    const members = ['a', 'b', 'c'].map((n) => old(n));
    expect(waves(members, policy)).toHaveLength(1);
    expect(ask('c', members, { policy })).toEqual({ kind: 'go' });
  });
});

describe('rollout gate', () => {
  it('lets the canary go first and holds the next wave until it is Ready and stable', () => {
    const members = [old('a'), old('b'), old('c')];
    expect(ask('a', members)).toEqual({ kind: 'go' });
    const waiting = ask('b', members);
    expect(waiting).toMatchObject({ kind: 'wait', reason: 'RolloutWaiting' });
    // Ready for 4 of the 10 s it must stay Ready: the canary's stable window wakes it (nextTurn); this is the fallback.
    const settling = ask('b', [moved('a', 4_000), old('b'), old('c')]);
    expect(settling).toMatchObject({ kind: 'wait', reason: 'RolloutWaiting', retryAfterMs: WAITING_FALLBACK_MS });
    expect(ask('b', [moved('a', 10_000), old('b'), old('c')])).toEqual({ kind: 'go' });
  });

  it('starts a wave only after every CR of each earlier wave, then the pause between waves', () => {
    const members = [moved('a', 60_000), moved('b', 30_000), old('c'), old('d')];
    expect(ask('d', members)).toMatchObject({
      kind: 'wait',
      reason: 'RolloutWaiting',
      message: expect.stringContaining('wave 2 of 3 (1 of 2 healthy') as unknown,
    });
    const done = [moved('a', 60_000), moved('b', 30_000), moved('c', 30_000), old('d')];
    expect(ask('d', done)).toEqual({ kind: 'go' });
    // Stable since NOW-20s; a 25 s pause starts wave 3 at NOW+5s.
    expect(ask('d', done, { policy: { ...POLICY, pauseBetweenWavesMs: 25_000 } })).toMatchObject({
      kind: 'wait',
      reason: 'RolloutWaiting',
      retryAfterMs: 5_000,
    });
  });

  it('counts a moved CR not Ready within the health timeout as failed, and halts beyond the budget', () => {
    expect(memberState(moved('a', 59_000, false), T, POLICY, NOW)).toEqual({ kind: 'progressing', untilMs: NOW + 1_000 });
    expect(memberState(moved('a', 61_000, false), T, POLICY, NOW)).toEqual({ kind: 'failed' });
    const members = [moved('a', 61_000, false), old('b'), old('c')];
    expect(ask('b', members)).toMatchObject({
      kind: 'wait',
      reason: 'RolloutHalted',
      message: expect.stringContaining('1 of 3 CRs failed') as unknown,
    });
    expect(progress(members, T, POLICY, NOW)).toEqual({ total: 3, onTarget: 0, failed: 1, halted: true });
  });

  it('goes past failures within the budget, and never retries the CR that failed', () => {
    const members = [failed('a'), old('b'), old('c')];
    const budget: RolloutPolicy = { ...POLICY, failureBudget: { percent: 34 } };
    expect(ask('b', members, { policy: budget })).toEqual({ kind: 'go' });
    expect(ask('a', members, { policy: budget })).toMatchObject({ kind: 'wait', reason: 'RolloutFailed' });
  });

  it('restarts from the canary for a newer target: a failure of an older one does not count', () => {
    const members = [failed('a', 'v2'), old('b'), old('c')];
    expect(ask('a', members)).toEqual({ kind: 'go' });
    expect(ask('b', members)).toMatchObject({ kind: 'wait', reason: 'RolloutWaiting' });
  });

  it('holds every CR while paused, the canary too', () => {
    expect(ask('a', [old('a'), old('b')], { paused: true })).toMatchObject({ kind: 'wait', reason: 'RolloutPaused', retryAfterMs: 5_000 });
  });

  it('does not gate on CRs that reached the target by install or their own change', () => {
    const installed: Member = { key: 'ns/a', labels: {}, fleetRevision: T, ready: { status: 'False', sinceMs: 0 } };
    expect(memberState(installed, T, POLICY, NOW)).toEqual({ kind: 'healthy', stableAtMs: 0 });
    expect(ask('b', [installed, old('b')])).toEqual({ kind: 'go' });
  });

  it('decides the same from the same cluster state: a restarted operator resumes where the last one was', () => {
    const members = [moved('a', 60_000), moved('b', 30_000), moved('c', 30_000), old('d'), old('e')];
    const first = members.map((m) => ask(m.key.slice(3), members));
    const again = [...members]
      .reverse()
      .map((m) => ask(m.key.slice(3), members))
      .reverse();
    expect(again).toEqual(first);
  });
});

describe('rollout members from the cache', () => {
  const cr = {
    apiVersion: 'example.com/v1',
    kind: 'App',
    metadata: { name: 'a', namespace: 'ns', labels: { tier: 'web' }, managedFields: [{}] },
    spec: { big: 'x'.repeat(100) },
    status: {
      conditions: [
        { type: 'Deployed', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
        { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:10Z' },
      ],
      rollout: { fleetRevision: 'v3', attempt: { fleetRevision: 'v3', at: '2026-01-01T00:00:05Z' } },
      inventory: [{}],
    },
  };

  it('keeps metadata, the Ready condition and the rollout status only', () => {
    const kept = keepForRollout(structuredClone(cr)) as unknown as Record<string, unknown>;
    expect(kept.spec).toBeUndefined();
    expect(kept.status).toEqual({ conditions: [cr.status.conditions[1]], rollout: cr.status.rollout });
    expect((kept.metadata as Record<string, unknown>).managedFields).toBeUndefined();
  });

  it('reads a member, and leaves out CRs being deleted or paused', () => {
    expect(memberOf(keepForRollout(structuredClone(cr)), AS_FOUND)).toEqual({
      key: 'ns/a',
      labels: { tier: 'web' },
      fleetRevision: 'v3',
      attempt: { fleetRevision: 'v3', atMs: Date.parse('2026-01-01T00:00:05Z'), failed: false },
      ready: { status: 'True', sinceMs: Date.parse('2026-01-01T00:00:10Z') },
    });
    expect(memberOf({ ...cr, metadata: { ...cr.metadata, deletionTimestamp: new Date() } }, AS_FOUND)).toBeUndefined();
    expect(
      memberOf({ ...cr, metadata: { ...cr.metadata, annotations: { 'helm.sdk.operatorframework.io/paused': 'true' } } }, AS_FOUND),
    ).toBeUndefined();
  });

  it('keeps a paused CR that failed an attempt: its failure still halts the waves (rollout undo pauses it)', () => {
    const failedCR = {
      ...cr,
      status: {
        ...cr.status,
        rollout: { fleetRevision: 'v3', attempt: { fleetRevision: 'v3', at: '2026-01-01T00:00:05Z', failure: 'not Ready' } },
      },
    };
    const paused = { ...failedCR, metadata: { ...cr.metadata, annotations: { 'helm.sdk.operatorframework.io/paused': 'true' } } };
    expect(memberOf(paused, AS_FOUND)?.attempt?.failed).toBe(true);
    const others = ['b', 'c'].map((n) => old(n));
    expect(ask('b', [memberOf(paused, AS_FOUND) as Member, ...others], { target: 'v3' })).toMatchObject({
      kind: 'wait',
      reason: 'RolloutHalted',
    });
  });
});

describe('nextTurn: whom a decided CR wakes', () => {
  const keys = (t: ReturnType<typeof nextTurn>): string[] => ('wake' in t ? t.wake.map((m) => m.key) : []);
  it('wakes nobody while a CR of the wave under way is undecided', () => {
    expect(nextTurn([moved('a', 4_000), old('b'), old('c')], T, POLICY, NOW)).toEqual({ kind: 'none' });
  });
  it('wakes the next wave, only it, once every CR before it is decided', () => {
    const t = nextTurn([moved('a', 20_000), old('b'), old('c'), old('d'), old('e')], T, POLICY, NOW);
    expect(t.kind).toBe('next');
    expect(keys(t)).toEqual(['ns/b', 'ns/c']);
  });
  it('wakes it after the pause between waves', () => {
    // a stable since NOW-10s; a 25 s pause: NOW+15s.
    expect(nextTurn([moved('a', 20_000), old('b')], T, { ...POLICY, pauseBetweenWavesMs: 25_000 }, NOW)).toMatchObject({
      kind: 'next',
      atMs: NOW + 15_000,
    });
  });
  it('wakes every CR not moved when the rollout halts, to say so', () => {
    expect(keys(nextTurn([failed('a'), old('b'), old('c')], T, POLICY, NOW))).toEqual(['ns/b', 'ns/c']);
  });
});

describe('attemptOnTarget', () => {
  const at = new Date('2026-01-01T00:01:00Z');
  it('keeps the attempt of the target', () => {
    const attempt = { fleetRevision: 'v3', at: '2026-01-01T00:00:05Z' };
    expect(attemptOnTarget({ fleetRevision: 'v3', attempt }, 'v3', at)).toBe(attempt);
  });
  it('starts the health window now for a release found on the target while status names another (its upgrade never noted)', () => {
    expect(
      attemptOnTarget({ fleetRevision: 'v1', attempt: { fleetRevision: 'v2', at: '2026-01-01T00:00:05Z', failure: 'x' } }, 'v3', at),
    ).toEqual({ fleetRevision: 'v3', at: at.toISOString() });
  });
  it('has none for a CR that status never placed (installed at the target, or made before rollouts)', () => {
    expect(attemptOnTarget(undefined, 'v3', at)).toBeUndefined();
    expect(attemptOnTarget({ fleetRevision: 'v3' }, 'v3', at)).toBeUndefined();
  });
});
