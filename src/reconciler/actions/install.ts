/** Installs the release: nothing of it is deployed (absent, or only a failed install's leftovers). */
import { Reason } from '../status/conditions.js';
import type { ReleaseInfo } from '../core/helm-port.js';
import type { Outcome } from '../core/outcome.js';
import {
  asConflict,
  failureOf,
  helmStep,
  applyRequest,
  withOverrideEvents,
  type ActionContext,
  type Desired,
} from '../core/action-context.js';
import { deploymentOf } from './deployment.js';
import { checkConfinement } from './preflight.js';
import { forgetFailedInstall, removeFailedInstall } from './remediate.js';
import { failsRelease, testFailure, testRelease } from './release-test.js';

export async function install(ctx: ActionContext, desired: Desired, options: { readonly leftovers: boolean }): Promise<Outcome>;
/**
 * `presumedAbsent`: a CR that never had a release (see isFirstInstall) is installed without reading
 * the release storage first (ADR 0060). helm's own check then refuses a name with any history, and
 * the install resolves undefined: the caller reads the storage and decides as for any CR. Nothing
 * is removed, as that release is not this install's.
 */
export async function install(
  ctx: ActionContext,
  desired: Desired,
  options: { readonly presumedAbsent: true },
): Promise<Outcome | undefined>;
export async function install(
  ctx: ActionContext,
  desired: Desired,
  options: { readonly leftovers?: boolean; readonly presumedAbsent?: true },
): Promise<Outcome | undefined> {
  const stopped = await beforeInstall(ctx, desired, options.leftovers === true);
  if (stopped !== undefined) return stopped;
  let release: ReleaseInfo;
  try {
    release = await ctx.helm.install({
      ...applyRequest(ctx, desired),
      ...(ctx.watch.crds === 'Skip' ? { skipCrds: true } : {}),
      ...(await forceConflicts(ctx)),
    });
  } catch (err) {
    if (options.presumedAbsent === true && ctx.describeHelmError(err).nameInUse === true && !ctx.signal.aborted) return undefined;
    const outcome = failureOf(ctx, err, { reason: Reason.InstallError, event: 'InstallFailed', notDeployed: true, counts: desired });
    const conflict = asConflict(outcome);
    if (conflict !== undefined) await forgetFailedInstall(ctx);
    else if (outcome.kind !== 'cancelled') await removeFailedInstall(ctx);
    return withOverrideEvents(ctx, conflict ?? outcome);
  }
  const deployment = await deploymentOf(ctx, release, { created: true });
  const test = await testRelease(ctx, release.revision);
  if (failsRelease(ctx, test)) {
    // As a failed install: nothing of it stays, and the next attempt starts from scratch.
    await removeFailedInstall(ctx);
    return withOverrideEvents(ctx, testFailure(test, desired, { notDeployed: true }));
  }
  return withOverrideEvents(ctx, { kind: 'installed', deployment, notes: release.notes, ...(test === undefined ? {} : { test }) });
}

/** A failed install's leftovers removed, then the render checked against confinement: an outcome stops the install. */
async function beforeInstall(ctx: ActionContext, desired: Desired, leftovers: boolean): Promise<Outcome | undefined> {
  if (leftovers) {
    const failed = await helmStep(ctx, Reason.InstallError, () =>
      ctx.helm.uninstall({ release: ctx.name, namespace: ctx.namespace, signal: ctx.signal }),
    );
    if (failed !== undefined) return failed;
  }
  return checkConfinement(ctx, desired, Reason.InstallError);
}

/**
 * helm 4 applies an install server-side too. Its objects are new, except those that exist already
 * with this release's annotations (left by a `keep` policy, or by a release whose storage was
 * lost): there the watch's `conflictPolicy` decides as on an upgrade, `force` taking the chart's
 * fields back, `fail` stopping with `ResourceConflict` (docs/adr/0072).
 */
async function forceConflicts(ctx: ActionContext): Promise<{ forceConflicts?: true }> {
  return ctx.watch.conflictPolicy !== 'fail' && (await ctx.helm.major()) === 4 ? { forceConflicts: true } : {};
}
