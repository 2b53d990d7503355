/**
 * A deleted CR's release uninstalled by deleting helm's storage alone, its objects left to the
 * garbage collector (ADR 0066), against a real API server and its garbage collector: what is left
 * of the release afterwards must be what `helm uninstall` leaves (nothing, here), and helm runs
 * only where the collector would do otherwise. The charts with delete hooks and kept objects go
 * through helm in test/integration/idioms (the webhook case's pre-delete Job, the crds case's kept
 * Secret).
 */
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, NGINX, NGINX_CHART, startOperator, type RunningOperator } from '../../support/operator.js';
import { total } from '../../support/prometheus.js';

describe('uninstall by the garbage collector', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const nginx = new CRs(kc, NGINX);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  const uninstalls = async (): Promise<number> => total(await op.metrics.metrics(), 'helm_operator_helm_executions_total', { verb: 'uninstall' });
  const uninstalledBy = async (by: string): Promise<number> => total(await op.metrics.metrics(), 'helm_operator_releases_uninstalled_total', { by });
  /** What is left of release `name`: its storage Secrets and the objects the nginx chart renders for it. */
  const leftOf = async (name: string): Promise<string[]> => {
    const secrets = await core.listNamespacedSecret({ namespace: ns.name, labelSelector: `owner=helm,name=${name}` });
    const left = secrets.items.map((s) => `Secret/${s.metadata?.name ?? ''}`);
    const object = `${name}-nginx`;
    const reads: [string, () => Promise<unknown>][] = [
      ['Deployment', () => apps.readNamespacedDeployment({ namespace: ns.name, name: object })],
      ['Service', () => core.readNamespacedService({ namespace: ns.name, name: object })],
      ['ServiceAccount', () => core.readNamespacedServiceAccount({ namespace: ns.name, name: object })],
      ['ConfigMap', () => core.readNamespacedConfigMap({ namespace: ns.name, name: object })],
    ];
    for (const [kind, read] of reads) {
      if (await read().then(() => true, () => false)) left.push(`${kind}/${object}`);
    }
    return left;
  };
  const installed = async (names: readonly string[]): Promise<void> => {
    await Promise.all(names.map((name) => nginx.create(ns.name, name, { replicaCount: 1 })));
    for (const name of names) await nginx.waitForCondition(ns.name, name, { type: 'Deployed', status: 'True' });
    for (const name of names) expect(await leftOf(name)).toHaveLength(5); // the storage Secret and four objects
  };

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'gc-uninstall');
    op = await startOperator({ watches: `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}}\n`, namespaces: [ns.name] });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('deletes the storage and runs no helm; the collector deletes every object once the CR is gone', async () => {
    const names = ['gc-0', 'gc-1', 'gc-2'];
    await installed(names);
    const before = await uninstalls();
    const collectedBefore = await uninstalledBy('collector');
    await nginx.deleteAll(ns.name);
    for (const name of names) {
      await nginx.waitForGone(ns.name, name);
      const event = await nginx.events(ns.name, name);
      expect(event.some((e) => e.reason === 'UninstallSuccessful'), `${name}: UninstallSuccessful event`).toBe(true);
    }
    for (const name of names) await waitFor(`${name}'s release and objects gone`, async () => (await leftOf(name)).length === 0, { timeoutMs: 60_000 });
    expect(await uninstalls()).toBe(before);
    expect(await uninstalledBy('collector')).toBe(collectedBefore + names.length);
  });

  // The collector strips the CR's owner references from its dependents for an orphaning delete,
  // often before the reconcile looks (the live check then sends it to helm too): the `orphan`
  // finalizer rule itself is pinned by test/unit/reconciler/uninstall-route.test.ts.
  it('runs helm uninstall for a CR deleted with --cascade=orphan, where the collector would keep every object', async () => {
    await installed(['orphaned']);
    const before = await uninstalls();
    await nginx.delete(ns.name, 'orphaned', 'Orphan');
    await nginx.waitForGone(ns.name, 'orphaned');
    expect(await uninstalls()).toBe(before + 1);
    // helm deleted them (their owner references, which the collector strips for an orphaning delete, do not matter).
    await waitFor('the orphaned release and objects gone', async () => (await leftOf('orphaned')).length === 0, { timeoutMs: 60_000 });
  });

  it('runs helm uninstall when an object has an owner besides the CR, which would keep it from the collector', async () => {
    await installed(['shared']);
    const cm = await core.readNamespacedConfigMap({ namespace: ns.name, name: 'shared-nginx' });
    const other = await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'shared-other-owner' } } });
    await core.patchNamespacedConfigMap(
      {
        namespace: ns.name,
        name: 'shared-nginx',
        body: [{ op: 'add', path: '/metadata/ownerReferences/-', value: { apiVersion: 'v1', kind: 'ConfigMap', name: 'shared-other-owner', uid: other.metadata?.uid } }],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    expect((await core.readNamespacedConfigMap({ namespace: ns.name, name: 'shared-nginx' })).metadata?.ownerReferences).toHaveLength((cm.metadata?.ownerReferences?.length ?? 0) + 1);
    const before = await uninstalls();
    await nginx.delete(ns.name, 'shared');
    await nginx.waitForGone(ns.name, 'shared');
    expect(await uninstalls()).toBe(before + 1);
    await waitFor('the shared release and objects gone', async () => (await leftOf('shared')).length === 0, { timeoutMs: 60_000 });
  });
});
