import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, fixtureChart, startOperator, type TestKind } from '../../support/operator.js';
import { startOperatorProcess, waitForExit, waitForGroupGone, type OperatorProcess } from '../../support/process.js';

const SLOW: TestKind = { group: 'test.example.com', version: 'v1', kind: 'SlowApp', plural: 'slowapps' };

/**
 * A crash in the middle of `helm install` leaves the release `pending-install`, which blocks every
 * later helm operation ("another operation is in progress"). The next operator must recover it.
 */
describe('crash recovery', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, SLOW);
  const storage = new ReleaseStorage(kc);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let dir = '';
  let watches = '';
  let running: OperatorProcess | undefined;

  beforeAll(async () => {
    await ensureCrd(kc, SLOW);
    ns = await createNamespace(kc, 'crash');
    dir = await mkdtemp(path.join(os.tmpdir(), 'crash-test-'));
    watches = path.join(dir, 'watches.yaml');
    await writeFile(
      watches,
      `- group: ${SLOW.group}\n  version: ${SLOW.version}\n  kind: ${SLOW.kind}\n  chart: ${fixtureChart('slow-hook')}\n`,
    );
  });
  afterAll(async () => {
    running?.crash();
    await ns.remove();
    await rm(dir, { recursive: true, force: true });
  });

  const start = (): OperatorProcess =>
    startOperatorProcess(['run', '--watches-file', watches, '--helm-binary', inject('helmBin')], { WATCH_NAMESPACE: ns.name });

  it('finishes a release left pending-install by a SIGKILLed operator', async () => {
    running = start();
    await crs.create(ns.name, 'app', { message: 'first' });
    // The pre-install hook Job keeps the install pending for a few seconds: crash inside that window.
    await waitFor(
      'the release to be pending-install',
      async () => (await storage.records(ns.name, 'app')).some((r) => r.status === 'pending-install'),
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    running.crash();
    await waitForExit(running);
    // The helm it ran dies with it: once the group is gone, nothing can finish the install.
    await waitForGroupGone(running);
    expect((await storage.records(ns.name, 'app')).map((r) => r.status)).toEqual(['pending-install']);

    running = start();
    const cr = await crs.waitForCondition(ns.name, 'app', { type: 'Deployed', status: 'True' }, { timeoutMs: 90_000 });
    const records = await storage.records(ns.name, 'app');
    expect(records.filter((r) => r.status.startsWith('pending-'))).toEqual([]);
    expect(records.find((r) => r.status === 'deployed')).toBeDefined();
    expect(cr.status?.deployedRelease?.revision).toBe(Math.max(...records.map((r) => r.revision)));
    await crs.waitForEvent(ns.name, 'app', 'ReleaseUnlocked');

    running.child.kill('SIGTERM');
    expect((await waitForExit(running)).code).toBe(0);
    running = undefined;
  });

  /**
   * Found by the chaos tier (test/chaos/failover.test.ts): a leader frozen mid-install, thawed after
   * the standby took over, cancelled its install and then ran `helm uninstall` on the release (the
   * failed-install cleanup) and wrote InstallError status, both over the new leader's work.
   */
  it('a reconcile cancelled mid-install (lost leadership) leaves the release and the status to the next leader', async () => {
    // No progress status while the install runs: on a loaded machine the install outlasts the
    // default delay, and that legitimate write between the two reads below was read as the
    // cancelled reconcile's (a CI failure at load 25-29).
    const op = await startOperator({ watches: await readFile(watches, 'utf8'), namespaces: [ns.name], progressDelayMs: 600_000 });
    try {
      await crs.create(ns.name, 'cancelled', { message: 'first' });
      await waitFor(
        'the release to be pending-install',
        async () => (await storage.records(ns.name, 'cancelled')).some((r) => r.status === 'pending-install'),
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      const before = (await crs.get(ns.name, 'cancelled'))?.status;
      // What run does when leadership is lost: cancel in-flight reconciles at once, then a grace period.
      await op.operator.manager
        .get(`${SLOW.kind.toLowerCase()}-controller`)
        ?.stop({ timeoutMs: 0, abortGraceMs: 10_000, leadershipLost: true });
      expect((await storage.records(ns.name, 'cancelled')).length, 'the cancelled reconcile uninstalled the release').toBe(1);
      const after = await crs.get(ns.name, 'cancelled');
      expect(after?.status).toEqual(before);
    } finally {
      await op.stop();
    }
    // After the stop, which writes every queued Event.
    expect((await crs.events(ns.name, 'cancelled')).map((e) => e.reason)).not.toContain('InstallFailed');
    // The next operator unlocks and installs.
    running = start();
    await crs.waitForCondition(ns.name, 'cancelled', { type: 'Deployed', status: 'True' }, { timeoutMs: 90_000 });
    running.child.kill('SIGTERM');
    expect((await waitForExit(running)).code).toBe(0);
    running = undefined;
  });
});
