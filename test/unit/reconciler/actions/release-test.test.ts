/**
 * The watch's `test` gate after an install or upgrade (docs/adr/0081): run once per new revision,
 * undone on failure unless ignored; and on a deployed revision whose tests were never reported (docs/adr/0089).
 */
import { describe, expect, it } from 'vitest';
import { install } from '../../../../src/reconciler/actions/install.js';
import { previousRecord, testsUnreported, testUnreported } from '../../../../src/reconciler/actions/release-test.js';
import { upgrade } from '../../../../src/reconciler/actions/upgrade.js';
import { Reason } from '../../../../src/reconciler/status/conditions.js';
import { summarize } from '../../../../src/reconciler/decide/summarize.js';
import { readStatus } from '../../../../src/reconciler/status/status.js';
import { desired, harness, NAME, NAMESPACE, record } from './fakes.js';

const FAILED = {
  passed: false as const,
  summary: '1 error occurred: * job web-test failed: DeadlineExceeded',
  logs: 'POD LOGS: web-test\nconnection refused',
};
const input = { name: NAME, generation: 2, deleting: false, periodMs: 60_000 };

describe('release tests', () => {
  it('runs no test when the watch does not ask for it', async () => {
    const h = harness();
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(h.helm.methods()).toStrictEqual(['install']);
    expect(outcome).not.toHaveProperty('test');
  });

  it('tests the installed revision with the watch timeout and reports TestSuccess', async () => {
    const h = harness({ watch: { test: { enable: true, ignoreFailures: false, timeoutMs: 30_000 } } });
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(h.helm.methods()).toStrictEqual(['install', 'test']);
    expect(h.helm.callsOf('test')).toStrictEqual([{ release: NAME, namespace: NAMESPACE, signal: h.ctx.signal, timeoutMs: 30_000 }]);
    expect(outcome).toMatchObject({ kind: 'installed', test: { passed: true, message: 'helm test passed on revision 1' } });
    const s = summarize(readStatus({}), outcome, input);
    expect(s.status).toContainEqual({
      set: { type: 'TestSuccess', status: 'True', reason: Reason.TestSucceeded, message: 'helm test passed on revision 1' },
    });
  });

  it('rolls a deployed upgrade whose tests fail back, as a failed upgrade counted against its retries', async () => {
    const h = harness({ watch: { test: { enable: true, ignoreFailures: false } } });
    h.storage.set(NAMESPACE, NAME, [record(1, 'superseded'), record(2, 'deployed')]);
    h.helm.release = { ...h.helm.release, revision: 3 };
    h.helm.testResult = FAILED;
    const outcome = await upgrade(h.ctx, desired('fp-7'), record(2, 'deployed'));
    expect(h.helm.methods()).toStrictEqual(['upgrade', 'test', 'rollback']);
    const message = `helm test failed on revision 3: ${FAILED.summary}; test logs: ${FAILED.logs}`;
    expect(outcome).toMatchObject({
      kind: 'helm-failed',
      reason: Reason.TestFailed,
      failure: { summary: message, retryable: true },
      fingerprint: 'keyed-fp-7',
    });
    expect(outcome.events).toStrictEqual([
      { type: 'Warning', reason: 'RollbackSuccessful', message: `Rolled release ${NAME} back to revision 2` },
    ]);
    const s = summarize(readStatus({ deployedRelease: { revision: 2 } }), outcome, input);
    expect(s.status).toContainEqual({
      set: { type: 'Ready', status: 'False', reason: Reason.TestFailed, message: `revision 2 keeps serving; ${message}` },
    });
    expect(s.events).toContainEqual({ type: 'Warning', reason: Reason.TestFailed, message });
  });

  it('removes an install whose tests fail', async () => {
    const h = harness({ watch: { test: { enable: true, ignoreFailures: false } } });
    h.helm.testResult = FAILED;
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(h.helm.methods()).toStrictEqual(['install', 'test', 'uninstall']);
    expect(outcome).toMatchObject({ kind: 'helm-failed', reason: Reason.TestFailed, notDeployed: true });
  });

  it('keeps a revision whose failure the watch ignores, not Ready until another revision is tested', async () => {
    const h = harness({ watch: { test: { enable: true, ignoreFailures: true } } });
    h.storage.set(NAMESPACE, NAME, [record(1, 'deployed')]);
    h.helm.release = { ...h.helm.release, revision: 2 };
    h.helm.testResult = FAILED;
    const outcome = await upgrade(h.ctx, desired(), record(1, 'deployed'));
    expect(h.helm.methods()).toStrictEqual(['upgrade', 'test']);
    expect(outcome).toMatchObject({ kind: 'upgraded', test: { passed: false } });
    const draft = summarize(readStatus({}), outcome, input).status;
    expect(draft.at(-2)).toMatchObject({ set: { type: 'Ready', status: 'False', reason: Reason.TestFailed } });
    // The reconciles that follow run no test, and keep Ready False from the condition.
    const status = readStatus({
      conditions: [
        {
          type: 'TestSuccess',
          status: 'False',
          reason: 'TestFailed',
          message: 'helm test failed on revision 2',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    });
    const inSync = summarize(
      status,
      {
        kind: 'in-sync',
        revision: 2,
        deployment: { inventory: [], ready: { status: 'True', reason: 'ResourcesReady', message: '0/0 ready', ready: 0, total: 0 } },
        drift: { kind: 'settled' },
      },
      input,
    );
    expect(inSync.status.filter((e) => 'set' in e && e.set.type === 'Ready').at(-1)).toMatchObject({
      set: { status: 'False', reason: Reason.TestFailed, message: 'helm test failed on revision 2' },
    });
  });

  const ready = { status: 'True' as const, reason: 'ResourcesReady', message: '0/0 ready', ready: 0, total: 0 };
  const inSync = (revision: number) => ({
    kind: 'in-sync' as const,
    revision,
    deployment: { inventory: [], ready },
    drift: { kind: 'settled' as const },
  });

  it('tests an in-sync revision only when status does not name it: its install or upgrade never reported', () => {
    const on = { watch: { test: { enable: true, ignoreFailures: false } } };
    expect(testsUnreported(harness(on).ctx, 1)).toBe(true);
    expect(
      testsUnreported(
        harness({
          ...on,
          status: { deployedRelease: { name: NAME, namespace: NAMESPACE, revision: 1, chart: 'c', chartVersion: '1', appVersion: '' } },
        }).ctx,
        2,
      ),
    ).toBe(true);
    expect(
      testsUnreported(
        harness({
          ...on,
          status: { deployedRelease: { name: NAME, namespace: NAMESPACE, revision: 2, chart: 'c', chartVersion: '1', appVersion: '' } },
        }).ctx,
        2,
      ),
    ).toBe(false);
    expect(testsUnreported(harness().ctx, 1)).toBe(false);
  });

  it('reports a passing unreported revision with the revision itself, so it is not tested again', async () => {
    const h = harness({ watch: { test: { enable: true, ignoreFailures: false } } });
    const outcome = await testUnreported(h.ctx, inSync(1), desired());
    expect(h.helm.methods()).toStrictEqual(['test', 'status']);
    expect(outcome).toMatchObject({
      kind: 'in-sync',
      test: { passed: true, message: 'helm test passed on revision 1' },
      deployment: { release: { revision: 1 } },
    });
    const s = summarize(readStatus({}), outcome, input);
    expect(s.status).toContainEqual({
      set: { type: 'TestSuccess', status: 'True', reason: Reason.TestSucceeded, message: 'helm test passed on revision 1' },
    });
    expect(s.status.find((e) => 'release' in e)).toMatchObject({ release: { revision: 1 }, inventory: [] });
  });

  it('undoes a failing unreported revision as the action that made it: rolled back, or removed when it was installed', async () => {
    const h = harness({ watch: { test: { enable: true, ignoreFailures: false } } });
    h.storage.set(NAMESPACE, NAME, [record(1, 'superseded'), record(2, 'failed'), record(3, 'deployed')]);
    h.helm.testResult = FAILED;
    const rolled = await testUnreported(h.ctx, inSync(3), desired());
    expect(h.helm.methods()).toStrictEqual(['test', 'rollback']);
    expect(h.helm.callsOf('rollback')).toMatchObject([{ revision: 1 }]);
    expect(rolled).toMatchObject({ kind: 'helm-failed', reason: Reason.TestFailed, fingerprint: 'keyed-fp-1' });
    expect(rolled).not.toHaveProperty('notDeployed');

    const i = harness({ watch: { test: { enable: true, ignoreFailures: false } } });
    i.storage.set(NAMESPACE, NAME, [record(1, 'deployed')]);
    i.helm.testResult = FAILED;
    expect(await testUnreported(i.ctx, inSync(1), desired())).toMatchObject({
      kind: 'helm-failed',
      reason: Reason.TestFailed,
      notDeployed: true,
    });
    expect(i.helm.methods()).toStrictEqual(['test', 'uninstall']);
  });

  it('finds the revision an upgrade came from: the latest before it that served', () => {
    expect(previousRecord([record(1, 'superseded'), record(2, 'failed'), record(3, 'deployed')], 3)?.revision).toBe(1);
    expect(previousRecord([record(1, 'deployed')], 1)).toBeUndefined();
  });
});
