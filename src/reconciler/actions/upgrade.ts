/** Upgrades a deployed release to the desired chart and values; a failed upgrade is rolled back. */
import { Reason } from '../conditions.js';
import type { ReleaseInfo } from '../helm-port.js';
import { withEvents, type Outcome } from '../outcome.js';
import type { ReleaseRecord } from '../state.js';
import { failureOf, applyRequest, withOverrideEvents, type ActionContext, type Desired } from './context.js';
import { deploymentOf } from './deployment.js';
import { checkConfinement } from './preflight.js';
import { rollbackFailedUpgrade } from './remediate.js';

/** `from`: the revision serving now (the deployed one, else the latest). */
export async function upgrade(ctx: ActionContext, desired: Desired, from: ReleaseRecord): Promise<Outcome> {
  const refused = await checkConfinement(ctx, desired, Reason.UpgradeError);
  if (refused !== undefined) return refused;
  let release: ReleaseInfo;
  try {
    release = await ctx.helm.upgrade({ ...applyRequest(ctx, desired), force: ctx.annotations.upgradeForce });
  } catch (err) {
    const outcome = failureOf(ctx, err, { reason: Reason.UpgradeError, event: 'UpgradeFailed', counts: desired });
    return outcome.kind === 'cancelled' ? outcome : withEvents(withOverrideEvents(ctx, outcome), await rollbackFailedUpgrade(ctx, from));
  }
  return withOverrideEvents(ctx, { kind: 'upgraded', deployment: await deploymentOf(ctx, release, { created: false }), notes: release.notes });
}
