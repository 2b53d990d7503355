import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectClient } from '../../../src/k8s/objects.js';
import { RestMapper } from '../../../src/k8s/restmapper.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  CRs,
  ensureCrd,
  fixtureChart,
  startOperator,
  waitForReconciles,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const ZOO: TestKind = { group: 'drift.example.com', version: 'v1', kind: 'Zoo', plural: 'zoos' };
const MEMCACHED: TestKind = { group: 'cache.example.com', version: 'v1alpha1', kind: 'Memcached', plural: 'memcacheds' };
const PERIOD = { 'helm.sdk.operatorframework.io/reconcile-period': '1s' };

/**
 * What the API server defaults or normalises is not a hand edit: charts that write an empty
 * imagePullPolicy, `1000m`, `1024Mi`, a port without protocol, a Service
 * without sessionAffinity or `annotations: {}` cause no repair, no write and no event over several
 * reconcile periods; a real edit of the same fields still is repaired.
 */
describe('no false drift', () => {
  const kc = testKubeConfig();
  const zoos = new CRs(kc, ZOO);
  const memcacheds = new CRs(kc, MEMCACHED);
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const objects = new ObjectClient(kc, new RestMapper(kc));
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

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
  /** Returns once each controller (one CR each here) has finished `count` more reconciles. */
  const reconciles = async (name: string, kind: CRs, count: number): Promise<void> => {
    const since = await activity(op);
    await Promise.all(['zoo-controller', 'memcached-controller'].map((c) => waitForReconciles(op, c, since, count)));
    expect((await kind.get(ns.name, name))?.status?.conditions?.find((c) => c.type === 'Deployed')?.status).toBe('True');
  };
  const events = async (kind: CRs, name: string, reason: string) => (await kind.events(ns.name, name)).filter((e) => e.reason === reason);

  beforeAll(async () => {
    await ensureCrd(kc, ZOO);
    await ensureCrd(kc, MEMCACHED);
    ns = await createNamespace(kc, 'false-drift');
    op = await startOperator({
      watches: [
        `- {group: ${ZOO.group}, version: ${ZOO.version}, kind: ${ZOO.kind}, chart: ${fixtureChart('drift-zoo')}}`,
        `- {group: ${MEMCACHED.group}, version: ${MEMCACHED.version}, kind: ${MEMCACHED.kind}, chart: ${fixtureChart('memcached-like')}}`,
        '',
      ].join('\n'),
      namespaces: [ns.name],
      // Its CRs ask for 1s resyncs; the default floor (30s) would raise them.
      annotationPeriodFloorMs: 1_000,
    });
    await zoos.create(ns.name, 'quiet', {}, PERIOD);
    await memcacheds.create(ns.name, 'cache', { replicaCount: 1 }, PERIOD);
    await zoos.waitForCondition(ns.name, 'quiet', { type: 'Ready', status: 'True' });
    await memcacheds.waitForCondition(ns.name, 'cache', { type: 'Deployed', status: 'True' });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('writes nothing and reports nothing over three reconcile periods', async () => {
    const refs = [...releaseObjects('quiet'), { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'cache-memcached' }];
    // Settle first: ownership stamping right after the install is a (legitimate) write.
    await reconciles('quiet', zoos, 2);
    const before = await resourceVersions(refs);
    await reconciles('quiet', zoos, 3);
    expect(await resourceVersions(refs)).toEqual(before);
    expect(await events(zoos, 'quiet', 'DriftCorrected')).toEqual([]);
    expect(await events(memcacheds, 'cache', 'DriftCorrected')).toEqual([]);
  });

  it('still repairs a real edit of each normalised field', async () => {
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
    const d = await waitFor('the Deployment to be put back', async () => {
      const x = await apps.readNamespacedDeployment({ namespace: ns.name, name: 'quiet-app' });
      const c = x.spec?.template.spec?.containers[0];
      return c?.imagePullPolicy === 'IfNotPresent' && c.resources?.limits?.cpu === '1' ? x : undefined;
    });
    expect(d.spec?.template.spec?.containers[0]?.resources?.limits).toEqual({ cpu: '1', memory: '1Gi' });

    await core.patchNamespacedService(
      { namespace: ns.name, name: 'quiet-svc', body: [{ op: 'replace', path: '/spec/ports/0/targetPort', value: 9090 }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    const svc = await waitFor('the targetPort to be put back', async () => {
      const s = await core.readNamespacedService({ namespace: ns.name, name: 'quiet-svc' });
      return s.spec?.ports?.[0]?.targetPort === 8080 ? s : undefined;
    });
    expect(svc.spec?.ports).toHaveLength(1);
    await waitFor('two DriftCorrected events', async () => (await events(zoos, 'quiet', 'DriftCorrected')).length >= 2);

    // And once repaired, the repairs do not repeat.
    const before = await resourceVersions(releaseObjects('quiet'));
    const corrections = (await events(zoos, 'quiet', 'DriftCorrected')).reduce((n, e) => n + (e.count ?? 1), 0);
    await reconciles('quiet', zoos, 3);
    expect(await resourceVersions(releaseObjects('quiet'))).toEqual(before);
    expect((await events(zoos, 'quiet', 'DriftCorrected')).reduce((n, e) => n + (e.count ?? 1), 0)).toBe(corrections);
  });
});
