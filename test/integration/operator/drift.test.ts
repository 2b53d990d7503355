import { AppsV1Api, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { CHART_LABEL, PRIMARY_RESOURCE, PRIMARY_RESOURCE_TYPE } from '../../../src/reconciler/ownership.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  condition,
  CRs,
  ensureCrd,
  fixtureChart,
  NGINX,
  NGINX_CHART,
  startOperator,
  waitForReconciles,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const ROLES: TestKind = { group: 'test.example.com', version: 'v1', kind: 'Reader', plural: 'readers' };
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** What each release created is watched: drift is repaired, ownership stamped, readiness reported. */
describe('dependent watches, drift repair and readiness', () => {
  const kc = testKubeConfig();
  const nginx = new CRs(kc, NGINX);
  const readers = new CRs(kc, ROLES);
  const apps = kc.makeApiClient(AppsV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  const deployment = (name: string) => apps.readNamespacedDeployment({ namespace: ns.name, name });
  const driftEvents = async (name: string) =>
    (await nginx.events(ns.name, name)).filter((e) => e.reason === 'DriftCorrected').map((e) => e.message ?? '');

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    await ensureCrd(kc, ROLES);
    ns = await createNamespace(kc, 'drift');
    op = await startOperator({
      watches: [
        `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}}`,
        `- {group: test.example.com, version: v1, kind: Reader, chart: ${fixtureChart('cluster-scoped')}}`,
        '',
      ].join('\n'),
      namespaces: [ns.name],
    });
    await nginx.create(ns.name, 'web', { replicaCount: 2 });
    await nginx.waitForCondition(ns.name, 'web', { type: 'Ready', status: 'True' });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('marks every object as owned by the CR and labels it with the chart', async () => {
    const cr = await nginx.get(ns.name, 'web');
    const d = await deployment('web-nginx');
    expect(d.metadata?.labels?.[CHART_LABEL]).toBe('nginx');
    expect(d.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Nginx', name: 'web', uid: cr?.metadata.uid, controller: true, blockOwnerDeletion: true }),
    ]);
    expect(condition(cr, 'Ready')).toMatchObject({ status: 'True', reason: 'ResourcesReady', message: '4/4 ready' });
  });

  it('recreates a deleted Deployment', async () => {
    const before = (await deployment('web-nginx')).metadata?.uid;
    await apps.deleteNamespacedDeployment({ namespace: ns.name, name: 'web-nginx' });
    const back = await waitFor('the Deployment to come back', async () => {
      try {
        const d = await deployment('web-nginx');
        return d.metadata?.uid !== before ? d : undefined;
      } catch (err) {
        if (isStatus(err, 404)) return undefined;
        throw err;
      }
    });
    expect(back.spec?.replicas).toBe(2);
    await waitFor('a DriftCorrected event', async () => (await driftEvents('web')).some((m) => m.includes('Recreated Deployment')));
  });

  it('reverts a hand-edited image and a hand-scaled replica count, but keeps a label someone added', async () => {
    const d = await deployment('web-nginx');
    const containers = d.spec?.template.spec?.containers.map((c) => ({ name: c.name, image: 'nginx:evil' }));
    await apps.patchNamespacedDeployment(
      {
        namespace: ns.name,
        name: 'web-nginx',
        body: { metadata: { labels: { 'team.example.com/owner': 'payments' } }, spec: { replicas: 5, template: { spec: { containers } } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    const repaired = await waitFor('the image and replicas to be reverted', async () => {
      const now = await deployment('web-nginx');
      return now.spec?.replicas === 2 && now.spec.template.spec?.containers[0]?.image === 'nginx:1.27.3' ? now : undefined;
    });
    expect(repaired.metadata?.labels?.['team.example.com/owner']).toBe('payments');
    await waitFor('a DriftCorrected event that restored the Deployment', async () =>
      (await driftEvents('web')).some((m) => m.startsWith('Restored') && m.includes('Deployment')),
    );
  });

  it('grows informers with kinds, not with CRs', async () => {
    const before = op.operator.dependentInformers();
    await nginx.create(ns.name, 'second', {});
    await nginx.create(ns.name, 'third', {});
    await nginx.waitForCondition(ns.name, 'second', { type: 'Deployed', status: 'True' });
    await nginx.waitForCondition(ns.name, 'third', { type: 'Deployed', status: 'True' });
    expect(op.operator.dependentInformers()).toBe(before);
  });

  it('reports Ready=False while the Deployment is unavailable and True once it is available', async () => {
    await nginx.create(ns.name, 'stuck', { nodeSelector: { 'example.com/no-such-node': 'x' } });
    // First the rollout is not observed yet, then the pod stays Pending: wait for the steady message.
    const waiting = await waitFor('Ready=False with the Deployment unavailable', async () => {
      const cr = await nginx.get(ns.name, 'stuck');
      const ready = condition(cr, 'Ready');
      return ready?.status === 'False' && ready.message.startsWith('3/4 ready: Deployment stuck-nginx 0/1 available') ? cr : undefined;
    });
    expect(condition(waiting, 'Ready')?.reason).toBe('ResourcesNotReady');
    expect(condition(waiting, 'Deployed')?.status).toBe('True');
    await nginx.patch(ns.name, 'stuck', { spec: { nodeSelector: null } });
    const ready = await nginx.waitForCondition(ns.name, 'stuck', { type: 'Ready', status: 'True' });
    expect(condition(ready, 'Ready')?.message).toBe('4/4 ready');
  });

  it('leaves hand edits alone when the CR turns drift repair off', async () => {
    await nginx.create(ns.name, 'manual', { replicaCount: 1 }, { 'helm.sdk.operatorframework.io/drift-repair': 'false' });
    await nginx.waitForCondition(ns.name, 'manual', { type: 'Ready', status: 'True' });
    await apps.patchNamespacedDeployment({ namespace: ns.name, name: 'manual-nginx', body: { spec: { replicas: 3 } } }, merge);
    // Let the scale-up's status events reconcile the CR a few times.
    await waitFor('3 available replicas', async () => (await deployment('manual-nginx')).status?.availableReplicas === 3);
    // Then one more look for certain, after the edit settled: a poke's reconcile (the other CRs here are settled).
    const since = await activity(op);
    await nginx.patch(ns.name, 'manual', { metadata: { annotations: { 'test.example.com/poke': '1' } } });
    await waitForReconciles(op, 'nginx-controller', since, 1);
    expect((await deployment('manual-nginx')).spec?.replicas).toBe(3);
    expect(await driftEvents('manual')).toEqual([]);
  });

  it('repairs and cleans up a cluster-scoped object through owner annotations', async () => {
    const roleName = `${ns.name}-team-reader`;
    await readers.create(ns.name, 'team', {});
    await readers.waitForCondition(ns.name, 'team', { type: 'Deployed', status: 'True' });
    const role = await rbac.readClusterRole({ name: roleName });
    expect(role.metadata?.annotations?.[PRIMARY_RESOURCE]).toBe(`${ns.name}/team`);
    expect(role.metadata?.annotations?.[PRIMARY_RESOURCE_TYPE]).toBe('Reader.test.example.com');
    expect(role.metadata?.ownerReferences ?? []).toEqual([]);

    await rbac.deleteClusterRole({ name: roleName });
    await waitFor('the ClusterRole to come back', async () => {
      try {
        return await rbac.readClusterRole({ name: roleName });
      } catch (err) {
        if (isStatus(err, 404)) return undefined;
        throw err;
      }
    });
    await readers.delete(ns.name, 'team');
    await readers.waitForGone(ns.name, 'team');
    await waitFor('the ClusterRole to be deleted', async () => {
      try {
        await rbac.readClusterRole({ name: roleName });
        return false;
      } catch (err) {
        return isStatus(err, 404);
      }
    });
  });
});
