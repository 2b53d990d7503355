/**
 * A deleted CR's release uninstalled by the operator itself, without a helm process (ADR 0066),
 * against a real API server: what is left of the release afterwards, and when, must be what `helm
 * uninstall` leaves (nothing, here, before the CR goes). A chart with delete hooks goes through helm
 * (test/integration/idioms: the webhook case's pre-delete Job runs); an object helm keeps stays (the
 * crds case's kept Secret).
 */
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, testKubeConfig } from '../../support/kube.js';
import { CRs, ensureCrd, NGINX, NGINX_CHART, startOperator, type RunningOperator } from '../../support/operator.js';
import { total } from '../../support/prometheus.js';

describe('uninstall without helm', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const nginx = new CRs(kc, NGINX);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  const uninstalls = async (): Promise<number> =>
    total(await op.metrics.metrics(), 'helm_operator_helm_executions_total', { verb: 'uninstall' });
  const uninstalledBy = async (by: string): Promise<number> =>
    total(await op.metrics.metrics(), 'helm_operator_releases_uninstalled_total', { by });
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
      if (
        await read().then(
          () => true,
          () => false,
        )
      )
        left.push(`${kind}/${object}`);
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
    ns = await createNamespace(kc, 'direct-uninstall');
    op = await startOperator({
      watches: `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}}\n`,
      namespaces: [ns.name],
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('deletes what helm would, objects before the CR goes, and runs no helm', async () => {
    const names = ['direct-0', 'direct-1', 'direct-2'];
    await installed(names);
    const before = await uninstalls();
    const byOperator = await uninstalledBy('operator');
    await nginx.deleteAll(ns.name);
    for (const name of names) {
      await nginx.waitForGone(ns.name, name);
      // As after helm uninstall: the objects and the storage were deleted before the finalizer went.
      expect(await leftOf(name), name).toEqual([]);
      const events = await nginx.events(ns.name, name);
      expect(
        events.some((e) => e.reason === 'UninstallSuccessful'),
        `${name}: UninstallSuccessful event`,
      ).toBe(true);
    }
    expect(await uninstalls()).toBe(before);
    expect(await uninstalledBy('operator')).toBe(byOperator + names.length);
  });

  it('deletes the objects of a CR deleted with --cascade=orphan too, as helm uninstall does', async () => {
    await installed(['orphaned']);
    const before = await uninstalls();
    await nginx.delete(ns.name, 'orphaned', 'Orphan');
    await nginx.waitForGone(ns.name, 'orphaned');
    expect(await leftOf('orphaned')).toEqual([]);
    expect(await uninstalls()).toBe(before);
  });

  it('uninstalls once after a restart, by helm or by the operator, whichever read the release', async () => {
    await installed(['restarted']);
    await op.stop();
    op = await startOperator({
      watches: `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}}\n`,
      namespaces: [ns.name],
    });
    // Deleted at once: the new process may not have read the release yet (then helm uninstalls it).
    await nginx.delete(ns.name, 'restarted');
    await nginx.waitForGone(ns.name, 'restarted');
    expect(await leftOf('restarted')).toEqual([]);
    expect((await uninstalledBy('helm')) + (await uninstalledBy('operator'))).toBe(1);
  });
});
