import { describe, expect, it } from 'vitest';
import { plannedUpgrade } from '../../../../src/reconciler/actions/plan-gate.js';
import type { Outcome } from '../../../../src/reconciler/core/outcome.js';
import type { PlansPort } from '../../../../src/reconciler/core/ports.js';
import { HeldPlans } from '../../../../src/reconciler/plan/held-plans.js';
import type { CoveringApproval } from '../../../../src/reconciler/plan/plan-approval.js';
import type { UpgradePlan } from '../../../../src/reconciler/plan/upgrade-plan.js';
import { desired, FakeHelmError, harness, NAME, NAMESPACE, record, UID, type HarnessOptions } from './fakes.js';

class FakePlans implements PlansPort {
  readonly saved: UpgradePlan[] = [];
  readonly held = new HeldPlans();
  approval: string | undefined;
  save(_owner: unknown, _configMap: string, plan: UpgradePlan): Promise<void> {
    this.saved.push(plan);
    return Promise.resolve();
  }
  platformApproval(): Promise<string | undefined> {
    return Promise.resolve(this.approval);
  }
}

const UPGRADED: Outcome = { kind: 'helm-busy' };

/** `plans`: the process's memory of held plans (one process: the same across reconciles). */
function gate(o: HarnessOptions, rollout?: CoveringApproval, outcome: Outcome = UPGRADED, plans = new FakePlans()) {
  const h = harness(o);
  let upgrades = 0;
  const run = () =>
    plannedUpgrade({ ...h.ctx, plans }, desired(), record(1, 'deployed'), {
      upgrade: () => {
        upgrades++;
        return Promise.resolve(outcome);
      },
      ...(rollout === undefined ? {} : { rolloutApproval: () => rollout }),
    });
  return { h, plans, run, upgrades: () => upgrades };
}

describe('plannedUpgrade', () => {
  it('under approval: never, upgrades at once and plans nothing', async () => {
    const g = gate({ watch: { approval: 'never' } });
    expect(await g.run()).toBe(UPGRADED);
    expect(g.upgrades()).toBe(1);
    expect(g.h.helm.methods()).not.toContain('render');
    expect(g.plans.saved).toHaveLength(0);
  });

  it('under approval: always, holds the plan it saved until its digest is approved', async () => {
    const g = gate({ watch: { approval: 'always', approvedBy: 'cr' } });
    const held = await g.run();
    expect(held).toMatchObject({ kind: 'plan-held', isNew: true, plan: { state: 'AwaitingApproval', fromRevision: 1 } });
    expect(g.upgrades()).toBe(0);
    expect(g.h.helm.callsOf('render')).toMatchObject([{ dryRun: 'server' }]);
    expect(g.plans.saved.map((p) => p.digest)).toStrictEqual([held.kind === 'plan-held' ? held.plan.digest : '']);
  });

  it('a held CR without a matching approval looks again without helm; with it, plans again and upgrades', async () => {
    const plans = new FakePlans();
    const first = await gate({ watch: { approval: 'always', approvedBy: 'cr' } }, undefined, UPGRADED, plans).run();
    if (first.kind !== 'plan-held') throw new Error('expected a held plan');
    expect(plans.held.held({ namespace: NAMESPACE, name: NAME, uid: UID })).toStrictEqual(first.plan);
    expect(plans.held.held({ namespace: NAMESPACE, name: NAME, uid: 'another-instance' })).toBeUndefined();
    const waiting = gate(
      { watch: { approval: 'always', approvedBy: 'cr' }, annotations: { 'helm-operator.io/approve-plan': 'sha256:other' } },
      undefined,
      UPGRADED,
      plans,
    );
    expect(await waiting.run()).toMatchObject({
      kind: 'plan-held',
      isNew: false,
      stale: 'sha256:other',
      plan: { digest: first.plan.digest },
    });
    expect(waiting.h.helm.methods()).toStrictEqual([]);

    const approved = gate(
      { watch: { approval: 'always', approvedBy: 'cr' }, annotations: { 'helm-operator.io/approve-plan': first.plan.digest } },
      undefined,
      UPGRADED,
      plans,
    );
    expect(await approved.run()).toBe(UPGRADED);
    expect(approved.upgrades()).toBe(1);
    expect(approved.h.helm.methods()).toContain('render');
    expect(plans.held.size).toBe(0);
  });

  it('a forged status.plan is not what a held CR looks again from: the plan the process holds is shown, and an approval of the forged digest is stale (ADR 0097)', async () => {
    const plans = new FakePlans();
    const first = await gate({ watch: { approval: 'always' } }, undefined, UPGRADED, plans).run();
    if (first.kind !== 'plan-held') throw new Error('expected a held plan');
    const forged = { plan: { ...first.plan, digest: `sha256:${'0'.repeat(64)}`, configMap: 'kube-root-ca.crt' } };
    const g = gate({ watch: { approval: 'always' }, status: forged }, undefined, UPGRADED, plans);
    g.plans.approval = forged.plan.digest;
    expect(await g.run()).toMatchObject({ kind: 'plan-held', stale: forged.plan.digest, plan: first.plan });
    expect(g.upgrades()).toBe(0);
    expect(g.h.helm.methods()).toStrictEqual([]);

    // A process that holds nothing (restarted, a new leader) plans again: the true plan, whatever status says.
    const fresh = gate({ watch: { approval: 'always' }, status: forged });
    fresh.plans.approval = forged.plan.digest;
    expect(await fresh.run()).toMatchObject({
      kind: 'plan-held',
      isNew: true,
      stale: forged.plan.digest,
      plan: { digest: first.plan.digest },
    });
    expect(fresh.upgrades()).toBe(0);
    expect(fresh.h.helm.callsOf('render')).toHaveLength(1);
  });

  it('where the platform approves, the annotation does not count; the platform record does', async () => {
    const plans = new FakePlans();
    const first = await gate({ watch: { approval: 'always' } }, undefined, UPGRADED, plans).run();
    if (first.kind !== 'plan-held') throw new Error('expected a held plan');
    const g = gate(
      { watch: { approval: 'always' }, annotations: { 'helm-operator.io/approve-plan': first.plan.digest } },
      undefined,
      UPGRADED,
      plans,
    );
    expect(await g.run()).toMatchObject({ kind: 'plan-held', retryAfterMs: 5_000 });
    expect(g.upgrades()).toBe(0);
    g.plans.approval = first.plan.digest;
    expect(await g.run()).toBe(UPGRADED);
  });

  it("a later wave's plan goes with the rollout's approval, and says whose; without one it holds (docs/adr/0093)", async () => {
    const rollout: CoveringApproval = { target: 'f2', risks: [], by: [{ key: 'ns/canary', digest: 'sha256:c' }] };
    const upgraded = { kind: 'upgraded', deployment: { release: {}, inventory: [], ready: {} }, notes: '' } as unknown as Outcome;
    const g = gate({ watch: { approval: 'always' } }, rollout, upgraded);
    expect(await g.run()).toMatchObject({ kind: 'upgraded', plan: { why: 'rollout', rollout, status: { state: 'Applied' } } });
    expect(g.upgrades()).toBe(1);
    const alone = gate({ watch: { approval: 'always' } }, undefined, upgraded);
    expect(await alone.run()).toMatchObject({ kind: 'plan-held' });
    expect(alone.upgrades()).toBe(0);
  });

  it('a render that fails is the upgrade failing: reported, and counted against the desired state', async () => {
    const g = gate({ watch: { approval: 'risky' } });
    g.h.helm.fail('render', new FakeHelmError('template: app/templates/x.yaml: nil pointer'));
    expect(await g.run()).toMatchObject({
      kind: 'helm-failed',
      reason: 'UpgradeError',
      fingerprint: desired().keyedFingerprint,
      failure: { summary: expect.stringContaining('nil pointer') as unknown },
    });
    expect(g.upgrades()).toBe(0);
  });
});
