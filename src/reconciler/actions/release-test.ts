/**
 * The chart's tests as a gate (watch `test`, docs/adr/0081): `helm test` on the revision an
 * install or upgrade just deployed, so a revision that passed is never tested again by the
 * reconciles that follow; and on a deployed revision whose install or upgrade never reported
 * (docs/adr/0089). A failure is, unless the watch ignores failures, the install or upgrade
 * failing: counted against its retries, reported TestFailed, and undone as a failed one is
 * (remediate.ts).
 */
import { Reason } from '../status/conditions.js';
import { withEvents, type Outcome, type ReleaseTestReport } from '../core/outcome.js';
import type { ReleaseRecord } from '../decide/state.js';
import type { ActionContext, Desired } from '../core/action-context.js';
import { deployedRelease } from './deployment.js';
import { removeFailedInstall, rollbackFailedUpgrade } from './remediate.js';

/** What the tests of `revision` said; undefined when the watch runs none. */
export async function testRelease(ctx: ActionContext, revision: number): Promise<ReleaseTestReport | undefined> {
  const test = ctx.watch.test;
  if (test?.enable !== true) return undefined;
  const result = await ctx.helm.test({
    release: ctx.name,
    namespace: ctx.namespace,
    signal: ctx.signal,
    ...(test.timeoutMs === undefined ? {} : { timeoutMs: test.timeoutMs }),
  });
  if (result.passed) return { passed: true, message: `helm test passed on revision ${revision}` };
  const logs = result.logs === '' ? '' : `; test logs: ${result.logs}`;
  return { passed: false, message: ctx.redact(`helm test failed on revision ${revision}: ${result.summary}${logs}`) };
}

/** Whether a failed test fails the install or upgrade (and is undone), or is only reported. */
export const failsRelease = (ctx: ActionContext, report: ReleaseTestReport | undefined): report is ReleaseTestReport & { passed: false } =>
  report?.passed === false && ctx.watch.test?.ignoreFailures !== true;

/** The failed install or upgrade a failed test makes: counted against the retries of `desired`. */
export function testFailure(
  report: ReleaseTestReport,
  desired: Desired,
  how: { readonly notDeployed: boolean },
): Extract<Outcome, { kind: 'helm-failed' }> {
  return {
    kind: 'helm-failed',
    reason: Reason.TestFailed,
    event: Reason.TestFailed,
    failure: { summary: report.message, retryable: true },
    cause: new Error(report.message),
    fingerprint: desired.keyedFingerprint,
    ...(how.notDeployed ? { notDeployed: true } : {}),
  };
}

type InSync = Extract<Outcome, { kind: 'in-sync' }>;

/**
 * Whether the deployed `revision` is one whose install or upgrade never reported its tests: the
 * status the outcome of that action writes names the revision (deployedRelease) in the same write
 * as TestSuccess, so a reconcile cancelled between helm and that write (lost leadership, a
 * shutdown past its grace, a crash) or a write that failed leaves the status naming another one.
 */
export const testsUnreported = (ctx: ActionContext, revision: number): boolean =>
  ctx.watch.test?.enable === true && ctx.status.deployedRelease?.revision !== revision;

/**
 * The tests of an in-sync revision whose tests were never reported (testsUnreported), as the
 * action that deployed it would have run them: a pass is reported with the revision, so it is
 * not tested again; a failure is undone as that action's would be, rolled back to the revision
 * before it, or removed when there is none (an install).
 */
export async function testUnreported(ctx: ActionContext, inSync: InSync, desired: Desired): Promise<Outcome> {
  const test = await testRelease(ctx, inSync.revision);
  if (test === undefined) return inSync;
  if (failsRelease(ctx, test)) {
    const before = previousRecord(await ctx.storage.records(ctx.namespace, ctx.name), inSync.revision);
    if (before !== undefined)
      return withEvents(
        testFailure(test, desired, { notDeployed: false }),
        await rollbackFailedUpgrade(ctx, before, { deployedToo: true }),
      );
    await removeFailedInstall(ctx);
    return testFailure(test, desired, { notDeployed: true });
  }
  // The revision goes into status with its report (deployment.ts), or it would be tested again.
  const info = inSync.deployment.release === undefined ? await ctx.helm.status(ctx.name, ctx.namespace) : undefined;
  const release = inSync.deployment.release ?? (info === undefined ? undefined : deployedRelease(info));
  return { ...inSync, deployment: { ...inSync.deployment, ...(release === undefined ? {} : { release }) }, test };
}

/** The latest revision before `revision` that served, which an upgrade to `revision` came from. */
export function previousRecord(records: readonly ReleaseRecord[], revision: number): ReleaseRecord | undefined {
  return records
    .filter((r) => r.revision < revision && (r.status === 'deployed' || r.status === 'superseded'))
    .reduce<ReleaseRecord | undefined>((a, r) => (a === undefined || r.revision > a.revision ? r : a), undefined);
}
