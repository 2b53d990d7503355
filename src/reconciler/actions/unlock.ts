/**
 * A pending-* revision left by a process that died mid-operation (no helm of ours runs for the
 * release: the reconciler waits for one that does). Rolls back to the last good revision, or
 * removes a first install that never completed; either way helm accepts new operations afterwards
 * and the reconciler decides again.
 */
import { Reason } from '../status/conditions.js';
import type { Outcome } from '../core/outcome.js';
import type { ReleaseRecord } from '../decide/state.js';
import { helmStep, type ActionContext } from '../core/action-context.js';

export async function unlock(ctx: ActionContext, latest: ReleaseRecord, lastGood: ReleaseRecord | undefined): Promise<Outcome> {
  const { name: release, namespace, signal } = ctx;
  const was = `revision ${latest.revision} was left ${latest.status}`;
  if (lastGood === undefined) {
    const failed = await helmStep(ctx, Reason.InstallError, () => ctx.helm.uninstall({ release, namespace, signal }));
    if (failed !== undefined) return failed;
    return {
      kind: 'unlocked',
      events: [{ type: 'Warning', reason: 'ReleaseUnlocked', message: `Release ${release} ${was}; removed the unfinished install` }],
    };
  }
  const revision = lastGood.revision;
  const failed = await helmStep(ctx, Reason.UpgradeError, () => ctx.helm.rollback({ release, namespace, revision, force: false, signal }));
  if (failed !== undefined) return failed;
  return {
    kind: 'unlocked',
    events: [{ type: 'Warning', reason: 'ReleaseUnlocked', message: `Release ${release} ${was}; rolled back to revision ${revision}` }],
  };
}
