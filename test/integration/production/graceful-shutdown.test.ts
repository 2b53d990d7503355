import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, fixtureChart, SLOW_UPGRADE as SLOW } from '../../support/operator.js';
import { killAll, spawnOperator, watchEntry, watchesFile } from './support.js';

describe('graceful shutdown during a helm upgrade', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, SLOW);
  const storage = new ReleaseStorage(kc);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let watches: Awaited<ReturnType<typeof watchesFile>>;

  beforeAll(async () => {
    await ensureCrd(kc, SLOW);
    ns = await createNamespace(kc, 'prod-shutdown');
    watches = await watchesFile(watchEntry(SLOW, fixtureChart('slow-upgrade')));
  });
  afterAll(async () => {
    await killAll();
    for (const cr of ['app', 'cut']) {
      if ((await crs.get(ns.name, cr)) !== undefined)
        await crs.patch(ns.name, cr, { metadata: { finalizers: null } }).catch(() => undefined);
    }
    await ns.remove();
    await watches.remove();
  });

  /** Starts an operator, installs `name`, patches its spec and waits until helm is mid-upgrade. */
  async function upgradeInFlight(name: string, args: string[] = []) {
    const op = spawnOperator({ watchesFile: watches.file, namespace: ns.name, args });
    await crs.create(ns.name, name, { message: 'v1' });
    await crs.waitForCondition(ns.name, name, { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
    await crs.patch(ns.name, name, { spec: { message: 'v2' } });
    await waitFor(
      'the upgrade to be in progress (revision 2 pending-upgrade)',
      async () => (await storage.records(ns.name, name)).some((r) => r.revision === 2 && r.status === 'pending-upgrade'),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    return op;
  }

  it('SIGTERM lets the in-flight upgrade finish, then exits 0 with no pending release', { timeout: 120_000 }, async () => {
    const op = await upgradeInFlight('app');
    const signalledAt = Date.now();
    const exit = await op.stop(60_000);
    const tookMs = Date.now() - signalledAt;
    expect(exit, op.dump()).toEqual({ code: 0, signal: null });
    const records = await storage.records(ns.name, 'app');
    expect(records.map((r) => `${r.revision}:${r.status}`).sort()).toEqual(['1:superseded', '2:deployed']);
    expect(records.some((r) => r.status.startsWith('pending'))).toBe(false);
    // The reconcile ran to its end: the status reports the upgrade.
    const cr = await crs.get(ns.name, 'app');
    const deployed = cr?.status?.conditions?.find((c) => c.type === 'Deployed');
    expect(deployed).toMatchObject({ status: 'True', reason: 'UpgradeSuccessful' });
    expect(cr?.status?.deployedRelease?.revision).toBe(2);
    // Within the default graceful timeout (30 s), the in-flight upgrade was neither cut nor rolled back.
    expect(tookMs).toBeLessThan(30_000);
    expect((await crs.events(ns.name, 'app')).map((e) => e.reason)).not.toContain('UpgradeFailed');
  });

  it(
    'when --graceful-shutdown-timeout expires first, helm is cancelled cleanly: exit 0, the release is not left pending',
    { timeout: 120_000 },
    async () => {
      const op = await upgradeInFlight('cut', ['--graceful-shutdown-timeout', '1s']);
      const exit = await op.stop(60_000);
      expect(exit, op.dump()).toEqual({ code: 0, signal: null });
      const records = await storage.records(ns.name, 'cut');
      expect(
        records.some((r) => r.status.startsWith('pending')),
        JSON.stringify(records),
      ).toBe(false);
      // Cut: the upgrade never deployed revision 2.
      expect(
        records.map((r) => `${r.revision}:${r.status}`),
        JSON.stringify(records),
      ).not.toContain('2:deployed');
      // A cancelled upgrade is not the release failing: it spends none of the retry budget, so
      // restarts during long upgrades never add up to Stalled.
      const cr = await crs.get(ns.name, 'cut');
      expect((cr?.status as { failedAttempts?: unknown } | undefined)?.failedAttempts, JSON.stringify(cr?.status)).toBeUndefined();
      expect(cr?.status?.conditions?.find((c) => c.type === 'Stalled')).toBeUndefined();
    },
  );
});
