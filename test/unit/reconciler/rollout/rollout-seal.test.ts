/**
 * docs/adr/0101: the rollout gate believes only the status the operator sealed. A tenant who may
 * write `<plural>/status` of an earlier wave's CR forges it healthy, failed, or approving risks;
 * none of it is read, and what the operator wrote last (its memory) stands in.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ROLLOUT, type RolloutPolicy } from '../../../../src/config/rollout-policy.js';
import { rolloutApproval } from '../../../../src/reconciler/rollout/rollout-approval.js';
import { gate, type Member } from '../../../../src/reconciler/rollout/rollout-gate.js';
import { memberOf, sealVerdictOf } from '../../../../src/reconciler/rollout/rollout-members.js';
import { openSeal, RolloutSeals, sealOf, viewOf, type RolloutView } from '../../../../src/reconciler/rollout/rollout-seal.js';
import type { RolloutStatus } from '../../../../src/reconciler/status/status.js';

const KEY = Buffer.alloc(32, 1);
const T = 'fleet-new';
const NOW = Date.parse('2026-06-01T12:00:00Z');
const POLICY: RolloutPolicy = {
  ...DEFAULT_ROLLOUT,
  canary: { count: 1 },
  waveSize: { count: 1 },
  stableForMs: 10_000,
  healthTimeoutMs: 60_000,
};
const iso = (ms: number): string => new Date(ms).toISOString();

/** The canary `a` moved to T at `atMs`, Ready as `ready` since `sinceMs`. */
const canaryView = (o: { atMs: number; ready: string; sinceMs: number; failure?: string }): RolloutView => ({
  rollout: { fleetRevision: T, attempt: { fleetRevision: T, at: iso(o.atMs), ...(o.failure === undefined ? {} : { failure: o.failure }) } },
  ready: { status: o.ready, lastTransitionTime: iso(o.sinceMs) },
});

/** CR `name` as the cache holds it, with `rollout` (its seal as given) and a Ready condition. */
function cr(name: string, rollout: RolloutStatus | undefined, ready?: { status: string; lastTransitionTime: string }): KubernetesObject {
  const conditions = ready === undefined ? [] : [{ type: 'Ready', reason: 'x', message: '', ...ready }];
  return {
    metadata: { name, namespace: 'ns', uid: `uid-${name}` },
    status: { conditions, ...(rollout === undefined ? {} : { rollout }) },
  } as KubernetesObject;
}
const sealed = (name: string, seq: number, v: RolloutView): KubernetesObject =>
  cr(name, { ...v.rollout, seal: sealOf(KEY, `uid-${name}`, seq, v) }, v.ready as { status: string; lastTransitionTime: string });

/** The canary moved a minute ago and is still unready (its health window is open); b waits behind it. */
const TRUE_CANARY = canaryView({ atMs: NOW - 20_000, ready: 'False', sinceMs: NOW - 20_000 });
const b: Member = { key: 'ns/b', labels: {}, fleetRevision: 'fleet-old' };
const decide = (a: Member | undefined) =>
  gate({
    policy: POLICY,
    target: T,
    members: [...(a === undefined ? [] : [a]), b],
    self: 'ns/b',
    paused: false,
    nowMs: NOW,
    pollMs: 2_000,
  });

describe('the seal', () => {
  it('opens for the CR instance and view it was made for, and for no other', () => {
    const seal = sealOf(KEY, 'uid-a', 7, TRUE_CANARY);
    expect(openSeal(KEY, 'uid-a', seal, TRUE_CANARY)).toBe(7);
    expect(openSeal(KEY, 'uid-b', seal, TRUE_CANARY), 'another CR').toBeUndefined();
    expect(openSeal(Buffer.alloc(32, 2), 'uid-a', seal, TRUE_CANARY), 'another key').toBeUndefined();
    expect(openSeal(KEY, 'uid-a', seal.replace(/^7\./, '8.'), TRUE_CANARY), 'another seq').toBeUndefined();
    const ready = { ...TRUE_CANARY, ready: { status: 'True', lastTransitionTime: iso(NOW - 3_600_000) } };
    expect(openSeal(KEY, 'uid-a', seal, ready), 'Ready forged').toBeUndefined();
    expect(openSeal(KEY, 'uid-a', undefined, TRUE_CANARY)).toBeUndefined();
    expect(openSeal(KEY, 'uid-a', 'garbage', TRUE_CANARY)).toBeUndefined();
  });

  it("judges a CR's status as the gate reads it, without memory (rollout status): sealed, unsealed, forged, or nothing to vouch for", () => {
    const status = (o: KubernetesObject): unknown => (o as { status?: unknown }).status;
    expect(sealVerdictOf(KEY, 'uid-a', status(sealed('a', 7, TRUE_CANARY)))).toBe('sealed');
    expect(sealVerdictOf(KEY, 'uid-a', status(cr('a', TRUE_CANARY.rollout, TRUE_CANARY.ready as never)))).toBe('unsealed');
    const readyForged = sealed('a', 7, TRUE_CANARY);
    ((readyForged as { status: { conditions: { status: string }[] } }).status.conditions[0] as { status: string }).status = 'True';
    expect(sealVerdictOf(KEY, 'uid-a', status(readyForged)), 'Ready rewritten').toBe('forged');
    expect(sealVerdictOf(KEY, 'uid-b', status(sealed('a', 7, TRUE_CANARY))), "another CR's seal").toBe('forged');
    expect(sealVerdictOf(Buffer.alloc(32, 2), 'uid-a', status(sealed('a', 7, TRUE_CANARY))), 'another key').toBe('forged');
    expect(sealVerdictOf(KEY, 'uid-a', status(cr('a', undefined, { status: 'True', lastTransitionTime: iso(NOW) }))), 'Ready alone').toBe(
      'unsealed',
    );
    expect(sealVerdictOf(KEY, 'uid-a', status(cr('a', undefined)))).toBeUndefined();
    expect(sealVerdictOf(KEY, 'uid-a', undefined)).toBeUndefined();
  });

  it('leaves the seal itself out of the view it covers', () => {
    const view = viewOf({ fleetRevision: T, seal: '1.ab' }, { status: 'True', lastTransitionTime: iso(NOW) });
    expect(view.rollout).toEqual({ fleetRevision: T });
  });
});

describe('a forged earlier wave changes no decision', () => {
  /** The operator's memory after it read (or wrote) the canary's true status. */
  const seen = (): RolloutSeals => {
    const seals = new RolloutSeals(KEY, () => NOW);
    expect(memberOf(sealed('a', 5, TRUE_CANARY), seals)?.ready?.status).toBe('False');
    return seals;
  };
  const forgedHealthy: RolloutStatus = { fleetRevision: T, attempt: { fleetRevision: T, at: iso(NOW - 3_600_000) } };
  const longReady = { status: 'True', lastTransitionTime: iso(NOW - 3_600_000) };

  it('the true canary holds b (the baseline)', () => {
    expect(decide(memberOf(sealed('a', 5, TRUE_CANARY), seen()))).toMatchObject({ kind: 'wait', reason: 'RolloutWaiting' });
  });

  it('forged healthy (unsealed, or under the old seal): b still waits for the proof', () => {
    for (const forged of [
      cr('a', forgedHealthy, longReady),
      cr('a', { ...forgedHealthy, seal: sealOf(KEY, 'uid-a', 5, TRUE_CANARY) }, longReady),
      cr('a', { ...forgedHealthy, seal: sealOf(Buffer.alloc(32, 9), 'uid-a', 6, viewOf(forgedHealthy, longReady)) }, longReady),
    ]) {
      expect(decide(memberOf(forged, seen())), JSON.stringify(forged.metadata)).toMatchObject({ kind: 'wait', reason: 'RolloutWaiting' });
      // Without memory (a new process) the forged canary is not on any fleet revision: still no go.
      expect(decide(memberOf(forged, new RolloutSeals(KEY, () => NOW)))).toMatchObject({ kind: 'wait', reason: 'RolloutWaiting' });
    }
  });

  it("forged healthy by replaying the operator's own older Ready=True of the same attempt: the newer seal wins", () => {
    const wasReady = canaryView({ atMs: NOW - 20_000, ready: 'True', sinceMs: NOW - 19_000 });
    const seals = new RolloutSeals(KEY, () => NOW);
    memberOf(sealed('a', 4, wasReady), seals);
    memberOf(sealed('a', 5, TRUE_CANARY), seals);
    expect(memberOf(sealed('a', 4, wasReady), seals)?.ready?.status).toBe('False');
    expect(decide(memberOf(sealed('a', 4, wasReady), seals))).toMatchObject({ kind: 'wait', reason: 'RolloutWaiting' });
  });

  it('forged failed: no halt, the true canary is what holds b', () => {
    const failed: RolloutStatus = { fleetRevision: T, attempt: { fleetRevision: T, at: iso(NOW - 20_000), failure: 'forged' } };
    const member = memberOf(cr('a', failed, { status: 'False', lastTransitionTime: iso(NOW - 20_000) }), seen());
    expect(member?.attempt?.failed).toBe(false);
    expect(decide(member)).toMatchObject({ kind: 'wait', reason: 'RolloutWaiting' });
    const fresh = memberOf(cr('a', failed), new RolloutSeals(KEY, () => NOW));
    expect(fresh?.attempt).toBeUndefined();
    expect(decide(fresh)).not.toMatchObject({ reason: 'RolloutHalted' });
  });

  it('a wiped status: the memory keeps the canary in its wave', () => {
    const member = memberOf(cr('a', undefined), seen());
    expect(member?.attempt?.fleetRevision).toBe(T);
    expect(decide(member)).toMatchObject({ kind: 'wait', reason: 'RolloutWaiting' });
  });

  it('a forged approvedPlan approves nothing for the later waves', () => {
    const approved = canaryView({ atMs: NOW - 3_600_000, ready: 'True', sinceMs: NOW - 3_600_000 });
    const forged: RolloutStatus = {
      ...approved.rollout,
      attempt: {
        ...(approved.rollout.attempt ?? { fleetRevision: T, at: '' }),
        approvedPlan: { digest: 'sha256:x', risks: ['delete', 'crd'] },
      },
    };
    const seals = new RolloutSeals(KEY, () => NOW);
    memberOf(sealed('a', 5, approved), seals);
    const member = memberOf(cr('a', { ...forged, seal: sealOf(KEY, 'uid-a', 5, approved) }, approved.ready as never), seals) as Member;
    expect(member.attempt?.approvedPlan).toBeUndefined();
    expect(rolloutApproval([member, b], POLICY, 'ns/b', T)).toBeUndefined();
    // The operator's own record of an approval still stands for the later waves.
    const own = { ...approved, rollout: forged };
    expect(rolloutApproval([memberOf(sealed('a', 6, own), seals) as Member, b], POLICY, 'ns/b', T)?.risks).toEqual(['delete', 'crd']);
  });
});

describe('RolloutSeals.seal', () => {
  it('keeps the seal of an unchanged view, and seals a changed one above every seal seen', () => {
    let nowMs = 1_000;
    const seals = new RolloutSeals(KEY, () => nowMs);
    const first = seals.seal('uid-a', TRUE_CANARY);
    expect(first.startsWith('1000.')).toBe(true);
    expect(seals.seal('uid-a', viewOf({ ...TRUE_CANARY.rollout, seal: first }, TRUE_CANARY.ready))).toBe(first);
    const next = seals.seal('uid-a', canaryView({ atMs: NOW - 20_000, ready: 'True', sinceMs: NOW }));
    expect(next.startsWith('1001.')).toBe(true);
    nowMs = 5_000;
    expect(seals.seal('uid-a', TRUE_CANARY).startsWith('5000.')).toBe(true);
    // What it sealed is what it believes, and an older seal of its own is a replay.
    expect(seals.believe('uid-a', { ...TRUE_CANARY.rollout, seal: first }, TRUE_CANARY.ready)).toEqual(TRUE_CANARY);
    expect(openSeal(KEY, 'uid-a', first, TRUE_CANARY)).toBe(1000);
  });
});
