/**
 * The rollout's approval of a chart change (docs/adr/0093): what the canary's approved plan stands
 * for in the later waves, read from the members as the gate reads them, and the Rollout recording
 * an approved move in the canary's attempt.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ROLLOUT, type RolloutPolicy } from '../../../../src/config/rollout-policy.js';
import type { Member } from '../../../../src/reconciler/rollout/rollout-gate.js';
import { rolloutApproval } from '../../../../src/reconciler/rollout/rollout-approval.js';
import { memberOf } from '../../../../src/reconciler/rollout/rollout-members.js';
import { AS_FOUND } from './as-found.js';
import type { ApprovedPlan } from '../../../../src/reconciler/status/status.js';

const T = 'v2';
const POLICY: RolloutPolicy = { ...DEFAULT_ROLLOUT, canary: { count: 1 }, waveSize: { count: 2 } };

const member = (name: string, attempt?: { fleetRevision?: string; failed?: boolean; approvedPlan?: ApprovedPlan }): Member => ({
  key: `ns/${name}`,
  labels: {},
  fleetRevision: attempt === undefined ? 'v1' : (attempt.fleetRevision ?? T),
  ...(attempt === undefined
    ? {}
    : {
        attempt: {
          fleetRevision: attempt.fleetRevision ?? T,
          atMs: 0,
          failed: attempt.failed ?? false,
          ...(attempt.approvedPlan === undefined ? {} : { approvedPlan: attempt.approvedPlan }),
        },
      }),
  ready: { status: 'True', sinceMs: 0 },
});
const DELETE: ApprovedPlan = { digest: 'sha256:canary', risks: ['delete'] };

describe('the rollout approval', () => {
  it("gives a later wave the risks of the canary's approved plan for the target, and names who approved", () => {
    const members = [member('a', { approvedPlan: DELETE }), member('b'), member('c'), member('d')];
    expect(rolloutApproval(members, POLICY, 'ns/b', T)).toEqual({
      target: T,
      risks: ['delete'],
      by: [{ key: 'ns/a', digest: 'sha256:canary' }],
    });
    // The third wave counts the approvals of both waves before it, their risks together.
    const approvedB = member('b', { approvedPlan: { digest: 'sha256:b', risks: ['conflict'] } });
    expect(rolloutApproval([members[0] as Member, approvedB, member('c'), member('d')], POLICY, 'ns/d', T)?.risks).toEqual([
      'delete',
      'conflict',
    ]);
  });

  it('gives the canary nothing: its approval is the one the rollout waits for', () => {
    expect(rolloutApproval([member('a'), member('b')], POLICY, 'ns/a', T)).toBeUndefined();
  });

  it('gives nothing when the canary moved without an approval, failed, or was approved for another fleet revision', () => {
    const none = (a: Member): unknown => rolloutApproval([a, member('b')], POLICY, 'ns/b', T);
    expect(none(member('a', {}))).toBeUndefined();
    expect(none(member('a', { approvedPlan: DELETE, failed: true }))).toBeUndefined();
    expect(none(member('a', { approvedPlan: DELETE, fleetRevision: 'v0' }))).toBeUndefined();
  });

  it("reads the approved plan from a cached CR's rollout attempt", () => {
    const cr = {
      metadata: { name: 'a', namespace: 'ns' },
      status: {
        rollout: {
          fleetRevision: T,
          attempt: { fleetRevision: T, at: '2026-01-01T00:00:00Z', approvedPlan: { ...DELETE, risks: ['delete', 'bogus'] } },
        },
      },
    } as KubernetesObject;
    expect(memberOf(cr, AS_FOUND)?.attempt?.approvedPlan).toEqual(DELETE);
  });
});
