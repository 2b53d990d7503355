/**
 * Upgrades a deployed release to the desired chart and values. Fields another field manager holds
 * are settled first (upgrade-render.ts, docs/adr/0072); an upgrade that failed otherwise is rolled back.
 */
import { Reason } from '../status/conditions.js';
import { fightsFor } from '../drift/drift-fight.js';
import { rulesFingerprint } from '../drift/drift-ignore.js';
import type { ReleaseInfo } from '../core/helm-port.js';
import { withEvents, type Outcome } from '../core/outcome.js';
import type { ReleaseRecord } from '../decide/state.js';
import {
  asConflict,
  driftIgnoreRules,
  failureOf,
  applyRequest,
  withOverrideEvents,
  type ActionContext,
  type Desired,
} from '../core/action-context.js';
import { deploymentOf } from './deployment.js';
import { applyChartCrds, type CrdStep } from './chart-crds.js';
import { checkConfinement } from './preflight.js';
import { rollbackFailedUpgrade } from './remediate.js';
import { failsRelease, testFailure, testRelease } from './release-test.js';
import { settleManifest, settles, type SettlePlan } from './upgrade-render.js';

/** `from`: the revision serving now (the deployed one, else the latest). */
export async function upgrade(ctx: ActionContext, desired: Desired, from: ReleaseRecord): Promise<Outcome> {
  const crds = await beforeHelm(ctx, desired);
  if (crds.kind === 'stop') return crds.outcome;
  const force = ctx.annotations.upgradeForce;
  const serverSide = (await ctx.helm.major()) === 4 && !force;
  const { plan, rules } = settlePlan(ctx, serverSide);
  const request = applyRequest(ctx, desired);
  const stamp = request.postRender;
  const postRender = settles(plan)
    ? { postRender: async (m: string) => settleManifest(stamp === undefined ? m : await stamp(m), ctx, plan) }
    : {};
  let release: ReleaseInfo;
  try {
    release = await ctx.helm.upgrade({ ...request, ...postRender, force, forceConflicts: serverSide && !plan.failOnConflict });
  } catch (err) {
    const outcome = failureOf(ctx, err, { reason: Reason.UpgradeError, event: 'UpgradeFailed', counts: desired });
    if (outcome.kind === 'cancelled') return outcome;
    // A conflict is met again by any retry, and a rollback would reset the very fields: it is
    // reported, and left to a rule, the policy or a spec change.
    const conflict = asConflict(outcome);
    if (conflict !== undefined) return withOverrideEvents(ctx, conflict);
    return withEvents(withOverrideEvents(ctx, outcome), await rollbackFailedUpgrade(ctx, from));
  }
  const kept =
    plan.fights === undefined ? undefined : fightsFor(plan.fights, { revision: release.revision, generation: ctx.generation, rules });
  const deployment = await deploymentOf(ctx, release, { created: false });
  const upgraded: Outcome = {
    kind: 'upgraded',
    deployment,
    notes: release.notes,
    ...(kept === undefined || kept.fields.length === 0 ? {} : { fights: kept }),
  };
  return withOverrideEvents(ctx, withEvents(await tested(ctx, upgraded, { desired, from }), crds.events));
}

/** The upgraded revision's tests (release-test.ts); one that fails them is rolled back as a failed upgrade, though helm deployed it. */
async function tested(
  ctx: ActionContext,
  upgraded: Extract<Outcome, { kind: 'installed' | 'upgraded' }>,
  at: { readonly desired: Desired; readonly from: ReleaseRecord },
): Promise<Outcome> {
  const test = await testRelease(ctx, upgraded.deployment.release.revision);
  if (failsRelease(ctx, test))
    return withEvents(
      testFailure(test, at.desired, { notDeployed: false }),
      await rollbackFailedUpgrade(ctx, at.from, { deployedToo: true }),
    );
  return test === undefined ? upgraded : { ...upgraded, test };
}

/** The confinement pre-flight, then the chart's CRDs (`crds: CreateReplace`): both before helm runs. */
async function beforeHelm(ctx: ActionContext, desired: Desired): Promise<CrdStep> {
  const refused = await checkConfinement(ctx, desired, Reason.UpgradeError);
  return refused === undefined ? applyChartCrds(ctx, desired) : { kind: 'stop', outcome: refused };
}

/** What the upgrade leaves to other managers, and how it meets the rest (upgrade-render.ts); `rules`: the fingerprint of the rules in force. */
export function settlePlan(ctx: ActionContext, serverSide: boolean): { plan: SettlePlan; rules: string } {
  const { rules } = driftIgnoreRules(ctx);
  const fingerprint = rulesFingerprint(rules);
  // Fights found under other rules are not this release's any more (fightsFor starts those over).
  const prior = ctx.status.driftFights;
  const fights = prior?.rules === fingerprint ? prior : undefined;
  return { plan: { rules, fights, serverSide, failOnConflict: ctx.watch.conflictPolicy === 'fail' }, rules: fingerprint };
}
