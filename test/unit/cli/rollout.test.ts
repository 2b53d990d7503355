import { describe, expect, it } from 'vitest';
import { statusText, type SealState } from '../../../src/cli/rollout.js';
import type { HelmStatus } from '../../../src/reconciler/status/status.js';

const T0 = '2026-01-01T00:00:00Z';
const release = (chartVersion: string): HelmStatus['deployedRelease'] => ({
  name: 'x',
  namespace: 'ns',
  revision: 1,
  chart: 'app',
  chartVersion,
});
const cr = (
  name: string,
  chart: string,
  fleet: string,
  rollout?: { reason: string; message: string; failure?: string; seal?: SealState },
) => ({
  namespace: 'ns',
  name,
  seal: rollout?.seal ?? 'sealed',
  status: {
    conditions: [
      { type: 'Ready', status: 'True' as const, reason: 'ResourcesReady', message: '', lastTransitionTime: T0 },
      ...(rollout === undefined || rollout.reason === ''
        ? []
        : [{ type: 'Rollout', status: 'False' as const, reason: rollout.reason, message: rollout.message, lastTransitionTime: T0 }]),
    ],
    deployedRelease: release(chart),
    rollout: {
      fleetRevision: fleet,
      ...(rollout?.failure === undefined ? {} : { attempt: { fleetRevision: fleet, at: T0, failure: rollout.failure } }),
    },
  } satisfies HelmStatus,
});

describe('rollout status', () => {
  it('says a rollout halted, which CR failed and why, and how many CRs run each chart', () => {
    const text = statusText(
      { kind: 'App', group: 'example.com' },
      [
        cr('a', '0.2.0', 'f2', { reason: 'RolloutFailed', message: 'failed', failure: 'not Ready within 15s' }),
        cr('b', '0.1.0', 'f1', { reason: 'RolloutHalted', message: 'halted' }),
        cr('c', '0.1.0', 'f1', { reason: 'RolloutHalted', message: 'halted' }),
      ],
      false,
    );
    expect(text.split('\n').slice(0, 6)).toEqual([
      'rollout of App.example.com: halted: 1 CR failed, beyond the failure budget',
      '3 CRs by fleet revision:',
      '  f1  chart 0.1.0: 2',
      '  f2  chart 0.2.0: 1',
      'failed: ns/a: not Ready within 15s',
      'waiting: 2 (first: ns/b: halted)',
    ]);
  });

  it('is complete when no CR has a Rollout condition, and paused when the switch is on', () => {
    const crs = [cr('a', '0.3.0', 'f3'), cr('b', '0.3.0', 'f3')];
    expect(statusText({ kind: 'App', group: 'example.com' }, crs, false)).toMatch(
      /^rollout of App.example.com: complete\n2 CRs by fleet revision:\n {2}f3 {2}chart 0.3.0: 2\n/,
    );
    expect(statusText({ kind: 'App', group: 'example.com' }, crs, true)).toMatch(/: paused\n/);
  });
});

describe('rollout status with plans', () => {
  it("shows the canary's held plan: digest, counts, risks, and how to read and approve it", () => {
    const digest = 'sha256:abc';
    const step = `a platform admin approves it with: helm-operator plan approve app/a -n ns --digest ${digest}`;
    const canary = cr('a', '0.1.0', 'f1');
    const held = {
      ...canary,
      status: {
        ...canary.status,
        conditions: [
          ...canary.status.conditions,
          {
            type: 'Approved',
            status: 'False' as const,
            reason: 'PlanAwaitingApproval',
            message: `plan ${digest} (…) waits for approval: ${step}`,
            lastTransitionTime: T0,
          },
        ],
        plan: {
          digest,
          fingerprint: 'f',
          fromRevision: 1,
          chartVersion: '0.2.0',
          counts: { create: 0, change: 1, delete: 1, refuse: 0, conflicts: 0, hooks: 0, crds: 0 },
          risks: ['delete' as const],
          state: 'AwaitingApproval' as const,
          configMap: 'plan.app.a',
        },
      },
    };
    const text = statusText(
      { kind: 'App', group: 'example.com' },
      [held, cr('b', '0.1.0', 'f1', { reason: 'RolloutWaiting', message: 'waiting for wave 1 of 2' })],
      false,
    );
    expect(text.split('\n')).toEqual([
      'rollout of App.example.com: in progress; 1 plan awaits approval',
      '2 CRs by fleet revision:',
      '  f1  chart 0.1.0: 2',
      `plan awaiting approval: ns/a: ${digest} (revision 1 to chart 0.2.0: 1 to change, 1 to delete; risky: delete)`,
      '  read it: helm-operator plan show app/a -n ns',
      `  approve: ${step}`,
      'waiting: 1 (first: ns/b: waiting for wave 1 of 2)',
      'NAMESPACE/NAME  CHART  FLEET  READY  ROLLOUT  SEAL',
      'ns/a  0.1.0  f1  True  PlanAwaitingApproval  sealed',
      'ns/b  0.1.0  f1  True  RolloutWaiting  sealed',
    ]);
  });
});

describe('rollout status shows as fact only what the seal vouches for', () => {
  it('names a forged and an unsealed CR, shows none of their status, and counts nothing they claim', () => {
    const text = statusText(
      { kind: 'App', group: 'example.com' },
      [
        cr('a', '0.1.0', 'f1', { reason: 'RolloutWaiting', message: 'waiting for wave 1 of 2' }),
        cr('forged', '0.2.0', 'f2', { reason: 'RolloutFailed', message: 'failed', failure: 'not Ready within 15s', seal: 'forged' }),
        cr('plain', '0.2.0', 'f2', { reason: 'RolloutHalted', message: 'halted', seal: 'unsealed' }),
      ],
      false,
    );
    expect(text.split('\n')).toEqual([
      'rollout of App.example.com: in progress',
      '3 CRs by fleet revision:',
      '  f1  chart 0.1.0: 1',
      '  not sealed by the operator (status not shown): 2',
      "forged: ns/forged: status.rollout does not match its seal under the operator's key: written by someone else, not read by the rollout",
      "unsealed: ns/plain: status.rollout carries no seal of the operator's: written by someone else, not read by the rollout",
      'waiting: 1 (first: ns/a: waiting for wave 1 of 2)',
      'NAMESPACE/NAME  CHART  FLEET  READY  ROLLOUT  SEAL',
      'ns/a  0.1.0  f1  True  RolloutWaiting  sealed',
      'ns/forged  ?  ?  ?  ?  forged',
      'ns/plain  ?  ?  ?  ?  unsealed',
    ]);
  });

  it("without the key, says the seals were not checked and marks every row's fields as claims", () => {
    const text = statusText(
      { kind: 'App', group: 'example.com' },
      [cr('a', '0.3.0', 'f3', { reason: '', message: '', seal: 'unverified' })],
      false,
      'no key',
    );
    expect(text.split('\n')).toEqual([
      'rollout of App.example.com: complete',
      "seals not checked (no key): fleet revisions, failures and Ready below are what the CRs' status claims",
      '1 CRs by fleet revision:',
      '  f3  chart 0.3.0: 1',
      'NAMESPACE/NAME  CHART  FLEET  READY  ROLLOUT  SEAL',
      'ns/a  0.3.0  f3  True  -  unverified',
    ]);
  });
});
