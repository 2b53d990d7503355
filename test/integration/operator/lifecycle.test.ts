import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { FINALIZER } from '../../../src/reconciler/reconciler.js';
import { createNamespace, deploymentAvailable, testKubeConfig, waitFor } from '../../support/kube.js';
import { activity, condition, CRs, ensureCrd, helmExecutionsSince, NGINX, NGINX_CHART, startOperator, waitForReconciles, type RunningOperator } from '../../support/operator.js';

/** The release lifecycle of one CR, end to end: real apiserver, real helm (v4 and v3), the real chart. */
describe.each([
  ['helm v4', inject('helmBin')],
  ['helm v3', inject('helm3Bin')],
])('Nginx CR lifecycle with %s', (_label, helmBin) => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NGINX);
  const apps = kc.makeApiClient(AppsV1Api);
  const storage = new ReleaseStorage(kc);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'lifecycle');
    op = await startOperator({
      watches: `- group: example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: ${NGINX_CHART}\n  reconcilePeriod: 2s\n`,
      namespaces: [ns.name],
      helmBin,
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('installs a release for a new CR and reports it in status', async () => {
    await crs.create(ns.name, 'web', { replicaCount: 1 });
    const cr = await crs.waitForCondition(ns.name, 'web', { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
    expect(cr.metadata.finalizers).toContain(FINALIZER);
    expect(cr.status?.deployedRelease).toMatchObject({ name: 'web', revision: 1, chart: 'nginx', chartVersion: '0.1.0', appVersion: '1.27.3' });
    expect(cr.status?.observedGeneration).toBe(cr.metadata.generation);
    expect(condition(cr, 'Deployed')?.message).toContain('web-nginx');
    expect(condition(cr, 'Initialized')?.status).toBe('True');
    expect(condition(cr, 'ReleaseFailed')?.status).toBe('False');
    const kinds = (cr.status?.inventory ?? []).map((e) => `${e.kind}/${e.namespace}/${e.name}`).sort();
    expect(kinds).toEqual(
      ['ConfigMap', 'Deployment', 'Service', 'ServiceAccount'].map((k) => `${k}/${ns.name}/web-nginx`),
    );
    expect((cr.status as Record<string, unknown>).manifest).toBeUndefined();
    await waitFor('the Deployment to become Available', () => deploymentAvailable(kc, ns.name, 'web-nginx'));
    const records = await storage.records(ns.name, 'web');
    expect(records).toEqual([expect.objectContaining({ revision: 1, status: 'deployed' })]);
    await crs.waitForEvent(ns.name, 'web', 'InstallSuccessful');
  });

  it('upgrades when the spec changes', async () => {
    await crs.patch(ns.name, 'web', { spec: { replicaCount: 3 } });
    const cr = await crs.waitForCondition(ns.name, 'web', { type: 'Deployed', status: 'True', reason: 'UpgradeSuccessful' });
    expect(cr.status?.deployedRelease?.revision).toBe(2);
    const d = await apps.readNamespacedDeployment({ namespace: ns.name, name: 'web-nginx' });
    expect(d.spec?.replicas).toBe(3);
    await waitFor('3 available replicas', async () => (await apps.readNamespacedDeployment({ namespace: ns.name, name: 'web-nginx' })).status?.availableReplicas === 3);
    await crs.waitForEvent(ns.name, 'web', 'UpgradeSuccessful');
  });

  it('spawns no helm process while the spec stays the same', async () => {
    const before = await activity(op);
    // The same spec again: a new resourceVersion but no new generation, then two reconcile periods.
    await crs.patch(ns.name, 'web', { spec: { replicaCount: 3 } });
    await waitForReconciles(op, 'nginx-controller', before, 2);
    expect(await helmExecutionsSince(op, before)).toBe(0);
    const cr = await crs.get(ns.name, 'web');
    expect(cr?.status?.deployedRelease?.revision).toBe(2);
    expect((await storage.records(ns.name, 'web')).map((r) => r.revision).sort()).toEqual([1, 2]);
  });

  it('reports a spec the chart schema rejects and keeps the previous release serving', async () => {
    await crs.patch(ns.name, 'web', { spec: { replicaCount: -1 } });
    const failed = await crs.waitForCondition(ns.name, 'web', { type: 'ReleaseFailed', status: 'True', reason: 'UpgradeError' });
    expect(condition(failed, 'ReleaseFailed')?.message).toMatch(/replicaCount/);
    expect(failed.status?.deployedRelease?.revision).toBe(2);
    expect(failed.status?.observedGeneration).toBe(failed.metadata.generation);
    expect(await deploymentAvailable(kc, ns.name, 'web-nginx')).toBe(true);
    const latest = Math.max(...(await storage.records(ns.name, 'web')).map((r) => r.revision));
    expect(latest).toBe(2);
    await crs.waitForEvent(ns.name, 'web', 'UpgradeFailed');

    await crs.patch(ns.name, 'web', { spec: { replicaCount: 2 } });
    const fixed = await crs.waitForCondition(ns.name, 'web', { type: 'ReleaseFailed', status: 'False' });
    expect(fixed.status?.deployedRelease?.revision).toBe(3);
    expect(condition(fixed, 'Deployed')).toMatchObject({ status: 'True', reason: 'UpgradeSuccessful' });
  });

  it('uninstalls the release when the CR is deleted and removes the finalizer', async () => {
    await crs.delete(ns.name, 'web');
    await crs.waitForGone(ns.name, 'web');
    expect(await storage.records(ns.name, 'web')).toEqual([]);
    await waitFor('the Deployment to be deleted', async () => {
      const list = await apps.listNamespacedDeployment({ namespace: ns.name });
      return list.items.length === 0;
    });
  });

  it('reports the uninstall in status while another finalizer still holds the CR', async () => {
    const hold = 'example.com/hold';
    await crs.create(ns.name, 'held', { replicaCount: 1 });
    await crs.waitForCondition(ns.name, 'held', { type: 'Deployed', status: 'True' });
    await crs.patch(ns.name, 'held', { metadata: { finalizers: [FINALIZER, hold] } });
    await crs.delete(ns.name, 'held');
    const cr = await crs.waitForCondition(ns.name, 'held', { type: 'Deployed', status: 'False', reason: 'UninstallSuccessful' });
    expect(condition(cr, 'Deployed')?.message).toBe('Release uninstalled');
    expect(cr.status?.deployedRelease).toBeUndefined();
    const left = await waitFor('our finalizer to come off', async () => {
      const now = await crs.get(ns.name, 'held');
      return now?.metadata.finalizers?.includes(FINALIZER) === false ? now : undefined;
    });
    expect(left.metadata.finalizers).toEqual([hold]);
    expect(await storage.records(ns.name, 'held')).toEqual([]);
    await crs.patch(ns.name, 'held', { metadata: { finalizers: null } });
    await crs.waitForGone(ns.name, 'held');
  });

  it('uninstalls the releases of CRs deleted together with one helm process, each CR reported and gone', async () => {
    const names = ['b1', 'b2', 'b3', 'b4'];
    for (const name of names) await crs.create(ns.name, name, { replicaCount: 1 });
    for (const name of names) await crs.waitForCondition(ns.name, name, { type: 'Deployed', status: 'True' });
    // Another finalizer keeps b4 after the uninstall: its status must say so, whoever led the batch.
    const hold = 'example.com/hold';
    await crs.patch(ns.name, 'b4', { metadata: { finalizers: [FINALIZER, hold] } });
    // Deleted while no operator runs: the next one finds them all being deleted in its first LIST.
    await op.stop();
    for (const name of names) await crs.delete(ns.name, name);
    op = await startOperator({
      watches: `- group: example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: ${NGINX_CHART}\n`,
      namespaces: [ns.name],
      helmBin,
      maxConcurrentReconciles: 1,
    });
    const held = await crs.waitForCondition(ns.name, 'b4', { type: 'Deployed', status: 'False', reason: 'UninstallSuccessful' });
    expect(condition(held, 'Deployed')?.message).toBe('Release uninstalled');
    await waitFor('b4 to keep only the other finalizer', async () => (await crs.get(ns.name, 'b4'))?.metadata.finalizers?.join() === hold);
    await crs.patch(ns.name, 'b4', { metadata: { finalizers: null } });
    for (const name of names) await crs.waitForGone(ns.name, name);
    for (const name of names) expect(await storage.records(ns.name, name)).toEqual([]);
    // `helm version` once, then one `helm uninstall b? b? b? b?` (one process per CR without batching).
    expect(op.helm.executions).toBeLessThanOrEqual(2);
    for (const name of names) {
      await crs.waitForEvent(ns.name, name, (e) => e.message === `Uninstalled release ${name}`);
    }
    await waitFor('the Deployments to be deleted', async () => (await apps.listNamespacedDeployment({ namespace: ns.name })).items.length === 0);
  });
});
