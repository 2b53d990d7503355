/**
 * Upgrades a deployed release to the desired chart and values. Fields another field manager holds
 * are settled first (upgrade-render.ts, docs/adr/0072); an upgrade that failed otherwise is rolled back.
 */
import { Reason } from '../status/conditions.js';
import { fightsFor } from '../drift/drift-fight.js';
import { rulesFingerprint } from '../drift/drift-ignore.js';
import type { HelmFailure, ReleaseInfo } from '../core/helm-port.js';
import { withEvents, type Outcome } from '../core/outcome.js';
import type { ReleaseRecord } from '../decide/state.js';
import { driftIgnoreRules, failureOf, applyRequest, withOverrideEvents, type ActionContext, type Desired } from '../core/action-context.js';
import { deploymentOf } from './deployment.js';
import { applyChartCrds, type CrdStep } from './chart-crds.js';
import { checkConfinement } from './preflight.js';
import { rollbackFailedUpgrade } from './remediate.js';
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
  const postRender = settles(plan) ? { postRender: async (m: string) => settleManifest(stamp === undefined ? m : await stamp(m), ctx, plan) } : {};
  let release: ReleaseInfo;
  try {
    release = await ctx.helm.upgrade({ ...request, ...postRender, force, forceConflicts: serverSide && !plan.failOnConflict });
  } catch (err) {
    const outcome = failureOf(ctx, err, { reason: Reason.UpgradeError, event: 'UpgradeFailed', counts: desired });
    if (outcome.kind === 'cancelled') return outcome;
    // A conflict is met again by any retry, and a rollback would reset the very fields: it is
    // reported, and left to a rule, the policy or a spec change.
    if (outcome.kind === 'helm-failed' && outcome.failure.fieldConflict === true) return withOverrideEvents(ctx, { ...outcome, reason: Reason.ResourceConflict, failure: settling(outcome.failure) });
    return withEvents(withOverrideEvents(ctx, outcome), await rollbackFailedUpgrade(ctx, from));
  }
  const kept = plan.fights === undefined ? undefined : fightsFor(plan.fights, { revision: release.revision, generation: ctx.generation, rules });
  const deployment = await deploymentOf(ctx, release, { created: false });
  const upgraded: Outcome = { kind: 'upgraded', deployment, notes: release.notes, ...(kept === undefined || kept.fields.length === 0 ? {} : { fights: kept }) };
  return withOverrideEvents(ctx, withEvents(upgraded, crds.events));
}

/** The confinement pre-flight, then the chart's CRDs (`crds: CreateReplace`): both before helm runs. */
async function beforeHelm(ctx: ActionContext, desired: Desired): Promise<CrdStep> {
  const refused = await checkConfinement(ctx, desired, Reason.UpgradeError);
  return refused === undefined ? applyChartCrds(ctx, desired) : { kind: 'stop', outcome: refused };
}

/** What the upgrade leaves to other managers, and how it meets the rest (upgrade-render.ts); `rules`: the fingerprint of the rules in force. */
function settlePlan(ctx: ActionContext, serverSide: boolean): { plan: SettlePlan; rules: string } {
  const { rules } = driftIgnoreRules(ctx);
  const fingerprint = rulesFingerprint(rules);
  // Fights found under other rules are not this release's any more (fightsFor starts those over).
  const prior = ctx.status.driftFights;
  const fights = prior?.rules === fingerprint ? prior : undefined;
  return { plan: { rules, fights, serverSide, failOnConflict: ctx.watch.conflictPolicy === 'fail' }, rules: fingerprint };
}

/**
 * helm's own conflict (a write between the operator's check and helm's apply) names the field and
 * its manager but not what settles it; the operator's check says both already.
 */
function settling(failure: HelmFailure): HelmFailure {
  if (failure.summary.includes('conflictPolicy')) return failure;
  const how = 'to take such a field back set conflictPolicy: force on the watch, to leave it to its manager add a driftIgnore rule naming it';
  return { ...failure, summary: `${failure.summary}; ${how}` };
}
