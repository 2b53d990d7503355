/**
 * A watch's rollout as reconciles meet it, on the manual clock: held CRs, the status `note`
 * writes, and the next wave woken through the controller's request source when the canary's
 * health window ends, read from the controller's cache (read-only) then; nothing once stopped.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { RolloutPolicy } from '../../../../src/config/rollout-policy.js';
import type { Desired } from '../../../../src/reconciler/core/action-context.js';
import { ConditionType, Reason } from '../../../../src/reconciler/status/conditions.js';
import type { Outcome } from '../../../../src/reconciler/core/outcome.js';
import type { PlanStatus } from '../../../../src/reconciler/plan/plan-status.js';
import { Rollout } from '../../../../src/reconciler/rollout/rollout.js';
import { DECIDE_MARGIN_MS } from '../../../../src/reconciler/rollout/rollout-waker.js';
import { RELEASE_LABELS } from '../../../../src/reconciler/decide/state.js';
import { sealOf, viewOf } from '../../../../src/reconciler/rollout/rollout-seal.js';
import { StatusDraft, type DeployedRelease, type RolloutStatus } from '../../../../src/reconciler/status/status.js';
import { RequeueSource } from '../../../../src/runtime/requeue-source.js';
import { ManualClock } from '../../../../src/util/clock.js';
import { desired as desiredOf, FakeKind, record } from '../actions/fakes.js';

const POLICY: RolloutPolicy = {
  canary: { count: 1 },
  waveSize: { count: 2 },
  healthTimeoutMs: 60_000,
  stableForMs: 10_000,
  failureBudget: { count: 0 },
  pauseBetweenWavesMs: 0,
};
const NS = 'ns';
const OLD = 'fleet-0';
const DESIRED: Desired = desiredOf();
const TARGET = DESIRED.fleetRevision;
/** The release each CR serves: made from the old fleet revision and the CR's own values as they are. */
const FROM = record(1, 'deployed', { [RELEASE_LABELS.fleetRevision]: OLD, [RELEASE_LABELS.ownValues]: DESIRED.ownDigest });
const START = Date.parse('2026-03-01T00:00:00Z');

const iso = (ms: number): string => new Date(ms).toISOString();

/** The operator's key: the statuses the cache holds here are sealed with it, as the operator's status writes are (docs/adr/0101). */
const KEY = Buffer.alloc(32, 7);
let writes = 0;

/** A CR as the controller's cache keeps it (keepForRollout): its rollout status and Ready condition, as the operator sealed them. */
function cached(name: string, status: { rollout: RolloutStatus; readySinceMs: number; ready?: boolean }): KubernetesObject {
  const ready = { status: status.ready === false ? 'False' : 'True', lastTransitionTime: iso(status.readySinceMs) };
  const seal = sealOf(KEY, `uid-${name}`, ++writes, viewOf(status.rollout, ready));
  return {
    apiVersion: 'example.com/v1',
    kind: 'Nginx',
    metadata: { name, namespace: NS, uid: `uid-${name}` },
    status: {
      rollout: { ...status.rollout, seal },
      conditions: [
        {
          type: ConditionType.Ready,
          status: ready.status,
          reason: 'Ready',
          message: '',
          lastTransitionTime: iso(status.readySinceMs),
        },
      ],
    },
  } as KubernetesObject;
}

const upgraded = (ready: 'True' | 'False'): Outcome => ({
  kind: 'upgraded',
  deployment: {
    release: { revision: 2 } as DeployedRelease,
    inventory: [],
    ready: { status: ready, reason: ready === 'True' ? 'Ready' : 'NotReady', message: '', ready: ready === 'True' ? 1 : 0, total: 1 },
  },
  notes: '',
});

function setup() {
  const clock = new ManualClock(START);
  const kind = new FakeKind();
  for (const name of ['a', 'b', 'c', 'd']) kind.put(cached(name, { rollout: { fleetRevision: OLD }, readySinceMs: START - 3_600_000 }));
  const source = new RequeueSource(clock);
  const woken: string[] = [];
  source.start((r) => woken.push(r.name));
  const now = (): Date => new Date(clock.now());
  const rollout = new Rollout({
    controller: 'nginx-controller',
    cache: kind,
    wakeups: source,
    policy: POLICY,
    chartDigest: 'sha256:c',
    chartVersion: '1.0.0',
    now,
    sealKey: KEY,
  });
  const events: string[] = [];
  const event = (reason: string, message: string): void => {
    events.push(`${reason}: ${message}`);
  };
  /** A reconcile of `name`: its status as the cache has it, the draft the rollout writes into. */
  const draftOf = (name: string): StatusDraft => new StatusDraft((kind.get(NS, name) as { status?: unknown }).status, now);
  /** The status write's watch event: the cache now holds what the draft says. */
  const written = (name: string, draft: StatusDraft, ready = true): void => {
    kind.put(cached(name, { rollout: draft.current.rollout ?? {}, readySinceMs: clock.now(), ready }));
  };
  return { clock, kind, source, woken, rollout, events, event, draftOf, written };
}

describe('Rollout', () => {
  it('carries on the rollout fields and the Ready time the operator sealed, not the ones a tenant wrote (docs/adr/0101)', () => {
    const s = setup();
    const sealed = (s.kind.get(NS, 'a') as { status?: unknown }).status;
    s.rollout.trust(new StatusDraft(sealed), 'uid-a');
    const forged = structuredClone(sealed) as { rollout: object; conditions: { lastTransitionTime: string }[] };
    forged.rollout = {
      ...forged.rollout,
      attempt: { fleetRevision: TARGET, at: iso(START - 7_200_000), approvedPlan: { digest: 'x', risks: ['delete'] } },
    };
    for (const c of forged.conditions) c.lastTransitionTime = iso(START - 7_200_000);
    const draft = new StatusDraft(forged);
    s.rollout.trust(draft, 'uid-a');
    expect(draft.current.rollout).toEqual({ fleetRevision: OLD });
    expect(draft.current.conditions.find((c) => c.type === ConditionType.Ready)?.lastTransitionTime).toBe(iso(START - 3_600_000));
    // A new process, which believes nothing of the CR: the release on the target gets a health window from now.
    const fresh = setup();
    const unbelieved = new StatusDraft(forged);
    fresh.rollout.trust(unbelieved, 'uid-a');
    expect(unbelieved.current.rollout?.attempt).toBeUndefined();
    expect(unbelieved.current.rollout?.fleetRevision).not.toBe(TARGET);
  });

  it('holds a later wave while the canary has not moved, and lets the canary go', async () => {
    const s = setup();
    expect(await s.rollout.hold(s.draftOf('a'), { namespace: NS, name: 'a' }, FROM, DESIRED)).toBeUndefined();
    const held = await s.rollout.hold(s.draftOf('b'), { namespace: NS, name: 'b' }, FROM, DESIRED);
    expect(held).toMatchObject({ kind: 'rollout-held', reason: Reason.RolloutWaiting });
    expect(held?.message).toContain('waiting for wave 1 of 3');
  });

  it('wakes the next wave when the canary has been Ready for stableFor, on the clock, from what the cache holds then', () => {
    const s = setup();
    const draft = s.draftOf('a');
    const requeueMs = s.rollout.note(draft, upgraded('True'), DESIRED, {
      fleetOnly: true,
      event: s.event,
      at: { namespace: NS, name: 'a' },
    });
    // Decided by the waker's look, not by this CR looking again.
    expect(requeueMs).toBeUndefined();
    expect(draft.current.rollout).toEqual({
      fleetRevision: TARGET,
      chartDigest: 'sha256:c',
      attempt: { fleetRevision: TARGET, at: iso(START) },
    });
    s.written('a', draft);
    s.clock.advance(POLICY.stableForMs + DECIDE_MARGIN_MS - 1);
    expect(s.woken).toEqual([]);
    s.clock.advance(1);
    expect(s.woken).toEqual(['b', 'c']);
  });

  it("records the approved plan of a move in the canary's attempt, where the later waves read it (docs/adr/0093)", () => {
    const s = setup();
    const plan = { digest: 'sha256:p', risks: ['delete'] } as Partial<PlanStatus> as PlanStatus;
    const note = (name: string, why: 'approved' | 'not-required') => {
      const draft = s.draftOf(name);
      const outcome = { ...upgraded('True'), plan: { status: plan, why } } as Outcome;
      s.rollout.note(draft, outcome, DESIRED, { fleetOnly: true, event: s.event, at: { namespace: NS, name } });
      return draft;
    };
    expect(note('b', 'not-required').current.rollout?.attempt).toEqual({ fleetRevision: TARGET, at: iso(START) });
    const canary = note('a', 'approved');
    expect(canary.current.rollout?.attempt).toEqual({
      fleetRevision: TARGET,
      at: iso(START),
      approvedPlan: { digest: 'sha256:p', risks: ['delete'] },
    });
    s.written('a', canary);
    expect(s.rollout.approval({ namespace: NS, name: 'b' }, FROM, DESIRED)).toEqual({
      target: TARGET,
      risks: ['delete'],
      by: [{ key: `${NS}/a`, digest: 'sha256:p' }],
    });
    // The CR's own change is not the rollout's: it needs its own approval.
    const own = record(1, 'deployed', { [RELEASE_LABELS.fleetRevision]: OLD, [RELEASE_LABELS.ownValues]: 'other' });
    expect(s.rollout.approval({ namespace: NS, name: 'b' }, own, DESIRED)).toBeUndefined();
  });

  it('a canary not Ready looks again itself at its health timeout; failing then wakes the rest to say halted', () => {
    const s = setup();
    const draft = s.draftOf('a');
    const requeueMs = s.rollout.note(draft, upgraded('False'), DESIRED, {
      fleetOnly: true,
      event: s.event,
      at: { namespace: NS, name: 'a' },
    });
    expect(requeueMs).toBe(POLICY.healthTimeoutMs + DECIDE_MARGIN_MS);
    s.written('a', draft, false);
    s.clock.advance(requeueMs ?? 0);
    // Its next reconcile finds it still not Ready: failed, and the waiting CRs learn the rollout halted.
    const again = s.draftOf('a');
    const inSync: Outcome = {
      kind: 'in-sync',
      revision: 2,
      deployment: {
        inventory: [],
        ready: { status: 'False', reason: 'NotReady', message: 'Deployment web: 0 of 1 ready', ready: 0, total: 1 },
      },
      drift: { kind: 'settled' },
    };
    s.rollout.note(again, inSync, DESIRED, { fleetOnly: false, event: s.event, at: { namespace: NS, name: 'a' } });
    expect(again.current.conditions.find((c) => c.type === ConditionType.Rollout)).toMatchObject({
      status: 'False',
      reason: Reason.RolloutFailed,
    });
    expect(s.events).toHaveLength(1);
    expect(s.woken).toEqual(['b', 'c', 'd']);
  });

  it('wakes nobody after its controller stopped: no look is left on the clock', () => {
    const s = setup();
    const draft = s.draftOf('a');
    s.rollout.note(draft, upgraded('True'), DESIRED, { fleetOnly: true, event: s.event, at: { namespace: NS, name: 'a' } });
    s.written('a', draft);
    expect(s.clock.pendingTimers()).toBe(1);
    s.source.stop();
    expect(s.clock.pendingTimers()).toBe(0);
    s.clock.advance(10 * 60_000);
    expect(s.woken).toEqual([]);
  });

  describe('observe: another replica’s CR, sharded (docs/adr/0096)', () => {
    const moved = (failure?: string) => ({
      fleetRevision: TARGET,
      chartDigest: 'sha256:c',
      attempt: { fleetRevision: TARGET, at: iso(START), ...(failure === undefined ? {} : { failure }) },
    });

    it('wakes its own CRs of the next wave when the other replica’s canary is stable, from its cache', async () => {
      const s = setup();
      // This replica's own reconcile of b: held behind the canary, and the target is known.
      expect(await s.rollout.hold(s.draftOf('b'), { namespace: NS, name: 'b' }, FROM, DESIRED)).toMatchObject({ kind: 'rollout-held' });
      // The canary, another replica's, upgraded and Ready: its status write reaches this cache.
      s.kind.put(cached('a', { rollout: moved(), readySinceMs: START }));
      s.rollout.observe(s.kind.get(NS, 'a') as KubernetesObject);
      expect(s.woken).toEqual([]);
      s.clock.advance(POLICY.stableForMs + DECIDE_MARGIN_MS);
      expect(s.woken).toEqual(['b', 'c']);
    });

    it('a failure in the other replica’s share halts this one’s CRs: woken once to say so', async () => {
      const s = setup();
      await s.rollout.hold(s.draftOf('b'), { namespace: NS, name: 'b' }, FROM, DESIRED);
      s.kind.put(cached('a', { rollout: moved('not Ready within 60s'), readySinceMs: START, ready: false }));
      const a = s.kind.get(NS, 'a') as KubernetesObject;
      s.rollout.observe(a);
      s.rollout.observe(a);
      expect(s.woken).toEqual(['b', 'c', 'd']);
      const held = await s.rollout.hold(s.draftOf('c'), { namespace: NS, name: 'c' }, FROM, DESIRED);
      expect(held).toMatchObject({ kind: 'rollout-held', reason: Reason.RolloutHalted });
    });

    it('looks at nothing before a reconcile of its own told it the target', () => {
      const s = setup();
      s.kind.put(cached('a', { rollout: moved(), readySinceMs: START }));
      s.rollout.observe(s.kind.get(NS, 'a') as KubernetesObject);
      expect(s.clock.pendingTimers()).toBe(0);
      s.clock.advance(10 * 60_000);
      expect(s.woken).toEqual([]);
    });
  });
});
