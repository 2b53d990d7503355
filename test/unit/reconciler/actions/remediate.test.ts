import { describe, expect, it, vi } from 'vitest';
import { removeFailedInstall, rollbackFailedUpgrade } from '../../../../src/reconciler/actions/remediate.js';
import { FakeHelmError, harness, NAME, NAMESPACE, record } from './fakes.js';

describe('removeFailedInstall', () => {
  it('does nothing when the failed install stored no release', async () => {
    const h = harness();
    await removeFailedInstall(h.ctx);
    expect(h.storage.reads).toStrictEqual([`${NAMESPACE}/${NAME}`]);
    expect(h.helm.calls).toStrictEqual([]);
  });

  it("uninstalls the release the failed install stored, with the reconcile's signal", async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(1, 'failed')]);
    await removeFailedInstall(h.ctx);
    expect(h.helm.callsOf('uninstall')).toStrictEqual([{ release: NAME, namespace: NAMESPACE, signal: h.ctx.signal }]);
  });

  it('logs a failed removal, redacted, instead of throwing', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(1, 'failed')]);
    h.helm.fail('uninstall', new FakeHelmError('uninstall failed: password=hunter2'));
    const logged = vi.spyOn(h.ctx.log, 'error');
    const ctx = { ...h.ctx, redact: (text: string) => text.replaceAll('hunter2', '[hidden]') };
    await expect(removeFailedInstall(ctx)).resolves.toBeUndefined();
    expect(logged).toHaveBeenCalledWith({ error: 'uninstall failed: password=[hidden]' }, 'Could not remove the failed install');
  });

  it('still removes it after a shutdown abort, with a signal of its own', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(1, 'failed')]);
    h.abort.abort(new Error('shutting down'));
    await removeFailedInstall(h.ctx);
    const [call] = h.helm.callsOf('uninstall');
    expect(call?.signal).toBeInstanceOf(AbortSignal);
    expect(call?.signal).not.toBe(h.ctx.signal);
    expect(call?.signal?.aborted).toBe(false);
  });
});

describe('rollbackFailedUpgrade', () => {
  it('rolls back to `before` when the latest revision, in any order of records, is newer and not deployed', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(3, 'failed'), record(1, 'superseded'), record(2, 'deployed')]);
    const events = await rollbackFailedUpgrade(h.ctx, record(2, 'deployed'));
    expect(h.helm.callsOf('rollback')).toStrictEqual([
      { release: NAME, namespace: NAMESPACE, revision: 2, force: true, signal: h.ctx.signal },
    ]);
    expect(events).toStrictEqual([{ type: 'Warning', reason: 'RollbackSuccessful', message: `Rolled release ${NAME} back to revision 2` }]);
  });

  it('leaves a release with no records, or none newer than `before`, alone', async () => {
    for (const records of [[], [record(1, 'superseded'), record(2, 'deployed')], [record(2, 'failed')]]) {
      const h = harness();
      h.storage.set(NAMESPACE, NAME, records);
      const events = await rollbackFailedUpgrade(h.ctx, record(2, 'deployed'));
      expect(h.helm.calls).toStrictEqual([]);
      expect(events).toStrictEqual([]);
    }
  });

  it('leaves a newer deployed revision alone (ADR 0036)', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(2, 'superseded'), record(3, 'deployed')]);
    await rollbackFailedUpgrade(h.ctx, record(2, 'deployed'));
    expect(h.helm.calls).toStrictEqual([]);
  });

  it('never rolls back to a revision that was not serving', async () => {
    for (const status of ['failed', 'pending-upgrade', 'uninstalled'] as const) {
      const h = harness();
      h.storage.set(NAMESPACE, NAME, [record(2, status), record(3, 'failed')]);
      await rollbackFailedUpgrade(h.ctx, record(2, status));
      expect(h.helm.calls).toStrictEqual([]);
    }
  });

  it('falls back from a forced to a plain rollback, and says so', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(2, 'deployed'), record(3, 'failed')]);
    h.helm.fail('rollback', new FakeHelmError('forced: immutable'), 1);
    const events = await rollbackFailedUpgrade(h.ctx, record(2, 'deployed'));
    expect(h.helm.callsOf('rollback').map((r) => r.force)).toStrictEqual([true, false]);
    expect(events).toStrictEqual([
      {
        type: 'Warning',
        reason: 'RollbackSuccessful',
        message: `Rolled release ${NAME} back to revision 2 without force, after the forced rollback failed`,
      },
    ]);
  });

  it("reports every attempt's error when no rollback works", async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(2, 'deployed'), record(3, 'failed')]);
    h.helm.fail('rollback', new FakeHelmError('still immutable'));
    // Resolves (not throws): the upgrade's own error is what the reconcile reports.
    const events = await rollbackFailedUpgrade(h.ctx, record(2, 'deployed'));
    expect(events).toStrictEqual([
      {
        type: 'Warning',
        reason: 'RollbackFailed',
        message: `Rollback of ${NAME} to revision 2 failed: still immutable; then: still immutable`,
      },
    ]);
  });

  it('tries only a plain rollback with rollback-force "false"', async () => {
    const h = harness({ annotations: { 'helm.sdk.operatorframework.io/rollback-force': 'false' } });
    h.storage.set(NAMESPACE, NAME, [record(2, 'deployed'), record(3, 'failed')]);
    h.helm.fail('rollback', new FakeHelmError('nope'));
    const events = await rollbackFailedUpgrade(h.ctx, record(2, 'deployed'));
    expect(h.helm.callsOf('rollback').map((r) => r.force)).toStrictEqual([false]);
    expect(events).toStrictEqual([
      { type: 'Warning', reason: 'RollbackFailed', message: `Rollback of ${NAME} to revision 2 failed: nope` },
    ]);
  });

  it('rolls back after a shutdown abort with one live signal for every attempt', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(2, 'deployed'), record(3, 'pending-upgrade')]);
    h.helm.fail('rollback', new FakeHelmError('forced failed'), 1);
    h.abort.abort(new Error('shutting down'));
    await rollbackFailedUpgrade(h.ctx, record(2, 'deployed'));
    const [forced, plain] = h.helm.callsOf('rollback');
    expect(forced?.signal).not.toBe(h.ctx.signal);
    expect(forced?.signal?.aborted).toBe(false);
    expect(plain?.signal).toBe(forced?.signal);
  });
});
