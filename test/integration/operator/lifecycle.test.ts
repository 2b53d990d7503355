import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { FINALIZER } from '../../../src/reconciler/core/reconciler.js';
import { createNamespace, exists, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  condition,
  CRs,
  ensureCrd,
  NGINX,
  NGINX_CHART,
  startOperator,
  type RunningOperator,
  type StartOptions,
} from '../../support/operator.js';

/**
 * The release lifecycle's story of the whole operator: CRs deleted together while no operator ran
 * are uninstalled by the next one's first LIST with one helm process, each CR reported and gone.
 * The lifecycle's decisions (install, upgrade, no helm while the spec stays, a schema refusal,
 * uninstall, another finalizer) are test/middle/lifecycle.test.ts's, with helm v4 and v3.
 */
describe.each([
  ['helm v4', inject('helmBin')],
  ['helm v3', inject('helm3Bin')],
])('Nginx CR lifecycle with %s', (_label, helmBin) => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NGINX);
  const apps = kc.makeApiClient(AppsV1Api);
  const storage = new ReleaseStorage(kc);
  let ns: Awaited<ReturnType<typeof createNamespace>>;

  const start = (o: Partial<StartOptions> = {}): Promise<RunningOperator> =>
    startOperator({
      watches: `- group: example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: ${NGINX_CHART}\n`,
      namespaces: [ns.name],
      helmBin,
      ...o,
    });

  const deploymentGone = (name: string): Promise<boolean> =>
    waitFor(
      `Deployment ${name}-nginx to be deleted`,
      async () => !(await exists(() => apps.readNamespacedDeployment({ namespace: ns.name, name: `${name}-nginx` }))),
    );

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'lifecycle');
  });
  afterAll(() => ns.remove());

  it('uninstalls the releases of CRs deleted together with one helm process, each CR reported and gone', async () => {
    const names = ['b1', 'b2', 'b3', 'b4'];
    const op = await start();
    try {
      for (const name of names) await crs.create(ns.name, name, { replicaCount: 1 });
      for (const name of names) {
        await crs.waitForCondition(ns.name, name, { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
      }
    } finally {
      await op.stop();
    }
    // Another finalizer keeps b4 after the uninstall: its status must say so, whoever led the batch.
    const hold = 'example.com/hold';
    await crs.patch(ns.name, 'b4', { metadata: { finalizers: [FINALIZER, hold] } });
    // Deleted while no operator runs: the next one finds them all being deleted in its first LIST.
    for (const name of names) await crs.delete(ns.name, name);
    const batch = await start({ maxConcurrentReconciles: 1 });
    try {
      const held = await crs.waitForCondition(ns.name, 'b4', { type: 'Deployed', status: 'False', reason: 'UninstallSuccessful' });
      expect(condition(held, 'Deployed')?.message).toBe('Release uninstalled');
      await waitFor(
        'b4 to keep only the other finalizer',
        async () => (await crs.get(ns.name, 'b4'))?.metadata.finalizers?.join() === hold,
      );
      await crs.patch(ns.name, 'b4', { metadata: { finalizers: null } });
      for (const name of names) await crs.waitForGone(ns.name, name);
      for (const name of names) expect(await storage.records(ns.name, name)).toEqual([]);
      // `helm version` once, then one `helm uninstall b? b? b? b?` (one process per CR without batching).
      expect(batch.helm.executions).toBeLessThanOrEqual(2);
      for (const name of names) {
        await crs.waitForEvent(ns.name, name, (e) => e.message === `Uninstalled release ${name}`);
      }
      for (const name of names) await deploymentGone(name);
    } finally {
      await batch.stop();
    }
  });
});
