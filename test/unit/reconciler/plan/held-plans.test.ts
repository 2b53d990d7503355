import { describe, expect, it } from 'vitest';
import { HeldPlans } from '../../../../src/reconciler/plan/held-plans.js';
import type { PlanStatus } from '../../../../src/reconciler/plan/plan-status.js';

const plan = (digest: string): PlanStatus => ({
  digest,
  fingerprint: 'f1',
  fromRevision: 1,
  chartVersion: '0.2.0',
  counts: { create: 0, change: 1, delete: 0, refuse: 0, conflicts: 0, hooks: 0, crds: 0 },
  risks: [],
  state: 'AwaitingApproval',
  configMap: 'plan.app.web',
});
const web = { namespace: 'team', name: 'web', uid: 'u1' };

describe('HeldPlans (ADR 0097)', () => {
  it('holds one plan per CR instance: the latest, for that uid only', () => {
    const held = new HeldPlans();
    held.hold(web, plan('sha256:a'));
    held.hold(web, plan('sha256:b'));
    expect(held.held(web)?.digest).toBe('sha256:b');
    // The CR deleted and created again under its name is another instance: it was never held.
    expect(held.held({ ...web, uid: 'u2' })).toBeUndefined();
    expect(held.held({ ...web, name: 'other' })).toBeUndefined();
  });

  it('lets go of a plan applied, and of a CR gone', () => {
    const held = new HeldPlans();
    const api = { namespace: 'team', name: 'api', uid: 'u3' };
    held.hold(web, plan('sha256:a'));
    held.hold(api, plan('sha256:c'));
    held.hold(web, undefined);
    expect(held.held(web)).toBeUndefined();
    held.hold(web, plan('sha256:a'));
    held.forget('team', 'web');
    expect(held.held(web)).toBeUndefined();
    expect(held.size).toBe(1);
    expect(held.held(api)?.digest).toBe('sha256:c');
  });
});
