import { Watch } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, SLOW_UPGRADE as SLOW, startOperator, type CR } from '../../support/operator.js';

const WATCHES = `- {group: ${SLOW.group}, version: ${SLOW.version}, kind: ${SLOW.kind}, chart: ${fixtureChart('slow-upgrade')}}\n`;

/**
 * A long helm action is shown while it runs, as Flux marks Reconciling for each action: once it has
 * run for the progress delay (2 s; this upgrade's hooks take about 6), the CR says
 * `Reconciling=True/Progressing` with what runs before helm is done, and the outcome's write
 * removes it (StatusWriter.during, summarize). A short action writes its outcome alone (unit tests).
 */
describe('the Reconciling condition during a long upgrade', () => {
  it('says what runs while helm upgrades, and nothing once the upgrade is reported', { timeout: 180_000 }, async () => {
    const kc = testKubeConfig();
    await ensureCrd(kc, SLOW);
    const ns = await createNamespace(kc, 'progress');
    const op = await startOperator({ watches: WATCHES, namespaces: [ns.name] });
    const crs = new CRs(kc, SLOW);
    try {
      await crs.create(ns.name, 'app', { message: 'v1' });
      const installed = await crs.waitForCondition(ns.name, 'app', { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
      expect(condition(installed, 'Reconciling')).toBeUndefined();

      await crs.patch(ns.name, 'app', { spec: { message: 'v2' } });
      const during = await crs.waitForCondition(
        ns.name,
        'app',
        { type: 'Reconciling', status: 'True', reason: 'Progressing' },
        { intervalMs: 200 },
      );
      expect(condition(during, 'Reconciling')?.message).toBe('Upgrading release app from revision 1');
      // Seen before helm was done: revision 2 is not deployed yet (its hook Jobs take seconds).
      const deployed = (await new ReleaseStorage(kc).records(ns.name, 'app')).filter((r) => r.status === 'deployed');
      expect(deployed.map((r) => r.revision)).toEqual([1]);
      expect(condition(during, 'Deployed')?.reason).toBe('InstallSuccessful');

      const upgraded = await crs.waitForCondition(
        ns.name,
        'app',
        { type: 'Deployed', status: 'True', reason: 'UpgradeSuccessful' },
        { timeoutMs: 120_000 },
      );
      expect(condition(upgraded, 'Reconciling')).toBeUndefined();
      await waitFor('the upgrade event', async () => (await crs.events(ns.name, 'app')).some((e) => e.reason === 'UpgradeSuccessful'));
    } finally {
      await op.stop();
      await ns.remove();
    }
  });

  it('with --progress-delay longer than the upgrade, the outcome is the only status the upgrade writes', { timeout: 180_000 }, async () => {
    const kc = testKubeConfig();
    await ensureCrd(kc, SLOW);
    const ns = await createNamespace(kc, 'progress-delay');
    const op = await startOperator({ watches: WATCHES, namespaces: [ns.name], progressDelayMs: 3_600_000 });
    const crs = new CRs(kc, SLOW);
    let watching: AbortController | undefined;
    try {
      const installed = await crs
        .create(ns.name, 'app', { message: 'v1' })
        .then(() => crs.waitForCondition(ns.name, 'app', { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' }));
      // Every version of the CR from here on, as the API server stores them: a watch skips none.
      const seen: { deployed?: string; reconciling?: string }[] = [];
      watching = await new Watch(kc).watch(
        `/apis/${SLOW.group}/${SLOW.version}/namespaces/${ns.name}/${SLOW.plural}`,
        { fieldSelector: 'metadata.name=app', resourceVersion: installed.metadata.resourceVersion },
        (_type: string, cr: CR) => {
          const deployed = condition(cr, 'Deployed')?.reason;
          const reconciling = condition(cr, 'Reconciling')?.status;
          seen.push({ ...(deployed === undefined ? {} : { deployed }), ...(reconciling === undefined ? {} : { reconciling }) });
        },
        () => undefined,
      );
      await crs.patch(ns.name, 'app', { spec: { message: 'v2' } });
      await crs.waitForCondition(ns.name, 'app', { type: 'Deployed', status: 'True', reason: 'UpgradeSuccessful' }, { timeoutMs: 120_000 });
      await waitFor("the watch to deliver the upgrade's outcome", () =>
        Promise.resolve(seen.some((v) => v.deployed === 'UpgradeSuccessful')),
      );
      // The hooks ran for seconds, past the default delay (2 s) that the first test sees shown.
      expect(seen.filter((v) => v.reconciling !== undefined)).toEqual([]);
    } finally {
      watching?.abort();
      await op.stop();
      await ns.remove();
    }
  });
});
