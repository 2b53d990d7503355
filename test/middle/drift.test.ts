/**
 * Moved from the operator-level test/integration/operator/drift.test.ts (issue 45, item 2),
 * reconcile by reconcile. What each release created is watched: ownership stamped, readiness
 * reported, drift repaired. Where the operator was woken by a dependent's watch event (a hand edit,
 * a deletion, a Deployment rolling out), the harness reconciles once its dependents' cache holds
 * the change, as the controller would on that event; no reconcile period is waited out.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, type V1Deployment } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isStatus } from '../../src/k8s/errors.js';
import type { Condition } from '../../src/reconciler/status/conditions.js';
import { CHART_LABEL, PRIMARY_RESOURCE, PRIMARY_RESOURCE_TYPE } from '../../src/reconciler/objects/ownership.js';
import { helmByHand, releaseByHand } from '../support/helm.js';
import { createNamespace, exists, testKubeConfig, waitFor } from '../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, NGINX, NGINX_CHART, type TestKind } from '../support/operator.js';
import {
  caseNamespaces,
  READY,
  startReconcilers,
  withReconcilers,
  type CaseNamespaces,
  type ReconcilerHarness,
  type Want,
} from '../support/reconciler-harness.js';

const ROLES: TestKind = { group: 'test.example.com', version: 'v1', kind: 'Reader', plural: 'readers' };
const ZOO: TestKind = { group: 'drift.example.com', version: 'v1', kind: 'Zoo', plural: 'zoos' };
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const run = promisify(execFile);

const kc = testKubeConfig();
const apps = kc.makeApiClient(AppsV1Api);
const core = kc.makeApiClient(CoreV1Api);
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);

/** What each release created is watched: ownership stamped, readiness reported, drift repaired (the kinds of hand edit: below). */
describe.concurrent('dependent watches, drift repair and readiness', () => {
  const nginx = new CRs(kc, NGINX);
  const readers = new CRs(kc, ROLES);
  const WATCHES = [
    `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}}`,
    `- {group: test.example.com, version: v1, kind: Reader, chart: ${fixtureChart('cluster-scoped')}}`,
    '',
  ].join('\n');
  // One harness for the block, each case in a namespace of its own; the informer count's case has
  // a harness of its own (the others' kinds would count in it).
  const CASES = ['drift-owned', 'drift-scaled', 'drift-byhand', 'drift-stuck', 'drift-manual', 'drift-cluster'] as const;
  let spaces: CaseNamespaces<(typeof CASES)[number]>;
  let shared: ReconcilerHarness;
  const inNamespace = (prefix: (typeof CASES)[number], run: (ns: string, h: ReconcilerHarness) => Promise<void>): Promise<void> =>
    run(spaces.of[prefix], shared);
  const deployment = (ns: string, name: string) => apps.readNamespacedDeployment({ namespace: ns, name });
  const driftEvents = async (ns: string, name: string) =>
    (await nginx.events(ns, name)).filter((e) => e.reason === 'DriftCorrected').map((e) => e.message ?? '');

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    await ensureCrd(kc, ROLES);
    spaces = await caseNamespaces(CASES);
    shared = await startReconcilers({ watches: WATCHES, namespaces: spaces.names });
  });
  afterAll(async () => {
    await shared.stop();
    await spaces.remove();
  });

  it('marks every object as owned by the CR and labels it with the chart', () =>
    inNamespace('drift-owned', async (ns, h) => {
      await nginx.create(ns, 'web', { replicaCount: 2 });
      const { cr } = await h.reconcileUntil(`${ns}/web`, READY);
      const d = await deployment(ns, 'web-nginx');
      expect(d.metadata?.labels?.[CHART_LABEL]).toBe('nginx');
      expect(d.metadata?.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'Nginx', name: 'web', uid: cr?.metadata.uid, controller: true, blockOwnerDeletion: true }),
      ]);
      expect(condition(cr, 'Ready')).toMatchObject({ status: 'True', reason: 'ResourcesReady', message: '4/4 ready' });
    }));

  it('reverts a hand-scaled replica count the chart sets, but keeps a label someone added', () =>
    inNamespace('drift-scaled', async (ns, h) => {
      await nginx.create(ns, 'web', { replicaCount: 2 });
      await h.reconcileUntil(`${ns}/web`, READY);
      await apps.patchNamespacedDeployment(
        {
          namespace: ns,
          name: 'web-nginx',
          body: { metadata: { labels: { 'team.example.com/owner': 'payments' } }, spec: { replicas: 5 } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
      );
      await h.reconcileUntilSettled(`${ns}/web`);
      const repaired = await deployment(ns, 'web-nginx');
      expect(repaired.spec?.replicas).toBe(2);
      expect(repaired.metadata?.labels?.['team.example.com/owner']).toBe('payments');
      await waitFor('a DriftCorrected event that restored the Deployment', async () =>
        (await driftEvents(ns, 'web')).some((m) => m.startsWith('Restored') && m.includes('Deployment')),
      );
    }));

  it('installs again a release someone uninstalled by hand right after the operator last read it, instead of recreating its objects from memory (ADR 0069)', () =>
    inNamespace('drift-byhand', async (ns, h) => {
      const key = `${ns}/byhand`;
      await nginx.create(ns, 'byhand', { replicaCount: 2 });
      const installed = (await h.reconcileUntil(key, READY)).cr;
      // A reconcile that finds nothing to do: the reconciler has just confirmed the release (or
      // remembers helm's install), so the reconciles that follow go on from memory.
      await apps.patchNamespacedDeployment(
        { namespace: ns, name: 'byhand-nginx', body: { metadata: { labels: { 'example.com/poke': '1' } } } },
        merge,
      );
      await h.reconcileUntilSettled(key);
      await helmByHand('uninstall', 'byhand', '-n', ns, '--wait');
      // The deleted objects bring a reconcile that would recreate them: it reads the storage first,
      // finds no release, and installs one, so the objects are helm's again, with a release record.
      await h.reconcileUntilSettled(key);
      expect(await releaseByHand('byhand', ns)).toMatchObject({ revision: 1, status: 'deployed', values: { replicaCount: 2 } });
      const { cr } = await h.reconcileUntil(key, READY);
      expect(cr?.metadata.uid).toBe(installed?.metadata.uid);
      expect(condition(cr, 'Deployed')).toMatchObject({ status: 'True', reason: 'InstallSuccessful' });
      expect((await deployment(ns, 'byhand-nginx')).spec?.replicas).toBe(2);
    }));

  it('grows informers with kinds, not with CRs', () =>
    withReconcilers('drift-informers', { watches: WATCHES }, async (ns, h) => {
      await nginx.create(ns, 'first', {});
      expect(condition((await h.reconcileUntilSettled(`${ns}/first`)).cr, 'Deployed')?.status).toBe('True');
      const before = h.dependentInformers();
      expect(before).toBeGreaterThan(0);
      for (const name of ['second', 'third']) {
        await nginx.create(ns, name, {});
        expect(condition((await h.reconcileUntilSettled(`${ns}/${name}`)).cr, 'Deployed')?.status).toBe('True');
      }
      expect(h.dependentInformers()).toBe(before);
    }));

  it('reports Ready=False while the Deployment is unavailable and True once it is available', () =>
    inNamespace('drift-stuck', async (ns, h) => {
      const key = `${ns}/stuck`;
      await nginx.create(ns, 'stuck', { nodeSelector: { 'example.com/no-such-node': 'x' } });
      // First the rollout is not observed yet, then the pod stays Pending: reconcile on the
      // Deployment's changes until the steady message.
      const unavailable: Want = {
        what: 'Ready=False with the Deployment unavailable',
        accept: (cr) => {
          const ready = condition(cr, 'Ready');
          return ready?.status === 'False' && ready.message.startsWith('3/4 ready: Deployment stuck-nginx 0/1 available');
        },
      };
      const waiting = (await h.reconcileUntil(key, unavailable)).cr;
      expect(condition(waiting, 'Ready')?.reason).toBe('ResourcesNotReady');
      expect(condition(waiting, 'Deployed')?.status).toBe('True');
      await nginx.patch(ns, 'stuck', { spec: { nodeSelector: null } });
      const ready = (await h.reconcileUntil(key, READY)).cr;
      expect(condition(ready, 'Ready')?.message).toBe('4/4 ready');
    }));

  it('leaves hand edits alone when the CR turns drift repair off', () =>
    inNamespace('drift-manual', async (ns, h) => {
      const key = `${ns}/manual`;
      await nginx.create(ns, 'manual', { replicaCount: 1 }, { 'helm.sdk.operatorframework.io/drift-repair': 'false' });
      await h.reconcileUntil(key, READY);
      await apps.patchNamespacedDeployment({ namespace: ns, name: 'manual-nginx', body: { spec: { replicas: 3 } } }, merge);
      // The edit's event, then the scale-up's status events, as the controller would reconcile them.
      await h.reconcileUntilSettled(key);
      await waitFor('3 available replicas', async () => (await deployment(ns, 'manual-nginx')).status?.availableReplicas === 3);
      await h.reconcileUntilSettled(key);
      // Then one more look for certain, after the edit settled: a poke's reconcile.
      await nginx.patch(ns, 'manual', { metadata: { annotations: { 'test.example.com/poke': '1' } } });
      await h.reconcileUntilSettled(key);
      expect((await deployment(ns, 'manual-nginx')).spec?.replicas).toBe(3);
      expect(await driftEvents(ns, 'manual')).toEqual([]);
    }));

  it('repairs and cleans up a cluster-scoped object through owner annotations', () =>
    inNamespace('drift-cluster', async (ns, h) => {
      const key = `${ns}/team`;
      const roleName = `${ns}-team-reader`;
      const role = () => rbac.readClusterRole({ name: roleName });
      await readers.create(ns, 'team', {});
      expect(condition((await h.reconcileUntilSettled(key, ROLES)).cr, 'Deployed')?.status).toBe('True');
      const stamped = await role();
      expect(stamped.metadata?.annotations?.[PRIMARY_RESOURCE]).toBe(`${ns}/team`);
      expect(stamped.metadata?.annotations?.[PRIMARY_RESOURCE_TYPE]).toBe('Reader.test.example.com');
      expect(stamped.metadata?.ownerReferences ?? []).toEqual([]);

      await rbac.deleteClusterRole({ name: roleName });
      await h.reconcileUntilSettled(key, ROLES);
      expect((await role()).metadata?.uid).not.toBe(stamped.metadata?.uid);
      await readers.delete(ns, 'team');
      expect((await h.reconcileUntilSettled(key, ROLES)).cr).toBeUndefined();
      await waitFor('the ClusterRole to be deleted', async () => !(await exists(role)));
    }));
});

/**
 * Every kind of hand edit is put back from the release manifest, with kubectl as people run it
 * (so each edit has kubectl's own field manager), without a new helm revision and without the CR
 * ever turning Irreconcilable; what the chart does not set is left alone. The rows edit one
 * release in turn (each row's reconciles see the rows before them), as the operator-level file did.
 */
describe('drift repair of hand edits', () => {
  const zoos = new CRs(kc, ZOO);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let h: ReconcilerHarness;
  /** The CR's conditions right after the install, to prove no condition ever flipped. */
  let installed: { irreconcilable: Condition; deployed: Condition };

  const kubectl = async (...args: string[]): Promise<string> =>
    (await run(inject('kubectlBin'), ['--kubeconfig', inject('kubeconfigPath'), '-n', ns.name, ...args], { timeout: 30_000 })).stdout;
  const jsonPatch = (target: string, ops: unknown[]): Promise<string> => kubectl('patch', target, '--type=json', '-p', JSON.stringify(ops));
  const deployment = (name: string): Promise<V1Deployment> => apps.readNamespacedDeployment({ namespace: ns.name, name });
  const container = async (release: string) => (await deployment(`${release}-app`)).spec?.template.spec?.containers ?? [];
  const driftEvents = async (name: string, reason = 'DriftCorrected') =>
    (await zoos.events(ns.name, name)).filter((e) => e.reason === reason).map((e) => e.message ?? '');
  /** The hand edit's watch event: the reconciles it brings, once the dependents' cache holds it. */
  const repair = (name = 'zoo') => h.reconcileUntilSettled(`${ns.name}/${name}`);

  /** A CR of the drift-zoo chart, installed and ready. */
  async function release(name: string, spec: Record<string, unknown> = {}): Promise<void> {
    await zoos.create(ns.name, name, spec);
    await h.reconcileUntil(`${ns.name}/${name}`, READY);
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
    h = await startReconcilers({
      watches: `- {group: ${ZOO.group}, version: ${ZOO.version}, kind: ${ZOO.kind}, chart: ${fixtureChart('drift-zoo')}}\n`,
      namespaces: [ns.name],
    });
    await release('zoo');
    const cr = await zoos.get(ns.name, 'zoo');
    installed = { irreconcilable: condition(cr, 'Irreconcilable') as Condition, deployed: condition(cr, 'Deployed') as Condition };
  });
  afterAll(async () => {
    await h.stop();
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
    await repair();
    const back = await read().catch((err: unknown) => {
      if (isStatus(err, 404)) throw new Error(`${kind} ${name} was not recreated by the reconciles its deletion brought`);
      throw err;
    });
    expect(back.metadata?.uid).not.toBe(before);
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
    await repair();
    const svc = await core.readNamespacedService({ namespace: ns.name, name: 'zoo-svc' });
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
    await repair();
    const pod = (await deployment('zoo-app')).spec?.template.spec;
    expect(pod?.containers.map((c) => c.name)).toEqual(['app']);
    expect(pod?.containers[0]?.env?.map((e) => e.name)).toEqual(['GREETING', 'MODE']);
    expect(pod?.volumes?.map((v) => v.name)).toEqual(['config']);
    expect(pod?.containers[0]?.volumeMounts?.map((m) => m.name)).toEqual(['config']);
    await expectUntouchedRelease('zoo');
  });

  it('puts back a removed env var', async () => {
    await jsonPatch('deployment/zoo-app', [{ op: 'remove', path: '/spec/template/spec/containers/0/env/1' }]);
    await repair();
    expect((await container('zoo'))[0]?.env).toEqual([
      expect.objectContaining({ name: 'GREETING' }),
      expect.objectContaining({ name: 'MODE', value: 'production' }),
    ]);
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
    await repair();
    const repaired = await deployment('zoo-app');
    expect(repaired.spec?.template.spec?.containers.find((c) => c.name === 'app')?.image).toBe('nginx:1.27.3');
    expect(repaired.spec?.template.spec?.containers.map((c) => c.name).sort()).toEqual(['app', 'proxy']);
    expect(repaired.metadata?.labels?.['mesh.example.com/injected']).toBe('true');
    await expectUntouchedRelease('zoo');
  });

  it('puts back a ConfigMap data key the chart sets', async () => {
    await kubectl('patch', 'configmap/zoo-config', '--type=merge', '-p', JSON.stringify({ data: { greeting: 'hacked', extra: 'kept' } }));
    await repair();
    const cm = await core.readNamespacedConfigMap({ namespace: ns.name, name: 'zoo-config' });
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
    await repair();
    expect((await rbac.readClusterRole({ name })).rules?.[0]?.verbs).toEqual(['get', 'list']);
    await patch([{ op: 'replace', path: '/metadata/labels/zoo.example.com~1tier', value: 'frontend' }]);
    await repair();
    expect((await rbac.readClusterRole({ name })).metadata?.labels?.['zoo.example.com/tier']).toBe('backend');
    await expectUntouchedRelease('zoo');
  });

  it('leaves the replicas of a Deployment whose chart omits them to `kubectl scale` (the HPA case)', async () => {
    await release('scaled');
    await kubectl('scale', 'deployment/scaled-app', '--replicas=3');
    // The scale's events (the edit, then the scale-up's status), then three resyncs (the periods).
    await repair('scaled');
    await waitFor('3 available replicas', async () => (await deployment('scaled-app')).status?.availableReplicas === 3);
    await repair('scaled');
    const d = await deployment('scaled-app');
    expect(d.spec?.replicas).toBe(3);
    const generation = d.metadata?.generation;
    for (let i = 0; i < 3; i++) await repair('scaled');
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
