import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, type V1Deployment } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import type { Condition } from '../../../src/reconciler/status/conditions.js';
import { CHART_LABEL, PRIMARY_RESOURCE, PRIMARY_RESOURCE_TYPE } from '../../../src/reconciler/objects/ownership.js';
import { helmByHand, releaseByHand } from '../../support/helm.js';
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
const ZOO: TestKind = { group: 'drift.example.com', version: 'v1', kind: 'Zoo', plural: 'zoos' };
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const run = promisify(execFile);

/** What each release created is watched: ownership stamped, readiness reported, drift repaired (the kinds of hand edit: below). */
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

  it('reverts a hand-scaled replica count the chart sets, but keeps a label someone added', async () => {
    await apps.patchNamespacedDeployment(
      {
        namespace: ns.name,
        name: 'web-nginx',
        body: { metadata: { labels: { 'team.example.com/owner': 'payments' } }, spec: { replicas: 5 } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    const repaired = await waitFor('the replicas to be reverted', async () => {
      const now = await deployment('web-nginx');
      return now.spec?.replicas === 2 ? now : undefined;
    });
    expect(repaired.metadata?.labels?.['team.example.com/owner']).toBe('payments');
    await waitFor('a DriftCorrected event that restored the Deployment', async () =>
      (await driftEvents('web')).some((m) => m.startsWith('Restored') && m.includes('Deployment')),
    );
  });

  it('installs again a release someone uninstalled by hand right after the operator last read it, instead of recreating its objects from memory (ADR 0069)', async () => {
    await nginx.create(ns.name, 'byhand', { replicaCount: 2 });
    await nginx.waitForCondition(ns.name, 'byhand', { type: 'Ready', status: 'True' });
    const installed = await nginx.get(ns.name, 'byhand');
    // A reconcile that finds nothing to do: the operator has just confirmed the release (or
    // remembers helm's install), so the reconciles that follow go on from memory.
    const since = await activity(op);
    await apps.patchNamespacedDeployment(
      { namespace: ns.name, name: 'byhand-nginx', body: { metadata: { labels: { 'example.com/poke': '1' } } } },
      merge,
    );
    await waitForReconciles(op, 'nginx-controller', since, 1);
    await helmByHand('uninstall', 'byhand', '-n', ns.name, '--wait');
    // The deleted objects bring a reconcile that would recreate them: it reads the storage first,
    // finds no release, and installs one, so the objects are helm's again, with a release record.
    const release = await waitFor('the release to be installed again', async () => {
      const now = await releaseByHand('byhand', ns.name);
      return now?.status === 'deployed' ? now : undefined;
    });
    expect(release).toMatchObject({ revision: 1, values: { replicaCount: 2 } });
    const cr = await nginx.waitForCondition(ns.name, 'byhand', { type: 'Ready', status: 'True' });
    expect(cr.metadata.uid).toBe(installed?.metadata.uid);
    expect(condition(cr, 'Deployed')).toMatchObject({ status: 'True', reason: 'InstallSuccessful' });
    expect((await deployment('byhand-nginx')).spec?.replicas).toBe(2);
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

/**
 * Every kind of hand edit is put back from the release manifest, with kubectl as people run it
 * (so each edit has kubectl's own field manager), without a new helm revision and without the CR
 * ever turning Irreconcilable; what the chart does not set is left alone.
 */
describe('drift repair of hand edits', () => {
  const kc = testKubeConfig();
  const zoos = new CRs(kc, ZOO);
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;
  /** The CR's conditions right after the install, to prove no condition ever flipped. */
  let installed: { irreconcilable: Condition; deployed: Condition };

  const kubectl = async (...args: string[]): Promise<string> =>
    (await run(inject('kubectlBin'), ['--kubeconfig', inject('kubeconfigPath'), '-n', ns.name, ...args], { timeout: 30_000 })).stdout;
  const jsonPatch = (target: string, ops: unknown[]): Promise<string> => kubectl('patch', target, '--type=json', '-p', JSON.stringify(ops));
  const deployment = (name: string): Promise<V1Deployment> => apps.readNamespacedDeployment({ namespace: ns.name, name });
  const container = async (release: string) => (await deployment(`${release}-app`)).spec?.template.spec?.containers ?? [];
  const driftEvents = async (name: string, reason = 'DriftCorrected') =>
    (await zoos.events(ns.name, name)).filter((e) => e.reason === reason).map((e) => e.message ?? '');

  /** A CR of the drift-zoo chart, installed and ready. */
  async function release(name: string, spec: Record<string, unknown> = {}): Promise<void> {
    await zoos.create(ns.name, name, spec);
    await zoos.waitForCondition(ns.name, name, { type: 'Ready', status: 'True' });
  }

  /** No new helm revision, no condition flipped since the install. */
  async function expectUntouchedRelease(name: string): Promise<void> {
    const cr = await zoos.get(ns.name, name);
    expect(cr?.status?.deployedRelease?.revision).toBe(1);
    expect(condition(cr, 'Irreconcilable')).toEqual(installed.irreconcilable);
    expect(condition(cr, 'Deployed')).toEqual(installed.deployed);
    expect(condition(cr, 'Drifted')).toBeUndefined();
    const secrets = await core.listNamespacedSecret({ namespace: ns.name, labelSelector: `owner=helm,name=${name}` });
    expect(secrets.items.map((s) => s.metadata?.labels?.version)).toEqual(['1']);
  }

  beforeAll(async () => {
    await ensureCrd(kc, ZOO);
    ns = await createNamespace(kc, 'drift-edits');
    op = await startOperator({
      watches: `- {group: ${ZOO.group}, version: ${ZOO.version}, kind: ${ZOO.kind}, chart: ${fixtureChart('drift-zoo')}}\n`,
      namespaces: [ns.name],
      // Its CRs ask for 1s resyncs; the default floor (30s) would raise them.
      annotationPeriodFloorMs: 1_000,
    });
    await release('zoo');
    const cr = await zoos.get(ns.name, 'zoo');
    installed = { irreconcilable: condition(cr, 'Irreconcilable') as Condition, deployed: condition(cr, 'Deployed') as Condition };
    // The HPA case first: it is checked at the end, after every other row has reconciled the CR.
    await release('scaled');
    await kubectl('scale', 'deployment/scaled-app', '--replicas=3');
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it.each([
    ['Deployment', 'zoo-app', () => apps.deleteNamespacedDeployment({ namespace: ns.name, name: 'zoo-app' })],
    ['Service', 'zoo-svc', () => core.deleteNamespacedService({ namespace: ns.name, name: 'zoo-svc' })],
    ['ConfigMap', 'zoo-config', () => core.deleteNamespacedConfigMap({ namespace: ns.name, name: 'zoo-config' })],
  ])('recreates a deleted %s', async (kind, name, remove) => {
    const read = {
      Deployment: () => apps.readNamespacedDeployment({ namespace: ns.name, name }),
      Service: () => core.readNamespacedService({ namespace: ns.name, name }),
      ConfigMap: () => core.readNamespacedConfigMap({ namespace: ns.name, name }),
    }[kind] as () => Promise<{ metadata?: { uid?: string; labels?: Record<string, string>; annotations?: Record<string, string> } }>;
    const before = (await read()).metadata?.uid;
    await remove();
    const back = await waitFor(`${kind} ${name} to come back`, async () => {
      try {
        const obj = await read();
        return obj.metadata?.uid !== before ? obj : undefined;
      } catch (err) {
        if (isStatus(err, 404)) return undefined;
        throw err;
      }
    });
    // Recreated as helm would have created it: helm must still recognise it as the release's.
    expect(back.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
    expect(back.metadata?.annotations).toMatchObject({ 'meta.helm.sh/release-name': 'zoo', 'meta.helm.sh/release-namespace': ns.name });
    // With the release's spec, not an empty shell.
    if (kind === 'Deployment') expect((await container('zoo'))[0]?.image).toBe('nginx:1.27.3');
    await waitFor('a DriftCorrected event', async () =>
      (await driftEvents('zoo')).some((m) => m.includes(`Recreated ${kind} ${ns.name}/${name}`)),
    );
    await expectUntouchedRelease('zoo');
  });

  it('puts back a changed number of an unnamed Service port, leaving one port', async () => {
    await jsonPatch('service/zoo-svc', [{ op: 'replace', path: '/spec/ports/0/port', value: 9999 }]);
    const svc = await waitFor('the port to be 8080 again', async () => {
      const s = await core.readNamespacedService({ namespace: ns.name, name: 'zoo-svc' });
      return s.spec?.ports?.some((p) => p.port === 8080) === true ? s : undefined;
    });
    expect(svc.spec?.ports?.map((p) => p.port)).toEqual([8080]);
    await expectUntouchedRelease('zoo');
  });

  it("puts back the chart's container, env var and volume names, without duplicates", async () => {
    await jsonPatch('deployment/zoo-app', [
      { op: 'replace', path: '/spec/template/spec/containers/0/name', value: 'web' },
      { op: 'replace', path: '/spec/template/spec/containers/0/env/0/name', value: 'SALUTATION' },
      { op: 'replace', path: '/spec/template/spec/volumes/0/name', value: 'settings' },
      { op: 'replace', path: '/spec/template/spec/containers/0/volumeMounts/0/name', value: 'settings' },
    ]);
    const repaired = await waitFor('the names to be put back', async () => {
      const d = await deployment('zoo-app');
      return d.spec?.template.spec?.volumes?.[0]?.name === 'config' && d.spec.template.spec.containers[0]?.name === 'app' ? d : undefined;
    });
    const pod = repaired.spec?.template.spec;
    expect(pod?.containers.map((c) => c.name)).toEqual(['app']);
    expect(pod?.containers[0]?.env?.map((e) => e.name)).toEqual(['GREETING', 'MODE']);
    expect(pod?.volumes?.map((v) => v.name)).toEqual(['config']);
    expect(pod?.containers[0]?.volumeMounts?.map((m) => m.name)).toEqual(['config']);
    await expectUntouchedRelease('zoo');
  });

  it('puts back a removed env var', async () => {
    await jsonPatch('deployment/zoo-app', [{ op: 'remove', path: '/spec/template/spec/containers/0/env/1' }]);
    await waitFor('MODE to be back', async () =>
      (await container('zoo'))[0]?.env?.some((e) => e.name === 'MODE' && e.value === 'production'),
    );
    expect((await container('zoo'))[0]?.env?.map((e) => e.name)).toEqual(['GREETING', 'MODE']);
    await expectUntouchedRelease('zoo');
  });

  it("keeps a sidecar and a label another field manager added while repairing the chart's fields", async () => {
    const sidecar = { name: 'proxy', image: 'envoyproxy/envoy:v1.31' };
    const body = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'zoo-app', namespace: ns.name, labels: { 'mesh.example.com/injected': 'true' } },
      spec: { template: { spec: { containers: [sidecar] } } },
    };
    await runApply(JSON.stringify(body));
    await kubectl('set', 'image', 'deployment/zoo-app', 'app=nginx:evil');
    const repaired = await waitFor('the image to be put back', async () => {
      const d = await deployment('zoo-app');
      return d.spec?.template.spec?.containers.find((c) => c.name === 'app')?.image === 'nginx:1.27.3' ? d : undefined;
    });
    expect(repaired.spec?.template.spec?.containers.map((c) => c.name).sort()).toEqual(['app', 'proxy']);
    expect(repaired.metadata?.labels?.['mesh.example.com/injected']).toBe('true');
    await expectUntouchedRelease('zoo');
  });

  it('puts back a ConfigMap data key the chart sets', async () => {
    await kubectl('patch', 'configmap/zoo-config', '--type=merge', '-p', JSON.stringify({ data: { greeting: 'hacked', extra: 'kept' } }));
    const cm = await waitFor('greeting to be put back', async () => {
      const c = await core.readNamespacedConfigMap({ namespace: ns.name, name: 'zoo-config' });
      return c.data?.greeting === 'hello' ? c : undefined;
    });
    expect(cm.data).toEqual({ greeting: 'hello', mode: 'production', extra: 'kept' });
    await expectUntouchedRelease('zoo');
  });

  it('puts back an edited cluster-scoped object: an entry added to an atomic list, a label the chart sets', async () => {
    const name = `${ns.name}-zoo-zoo`;
    const patch = (ops: unknown[]) =>
      run(inject('kubectlBin'), [
        '--kubeconfig',
        inject('kubeconfigPath'),
        'patch',
        `clusterrole/${name}`,
        '--type=json',
        '-p',
        JSON.stringify(ops),
      ]);
    await patch([{ op: 'add', path: '/rules/0/verbs/-', value: 'delete' }]);
    const role = await waitFor('the verbs to be put back', async () => {
      const r = await rbac.readClusterRole({ name });
      return r.rules?.[0]?.verbs.length === 2 ? r : undefined;
    });
    expect(role.rules?.[0]?.verbs).toEqual(['get', 'list']);
    await patch([{ op: 'replace', path: '/metadata/labels/zoo.example.com~1tier', value: 'frontend' }]);
    await waitFor(
      'the label to be put back',
      async () => (await rbac.readClusterRole({ name })).metadata?.labels?.['zoo.example.com/tier'] === 'backend',
    );
    await expectUntouchedRelease('zoo');
  });

  it('leaves the replicas of a Deployment whose chart omits them to `kubectl scale` (the HPA case)', async () => {
    // Scaled in beforeAll: by now every other row has reconciled; check the Deployment was never written again.
    const d = await deployment('scaled-app');
    expect(d.spec?.replicas).toBe(3);
    const generation = d.metadata?.generation;
    const since = await activity(op);
    await zoos.patch(ns.name, 'scaled', { metadata: { annotations: { 'helm.sdk.operatorframework.io/reconcile-period': '1s' } } });
    // The annotation's reconcile and periodic ones after it ('zoo' is next due a default period later).
    await waitForReconciles(op, 'zoo-controller', since, 3);
    const after = await deployment('scaled-app');
    expect(after.spec?.replicas).toBe(3);
    expect(after.metadata?.generation).toBe(generation);
    expect(await driftEvents('scaled')).toEqual([]);
  });

  /** Applies a JSON document with kubectl's server-side apply as the `mesh-injector` field manager. */
  async function runApply(doc: string): Promise<void> {
    const child = execFile(inject('kubectlBin'), [
      '--kubeconfig',
      inject('kubeconfigPath'),
      'apply',
      '--server-side',
      '--field-manager=mesh-injector',
      '-f',
      '-',
    ]);
    child.stdin?.end(doc);
    await new Promise<void>((resolve, reject) => {
      child.on('exit', (code) => {
        if (code === 0) resolve();
        else reject(new Error(`kubectl apply exited ${String(code)}`));
      });
    });
  }
});
