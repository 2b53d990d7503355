/**
 * Moved from the operator-level test/integration/operator/lifecycle.test.ts (issue 45, item 2),
 * reconcile by reconcile: the release lifecycle of a CR against the real API server, real helm (v4
 * and v3) and the real chart. Each case owns a namespace and a harness (its helm process count is
 * its own), and runs beside the others. The uninstall of CRs deleted together while no operator ran
 * (one helm process for the batch) stays operator-level: it is a story of the controller's first
 * LIST after a start.
 */
import { AppsV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { ReleaseStorage } from '../../src/helm/storage.js';
import { FINALIZER } from '../../src/reconciler/core/reconciler.js';
import { deploymentAvailable, exists, testKubeConfig, waitFor } from '../support/kube.js';
import { condition, CRs, ensureCrd, NGINX, NGINX_CHART, type CR } from '../support/operator.js';
import { withReconcilers, type ReconcilerHarness } from '../support/reconciler-harness.js';

const WATCHES = `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}}\n`;

describe.concurrent.each([
  ['helm v4', inject('helmBin')],
  ['helm v3', inject('helm3Bin')],
])('Nginx CR lifecycle with %s', (label, helmBin) => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NGINX);
  const apps = kc.makeApiClient(AppsV1Api);
  const storage = new ReleaseStorage(kc);
  const prefix = `lifecycle-${label.replace(/\W+/g, '')}`;
  const inNamespace = (run: (ns: string, h: ReconcilerHarness) => Promise<void>): Promise<void> =>
    withReconcilers(prefix, { watches: WATCHES, helmBin }, run);

  /** Creates a CR and reconciles it until its release is installed. */
  async function installed(
    h: ReconcilerHarness,
    ns: string,
    name: string,
    spec: Record<string, unknown> = { replicaCount: 1 },
  ): Promise<CR> {
    await crs.create(ns, name, spec);
    const { cr } = await h.reconcileUntilSettled(`${ns}/${name}`);
    expect(condition(cr, 'Deployed')).toMatchObject({ status: 'True', reason: 'InstallSuccessful' });
    return cr as CR;
  }

  const deploymentGone = (ns: string, name: string): Promise<boolean> =>
    waitFor(
      `Deployment ${name}-nginx to be deleted`,
      async () => !(await exists(() => apps.readNamespacedDeployment({ namespace: ns, name: `${name}-nginx` }))),
    );

  beforeAll(() => ensureCrd(kc, NGINX));

  it('installs a release for a new CR and reports it in status', () =>
    inNamespace(async (ns, h) => {
      const cr = await installed(h, ns, 'web');
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
      expect(kinds).toEqual(['ConfigMap', 'Deployment', 'Service', 'ServiceAccount'].map((k) => `${k}/${ns}/web-nginx`));
      expect((cr.status as Record<string, unknown>).manifest).toBeUndefined();
      await waitFor('the Deployment to become Available', () => deploymentAvailable(kc, ns, 'web-nginx'));
      expect(await storage.records(ns, 'web')).toEqual([expect.objectContaining({ revision: 1, status: 'deployed' })]);
      await crs.waitForEvent(ns, 'web', 'InstallSuccessful');
    }));

  it('upgrades when the spec changes', () =>
    inNamespace(async (ns, h) => {
      await installed(h, ns, 'grow');
      await crs.patch(ns, 'grow', { spec: { replicaCount: 3 } });
      const { cr } = await h.reconcileUntilSettled(`${ns}/grow`);
      expect(condition(cr, 'Deployed')).toMatchObject({ status: 'True', reason: 'UpgradeSuccessful' });
      expect(cr?.status?.deployedRelease?.revision).toBe(2);
      const d = await apps.readNamespacedDeployment({ namespace: ns, name: 'grow-nginx' });
      expect(d.spec?.replicas).toBe(3);
      await waitFor(
        '3 available replicas',
        async () => (await apps.readNamespacedDeployment({ namespace: ns, name: 'grow-nginx' })).status?.availableReplicas === 3,
      );
      await crs.waitForEvent(ns, 'grow', 'UpgradeSuccessful');
    }));

  it('spawns no helm process while the spec stays the same', () =>
    inNamespace(async (ns, h) => {
      const key = `${ns}/steady`;
      await installed(h, ns, 'steady');
      const before = h.helm.executions;
      // The same spec again: a new resourceVersion but no new generation, then two resyncs (the periods).
      await crs.patch(ns, 'steady', { spec: { replicaCount: 1 } });
      await h.reconcileUntilSettled(key);
      for (let i = 0; i < 2; i++) await h.reconcileUntilSettled(key);
      expect(h.helm.executions).toBe(before);
      const cr = await crs.get(ns, 'steady');
      expect(cr?.status?.deployedRelease?.revision).toBe(1);
      expect((await storage.records(ns, 'steady')).map((r) => r.revision)).toEqual([1]);
    }));

  it('reports a spec the chart schema rejects and keeps the previous release serving', () =>
    inNamespace(async (ns, h) => {
      const key = `${ns}/bad`;
      await installed(h, ns, 'bad');
      await waitFor('the Deployment to become Available', () => deploymentAvailable(kc, ns, 'bad-nginx'));
      await crs.patch(ns, 'bad', { spec: { replicaCount: -1 } });
      const failed = (await h.reconcileUntilSettled(key, undefined, { stopAtError: true })).cr;
      expect(condition(failed, 'ReleaseFailed')).toMatchObject({ status: 'True', reason: 'UpgradeError' });
      expect(condition(failed, 'ReleaseFailed')?.message).toMatch(/replicaCount/);
      expect(failed?.status?.deployedRelease?.revision).toBe(1);
      expect(failed?.status?.observedGeneration).toBe(failed?.metadata.generation);
      expect(await deploymentAvailable(kc, ns, 'bad-nginx')).toBe(true);
      expect(Math.max(...(await storage.records(ns, 'bad')).map((r) => r.revision))).toBe(1);
      await crs.waitForEvent(ns, 'bad', 'UpgradeFailed');

      await crs.patch(ns, 'bad', { spec: { replicaCount: 2 } });
      const fixed = (await h.reconcileUntilSettled(key)).cr;
      expect(condition(fixed, 'ReleaseFailed')?.status).toBe('False');
      expect(fixed?.status?.deployedRelease?.revision).toBe(2);
      expect(condition(fixed, 'Deployed')).toMatchObject({ status: 'True', reason: 'UpgradeSuccessful' });
    }));

  it('uninstalls the release when the CR is deleted and removes the finalizer', () =>
    inNamespace(async (ns, h) => {
      await installed(h, ns, 'gone');
      await crs.delete(ns, 'gone');
      expect((await h.reconcileUntilSettled(`${ns}/gone`)).cr).toBeUndefined();
      expect(await storage.records(ns, 'gone')).toEqual([]);
      await deploymentGone(ns, 'gone');
    }));

  it('reports the uninstall in status while another finalizer still holds the CR', () =>
    inNamespace(async (ns, h) => {
      const hold = 'example.com/hold';
      await installed(h, ns, 'held');
      await crs.patch(ns, 'held', { metadata: { finalizers: [FINALIZER, hold] } });
      await crs.delete(ns, 'held');
      const { cr } = await h.reconcileUntilSettled(`${ns}/held`);
      expect(condition(cr, 'Deployed')).toMatchObject({ status: 'False', reason: 'UninstallSuccessful', message: 'Release uninstalled' });
      expect(cr?.status?.deployedRelease).toBeUndefined();
      expect(cr?.metadata.finalizers).toEqual([hold]);
      expect(await storage.records(ns, 'held')).toEqual([]);
      await crs.patch(ns, 'held', { metadata: { finalizers: null } });
      await crs.waitForGone(ns, 'held');
    }));
});
