/**
 * Undoing what a failed helm operation left behind, so the next attempt starts from a release
 * helm accepts: a failed install's release is removed (helm#3338), a failed upgrade is rolled back
 * to the revision that was serving.
 */
import type { CrEvent } from '../core/outcome.js';
import type { ReleaseRecord } from '../decide/state.js';
import { cleanupSignal, type ActionContext } from '../core/action-context.js';

/** Removes the release a failed install stored, if it stored one. Best effort: a failure is logged, the install's error is what counts. */
export async function removeFailedInstall(ctx: ActionContext): Promise<void> {
  if ((await ctx.storage.records(ctx.namespace, ctx.name)).length === 0) return;
  await ctx.helm.uninstall({ release: ctx.name, namespace: ctx.namespace, signal: cleanupSignal(ctx) }).catch((e: unknown) => {
    ctx.log.error({ error: ctx.redact(e instanceof Error ? e.message : String(e)) }, 'Could not remove the failed install');
  });
}

/**
 * A first install that met another manager's field (`conflictPolicy: fail`) was refused on an
 * object that existed before it (a new object cannot conflict): left by a `keep` policy or by a
 * release whose storage was lost, and maybe serving. `helm uninstall` would delete it with the
 * rest, so only the failed revision's record goes: the objects the install created carry the CR's
 * owner reference (garbage-collected with the CR) and this release's annotations (adopted by the
 * next install), and the object in conflict stays as its manager left it.
 */
export async function forgetFailedInstall(ctx: ActionContext): Promise<void> {
  const revisions = (await ctx.storage.records(ctx.namespace, ctx.name)).map((r) => r.revision);
  if (revisions.length === 0 || !ctx.helm.mayChangeReleases()) return;
  await ctx.storage.deleteRevisions(ctx.namespace, ctx.name, revisions).catch((e: unknown) => {
    ctx.log.error({ error: ctx.redact(e instanceof Error ? e.message : String(e)) }, "Could not remove the failed install's record");
  });
}

/** Whether `latest` is a revision the failed upgrade made (deployed only when `deployedToo`), and `before` one to go back to. */
function undoable(latest: ReleaseRecord | undefined, before: ReleaseRecord, deployedToo: boolean): boolean {
  if (latest === undefined || latest.revision <= before.revision || (latest.status === 'deployed' && !deployedToo)) return false;
  return before.status === 'deployed' || before.status === 'superseded';
}

/**
 * When the failed upgrade stored a new revision, goes back to `before`, the one that was serving.
 * A forced rollback (the default, as in operator-sdk) replaces objects, which fails on immutable
 * fields where a plain rollback works (operator-sdk#6494, helm-operator-plugins#421): it falls
 * back to a plain one instead of leaving the release failed. A new revision that is deployed is no
 * failure: a cancelled helm that finished its upgrade anyway must not be undone (ADR 0036).
 * Resolves to the event that says what was done, if anything was. `deployedToo`: the new
 * revision is deployed but failed its tests (release-test.ts): undone all the same.
 */
export async function rollbackFailedUpgrade(
  ctx: ActionContext,
  before: ReleaseRecord,
  o: { readonly deployedToo?: boolean } = {},
): Promise<CrEvent[]> {
  const records = await ctx.storage.records(ctx.namespace, ctx.name);
  const latest = records.reduce<ReleaseRecord | undefined>((a, r) => (a === undefined || r.revision > a.revision ? r : a), undefined);
  if (!undoable(latest, before, o.deployedToo === true)) return [];
  const attempts = ctx.annotations.rollbackForce ? [true, false] : [false];
  const errors: string[] = [];
  const signal = cleanupSignal(ctx);
  for (const force of attempts) {
    try {
      await ctx.helm.rollback({ release: ctx.name, namespace: ctx.namespace, revision: before.revision, force, signal });
      const how = force ? '' : errors.length > 0 ? ' without force, after the forced rollback failed' : '';
      return [
        { type: 'Warning', reason: 'RollbackSuccessful', message: `Rolled release ${ctx.name} back to revision ${before.revision}${how}` },
      ];
    } catch (err) {
      errors.push(ctx.describeHelmError(err).summary);
    }
  }
  return [
    {
      type: 'Warning',
      reason: 'RollbackFailed',
      message: `Rollback of ${ctx.name} to revision ${before.revision} failed: ${errors.join('; then: ')}`,
    },
  ];
}
