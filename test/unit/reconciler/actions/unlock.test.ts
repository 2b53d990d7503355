import { describe, expect, it } from 'vitest';
import { unlock } from '../../../../src/reconciler/actions/unlock.js';
import { Reason } from '../../../../src/reconciler/status/conditions.js';
import { LeadershipLostCancellation } from '../../../../src/runtime/reconcile.js';
import { FakeHelmError, harness, NAME, NAMESPACE, record } from './fakes.js';

describe('unlock', () => {
  it('removes a first install that never completed: helm uninstall, a ReleaseUnlocked event, unlocked', async () => {
    const h = harness();
    const outcome = await unlock(h.ctx, record(1, 'pending-install'), undefined);
    expect(outcome).toStrictEqual({
      kind: 'unlocked',
      events: [
        {
          type: 'Warning',
          reason: 'ReleaseUnlocked',
          message: `Release ${NAME} revision 1 was left pending-install; removed the unfinished install`,
        },
      ],
    });
    expect(h.helm.methods()).toStrictEqual(['uninstall']);
    expect(h.helm.callsOf('uninstall')[0]).toMatchObject({ release: NAME, namespace: NAMESPACE, signal: h.ctx.signal });
    expect(h.helm.callsOf('uninstall')[0]?.also).toBeUndefined();
  });

  it('rolls back to the last good revision, without force', async () => {
    const h = harness({ annotations: { 'helm.sdk.operatorframework.io/rollback-force': 'true' } });
    const outcome = await unlock(h.ctx, record(4, 'pending-upgrade'), record(2, 'superseded'));
    expect(outcome).toStrictEqual({
      kind: 'unlocked',
      events: [
        {
          type: 'Warning',
          reason: 'ReleaseUnlocked',
          message: `Release ${NAME} revision 4 was left pending-upgrade; rolled back to revision 2`,
        },
      ],
    });
    expect(h.helm.methods()).toStrictEqual(['rollback']);
    expect(h.helm.callsOf('rollback')).toStrictEqual([
      { release: NAME, namespace: NAMESPACE, revision: 2, force: false, signal: h.ctx.signal },
    ]);
  });

  it('reports a failed uninstall as an InstallError, with a ReleaseOperationFailed event and no retry count', async () => {
    const h = harness();
    const error = new FakeHelmError('uninstall: connection refused');
    h.helm.fail('uninstall', error);
    const outcome = await unlock(h.ctx, record(1, 'pending-install'), undefined);
    expect(outcome).toStrictEqual({
      kind: 'helm-failed',
      reason: Reason.InstallError,
      event: 'ReleaseOperationFailed',
      failure: { summary: 'uninstall: connection refused', retryable: true },
      cause: error,
    });
  });

  it('reports a failed rollback as an UpgradeError, with a ReleaseOperationFailed event', async () => {
    const h = harness();
    const error = new FakeHelmError('rollback: timed out');
    h.helm.fail('rollback', error);
    const outcome = await unlock(h.ctx, record(3, 'pending-rollback'), record(2, 'deployed'));
    expect(outcome).toStrictEqual({
      kind: 'helm-failed',
      reason: Reason.UpgradeError,
      event: 'ReleaseOperationFailed',
      failure: { summary: 'rollback: timed out', retryable: true },
      cause: error,
    });
  });

  it('is cancelled, reporting nothing, when leadership is lost while helm runs', async () => {
    for (const lastGood of [undefined, record(1, 'deployed')]) {
      const h = harness();
      const error = new FakeHelmError('helm was killed by SIGTERM');
      h.helm.during = () => {
        h.abort.abort(new LeadershipLostCancellation('lost the lease'));
      };
      h.helm.fail(lastGood === undefined ? 'uninstall' : 'rollback', error);
      const outcome = await unlock(h.ctx, record(2, 'pending-upgrade'), lastGood);
      expect(outcome).toStrictEqual({ kind: 'cancelled', cause: error });
      expect(h.helm.calls).toHaveLength(1);
    }
  });

  it('reports a helm failure after a shutdown that keeps leadership like any failure', async () => {
    const h = harness();
    const error = new FakeHelmError('canceled');
    h.helm.during = () => {
      h.abort.abort(new Error('shutting down'));
    };
    h.helm.fail('rollback', error);
    const outcome = await unlock(h.ctx, record(2, 'pending-upgrade'), record(1, 'deployed'));
    expect(outcome).toMatchObject({ kind: 'helm-failed', reason: Reason.UpgradeError, event: 'ReleaseOperationFailed', cause: error });
  });
});
