/**
 * Moved from the operator-level test/integration/operator/false-drift.test.ts (issue 45, item 2),
 * reconcile by reconcile. What the API server defaults or normalises is not a hand edit: charts that
 * write an empty imagePullPolicy, `1000m`, `1024Mi`, a port without protocol, a Service without
 * sessionAffinity or `annotations: {}` cause no repair, no write and no event over several resyncs
 * (the operator's reconcile periods, here reconciles asked for one after another); a real edit of
 * the same fields still is repaired. The two cases go on with the same releases, in order.
 */
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectClient } from '../../src/k8s/objects.js';
import { RestMapper } from '../../src/k8s/restmapper.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, type TestKind } from '../support/operator.js';
import { READY, startReconcilers, type ReconcilerHarness } from '../support/reconciler-harness.js';

const ZOO: TestKind = { group: 'drift.example.com', version: 'v1', kind: 'Zoo', plural: 'zoos' };
const MEMCACHED: TestKind = { group: 'cache.example.com', version: 'v1alpha1', kind: 'Memcached', plural: 'memcacheds' };

describe('no false drift', () => {
  const kc = testKubeConfig();
  const zoos = new CRs(kc, ZOO);
  const memcacheds = new CRs(kc, MEMCACHED);
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const objects = new ObjectClient(kc, new RestMapper(kc));
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let h: ReconcilerHarness;

  const releaseObjects = (release: string) => [
    { apiVersion: 'apps/v1', kind: 'Deployment', name: `${release}-app` },
    { apiVersion: 'v1', kind: 'Service', name: `${release}-svc` },
    { apiVersion: 'v1', kind: 'ConfigMap', name: `${release}-config` },
  ];
  const resourceVersions = async (
    refs: { apiVersion: string; kind: string; name: string }[],
  ): Promise<Record<string, string | undefined>> => {
    const out: Record<string, string | undefined> = {};
    for (const r of refs) {
      const obj: KubernetesObject | undefined = await objects.get({ ...r, namespace: ns.name });
      out[`${r.kind}/${r.name}`] = obj?.metadata?.resourceVersion;
    }
    return out;
  };
  /** `count` resyncs of each CR, each settled; both releases still deployed. */
  const resyncs = async (count: number): Promise<void> => {
    for (let i = 0; i < count; i++) {
      const quiet = await h.reconcileUntilSettled(`${ns.name}/quiet`, ZOO);
      const cache = await h.reconcileUntilSettled(`${ns.name}/cache`, MEMCACHED);
      expect(condition(quiet.cr, 'Deployed')?.status).toBe('True');
      expect(condition(cache.cr, 'Deployed')?.status).toBe('True');
    }
  };
  const events = async (kind: CRs, name: string, reason: string) => (await kind.events(ns.name, name)).filter((e) => e.reason === reason);

  beforeAll(async () => {
    await ensureCrd(kc, ZOO);
    await ensureCrd(kc, MEMCACHED);
    ns = await createNamespace(kc, 'false-drift');
    h = await startReconcilers({
      watches: [
        `- {group: ${ZOO.group}, version: ${ZOO.version}, kind: ${ZOO.kind}, chart: ${fixtureChart('drift-zoo')}}`,
        `- {group: ${MEMCACHED.group}, version: ${MEMCACHED.version}, kind: ${MEMCACHED.kind}, chart: ${fixtureChart('memcached-like')}}`,
        '',
      ].join('\n'),
      namespaces: [ns.name],
    });
    await zoos.create(ns.name, 'quiet', {});
    await memcacheds.create(ns.name, 'cache', { replicaCount: 1 });
    await h.reconcileUntil(`${ns.name}/quiet`, READY, ZOO);
    expect(condition((await h.reconcileUntilSettled(`${ns.name}/cache`, MEMCACHED)).cr, 'Deployed')?.status).toBe('True');
  });
  afterAll(async () => {
    await h.stop();
    await ns.remove();
  });

  it('writes nothing and reports nothing over three resyncs', async () => {
    const refs = [...releaseObjects('quiet'), { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'cache-memcached' }];
    // Settle first: ownership stamping right after the install is a (legitimate) write.
    await resyncs(2);
    const before = await resourceVersions(refs);
    await resyncs(3);
    expect(await resourceVersions(refs)).toEqual(before);
    expect(await events(zoos, 'quiet', 'DriftCorrected')).toEqual([]);
    expect(await events(memcacheds, 'cache', 'DriftCorrected')).toEqual([]);
  });

  it('still repairs a real edit of each normalised field', async () => {
    const key = `${ns.name}/quiet`;
    await apps.patchNamespacedDeployment(
      {
        namespace: ns.name,
        name: 'quiet-app',
        body: [
          { op: 'replace', path: '/spec/template/spec/containers/0/imagePullPolicy', value: 'Always' },
          { op: 'replace', path: '/spec/template/spec/containers/0/resources/limits/cpu', value: '2' },
          { op: 'replace', path: '/spec/template/spec/containers/0/resources/limits/memory', value: '2Gi' },
        ],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    await h.reconcileUntilSettled(key, ZOO);
    const c = (await apps.readNamespacedDeployment({ namespace: ns.name, name: 'quiet-app' })).spec?.template.spec?.containers[0];
    expect(c?.imagePullPolicy).toBe('IfNotPresent');
    expect(c?.resources?.limits).toEqual({ cpu: '1', memory: '1Gi' });

    await core.patchNamespacedService(
      { namespace: ns.name, name: 'quiet-svc', body: [{ op: 'replace', path: '/spec/ports/0/targetPort', value: 9090 }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    await h.reconcileUntilSettled(key, ZOO);
    const svc = await core.readNamespacedService({ namespace: ns.name, name: 'quiet-svc' });
    expect(svc.spec?.ports?.[0]?.targetPort).toBe(8080);
    expect(svc.spec?.ports).toHaveLength(1);
    await waitFor('two DriftCorrected events', async () => (await events(zoos, 'quiet', 'DriftCorrected')).length >= 2);

    // And once repaired (and the repaired Deployment rolled out), the repairs do not repeat.
    await h.reconcileUntil(key, READY, ZOO);
    const before = await resourceVersions(releaseObjects('quiet'));
    const corrections = (await events(zoos, 'quiet', 'DriftCorrected')).reduce((n, e) => n + (e.count ?? 1), 0);
    await resyncs(3);
    expect(await resourceVersions(releaseObjects('quiet'))).toEqual(before);
    expect((await events(zoos, 'quiet', 'DriftCorrected')).reduce((n, e) => n + (e.count ?? 1), 0)).toBe(corrections);
  });
});
