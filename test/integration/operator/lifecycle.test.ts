import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { isStatus } from '../../../src/k8s/errors.js';
import { FINALIZER } from '../../../src/reconciler/core/reconciler.js';
import { createNamespace, deploymentAvailable, exists, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  condition,
  CRs,
  ensureCrd,
  helmExecutionsSince,
  NGINX,
  NGINX_CHART,
  startOperator,
  waitForReconciles,
  type CR,
  type RunningOperator,
  type StartOptions,
} from '../../support/operator.js';

/**
 * The release lifecycle of a CR, end to end: real apiserver, real helm (v4 and v3), the real chart.
 * Each `it` makes the CR it needs and removes it after, so each runs alone (`-t`) and in any order,
 * and the controller reconciles that one CR while it runs (waitForReconciles counts per controller).
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
  let op: RunningOperator;
  /** The CRs the running `it` made, removed after it. */
  let made: string[] = [];

  const start = (o: Partial<StartOptions> = {}): Promise<RunningOperator> =>
    startOperator({
      watches: `- group: example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: ${NGINX_CHART}\n  reconcilePeriod: 2s\n`,
      namespaces: [ns.name],
      helmBin,
      ...o,
    });

  /** Creates a CR and waits until its release is installed. */
  async function installed(name: string, spec: Record<string, unknown> = { replicaCount: 1 }): Promise<CR> {
    made.push(name);
    await crs.create(ns.name, name, spec);
    return crs.waitForCondition(ns.name, name, { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
  }

  const deploymentGone = (name: string): Promise<boolean> =>
    waitFor(
      `Deployment ${name}-nginx to be deleted`,
      async () => !(await exists(() => apps.readNamespacedDeployment({ namespace: ns.name, name: `${name}-nginx` }))),
    );

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'lifecycle');
    op = await start();
  });
  afterEach(async () => {
    // Through the operator (its finalizer uninstalls); a finalizer of someone else's is let go after.
    for (const name of made) {
      await crs.delete(ns.name, name).catch((err: unknown) => {
        if (!isStatus(err, 404)) throw err;
      });
      await waitFor(`${name} uninstalled`, async () => (await crs.get(ns.name, name))?.metadata.finalizers?.includes(FINALIZER) !== true);
      if ((await crs.get(ns.name, name)) !== undefined) await crs.patch(ns.name, name, { metadata: { finalizers: null } });
      await crs.waitForGone(ns.name, name);
    }
    made = [];
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('installs a release for a new CR and reports it in status', async () => {
    const cr = await installed('web');
    expect(cr.metadata.finalizers).toContain(FINALIZER);
    expect(cr.status?.deployedRelease).toMatchObject({
      name: 'web',
      revision: 1,
      chart: 'nginx',
      chartVersion: '0.1.0',
      appVersion: '1.27.3',
    });
    expect(cr.status?.observedGeneration).toBe(cr.metadata.generation);
    expect(condition(cr, 'Deployed')?.message).toContain('web-nginx');
    expect(condition(cr, 'Initialized')?.status).toBe('True');
    expect(condition(cr, 'ReleaseFailed')?.status).toBe('False');
    const kinds = (cr.status?.inventory ?? []).map((e) => `${e.kind}/${e.namespace}/${e.name}`).sort();
    expect(kinds).toEqual(['ConfigMap', 'Deployment', 'Service', 'ServiceAccount'].map((k) => `${k}/${ns.name}/web-nginx`));
    expect((cr.status as Record<string, unknown>).manifest).toBeUndefined();
    await waitFor('the Deployment to become Available', () => deploymentAvailable(kc, ns.name, 'web-nginx'));
    const records = await storage.records(ns.name, 'web');
    expect(records).toEqual([expect.objectContaining({ revision: 1, status: 'deployed' })]);
    await crs.waitForEvent(ns.name, 'web', 'InstallSuccessful');
  });

  it('upgrades when the spec changes', async () => {
    await installed('grow');
    await crs.patch(ns.name, 'grow', { spec: { replicaCount: 3 } });
    const cr = await crs.waitForCondition(ns.name, 'grow', { type: 'Deployed', status: 'True', reason: 'UpgradeSuccessful' });
    expect(cr.status?.deployedRelease?.revision).toBe(2);
    const d = await apps.readNamespacedDeployment({ namespace: ns.name, name: 'grow-nginx' });
    expect(d.spec?.replicas).toBe(3);
    await waitFor(
      '3 available replicas',
      async () => (await apps.readNamespacedDeployment({ namespace: ns.name, name: 'grow-nginx' })).status?.availableReplicas === 3,
    );
    await crs.waitForEvent(ns.name, 'grow', 'UpgradeSuccessful');
  });

  it('spawns no helm process while the spec stays the same', async () => {
    await installed('steady');
    const before = await activity(op);
    // The same spec again: a new resourceVersion but no new generation, then two reconcile periods.
    await crs.patch(ns.name, 'steady', { spec: { replicaCount: 1 } });
    await waitForReconciles(op, 'nginx-controller', before, 2);
    expect(await helmExecutionsSince(op, before)).toBe(0);
    const cr = await crs.get(ns.name, 'steady');
    expect(cr?.status?.deployedRelease?.revision).toBe(1);
    expect((await storage.records(ns.name, 'steady')).map((r) => r.revision)).toEqual([1]);
  });

  it('reports a spec the chart schema rejects and keeps the previous release serving', async () => {
    await installed('bad');
    await waitFor('the Deployment to become Available', () => deploymentAvailable(kc, ns.name, 'bad-nginx'));
    await crs.patch(ns.name, 'bad', { spec: { replicaCount: -1 } });
    const failed = await crs.waitForCondition(ns.name, 'bad', { type: 'ReleaseFailed', status: 'True', reason: 'UpgradeError' });
    expect(condition(failed, 'ReleaseFailed')?.message).toMatch(/replicaCount/);
    expect(failed.status?.deployedRelease?.revision).toBe(1);
    expect(failed.status?.observedGeneration).toBe(failed.metadata.generation);
    expect(await deploymentAvailable(kc, ns.name, 'bad-nginx')).toBe(true);
    const latest = Math.max(...(await storage.records(ns.name, 'bad')).map((r) => r.revision));
    expect(latest).toBe(1);
    await crs.waitForEvent(ns.name, 'bad', 'UpgradeFailed');

    await crs.patch(ns.name, 'bad', { spec: { replicaCount: 2 } });
    const fixed = await crs.waitForCondition(ns.name, 'bad', { type: 'ReleaseFailed', status: 'False' });
    expect(fixed.status?.deployedRelease?.revision).toBe(2);
    expect(condition(fixed, 'Deployed')).toMatchObject({ status: 'True', reason: 'UpgradeSuccessful' });
  });

  it('uninstalls the release when the CR is deleted and removes the finalizer', async () => {
    await installed('gone');
    await crs.delete(ns.name, 'gone');
    await crs.waitForGone(ns.name, 'gone');
    expect(await storage.records(ns.name, 'gone')).toEqual([]);
    await deploymentGone('gone');
  });

  it('reports the uninstall in status while another finalizer still holds the CR', async () => {
    const hold = 'example.com/hold';
    await installed('held');
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
    for (const name of names) await installed(name);
    // Another finalizer keeps b4 after the uninstall: its status must say so, whoever led the batch.
    const hold = 'example.com/hold';
    await crs.patch(ns.name, 'b4', { metadata: { finalizers: [FINALIZER, hold] } });
    // Deleted while no operator runs: the next one finds them all being deleted in its first LIST.
    await op.stop();
    let batch: RunningOperator | undefined;
    try {
      for (const name of names) await crs.delete(ns.name, name);
      batch = await start({
        watches: `- group: example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: ${NGINX_CHART}\n`,
        maxConcurrentReconciles: 1,
      });
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
      // The other tests' operator again, whatever order they run in.
      await batch?.stop();
      op = await start();
    }
  });
});
