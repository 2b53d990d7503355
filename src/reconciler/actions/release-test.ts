/**
 * The chart's tests as a gate (watch `test`, docs/adr/0081): `helm test` on the revision an
 * install or upgrade just deployed, and only then, so a revision that passed is never tested
 * again by the reconciles that follow. A failure is, unless the watch ignores failures, the
 * install or upgrade failing: counted against its retries, reported TestFailed, and undone as
 * a failed one is (remediate.ts).
 */
import { Reason } from '../status/conditions.js';
import type { Outcome, ReleaseTestReport } from '../core/outcome.js';
import type { ActionContext, Desired } from '../core/action-context.js';

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
