import { describe, expect, it } from 'vitest';
import { plannedUpgrade } from '../../../../src/reconciler/actions/plan-gate.js';
import type { Outcome } from '../../../../src/reconciler/core/outcome.js';
import type { PlansPort } from '../../../../src/reconciler/core/ports.js';
import type { CoveringApproval } from '../../../../src/reconciler/plan/plan-approval.js';
import type { UpgradePlan } from '../../../../src/reconciler/plan/upgrade-plan.js';
import { desired, FakeHelmError, harness, record, type HarnessOptions } from './fakes.js';

class FakePlans implements PlansPort {
  readonly saved: UpgradePlan[] = [];
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

function gate(o: HarnessOptions, rollout?: CoveringApproval, outcome: Outcome = UPGRADED) {
  const h = harness(o);
  const plans = new FakePlans();
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
    const first = await gate({ watch: { approval: 'always', approvedBy: 'cr' } }).run();
    if (first.kind !== 'plan-held') throw new Error('expected a held plan');
    const prior = { plan: first.plan };
    const waiting = gate({
      watch: { approval: 'always', approvedBy: 'cr' },
      status: prior,
      annotations: { 'helm-operator.io/approve-plan': 'sha256:other' },
    });
    expect(await waiting.run()).toMatchObject({ kind: 'plan-held', isNew: false, stale: 'sha256:other' });
    expect(waiting.h.helm.methods()).toStrictEqual([]);

    const approved = gate({
      watch: { approval: 'always', approvedBy: 'cr' },
      status: prior,
      annotations: { 'helm-operator.io/approve-plan': first.plan.digest },
    });
    expect(await approved.run()).toBe(UPGRADED);
    expect(approved.upgrades()).toBe(1);
    expect(approved.h.helm.methods()).toContain('render');
  });

  it('where the platform approves, the annotation does not count; the platform record does', async () => {
    const first = await gate({ watch: { approval: 'always' } }).run();
    if (first.kind !== 'plan-held') throw new Error('expected a held plan');
    const g = gate({
      watch: { approval: 'always' },
      status: { plan: first.plan },
      annotations: { 'helm-operator.io/approve-plan': first.plan.digest },
    });
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
