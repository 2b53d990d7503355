import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { FINALIZER } from '../../../src/reconciler/core/reconciler.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  condition,
  CRs,
  ensureCrd,
  NGINX,
  NGINX_CHART,
  startOperator,
  waitForReconciles,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const WEBSERVER: TestKind = { group: 'test.example.com', version: 'v1', kind: 'Webserver', plural: 'webservers' };
const NOSTATUS: TestKind = {
  group: 'test.example.com',
  version: 'v1',
  kind: 'Statusless',
  plural: 'statuslesses',
  noStatusSubresource: true,
};

/** Naming, collisions, pause, overrides and uninstall-wait, against the real cluster and helm. */
describe('reconcile policies', () => {
  const kc = testKubeConfig();
  const nginx = new CRs(kc, NGINX);
  const webservers = new CRs(kc, WEBSERVER);
  const storage = new ReleaseStorage(kc);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    await ensureCrd(kc, WEBSERVER);
    await ensureCrd(kc, NOSTATUS);
    ns = await createNamespace(kc, 'policies');
    process.env.POLICY_TEST_TAG = '1.27.4';
    op = await startOperator({
      watches: [
        '- group: example.com',
        '  version: v1alpha1',
        '  kind: Nginx',
        `  chart: ${NGINX_CHART}`,
        '- group: test.example.com',
        '  version: v1',
        '  kind: Webserver',
        `  chart: ${NGINX_CHART}`,
        '  overrideValues:',
        '    image.tag: $POLICY_TEST_TAG',
        '- group: test.example.com',
        '  version: v1',
        '  kind: Statusless',
        `  chart: ${NGINX_CHART}`,
        '',
      ].join('\n'),
      namespaces: [ns.name],
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('refuses a release name already used by a CR of another kind, leaving the first untouched', async () => {
    await nginx.create(ns.name, 'shared', { replicaCount: 1 });
    await nginx.waitForCondition(ns.name, 'shared', { type: 'Deployed', status: 'True' });
    await webservers.create(ns.name, 'shared', { replicaCount: 2 });
    const second = await webservers.waitForCondition(ns.name, 'shared', {
      type: 'Irreconcilable',
      status: 'True',
      reason: 'ReleaseNameConflict',
    });
    expect(condition(second, 'Irreconcilable')?.message).toMatch(/already used by Nginx\.example\.com/);
    expect(condition(second, 'Deployed')).toBeUndefined();
    const first = await nginx.get(ns.name, 'shared');
    expect(first?.status?.deployedRelease?.revision).toBe(1);
    expect((await storage.records(ns.name, 'shared')).map((r) => r.revision)).toEqual([1]);
    const d = await apps.readNamespacedDeployment({ namespace: ns.name, name: 'shared-nginx' });
    expect(d.spec?.replicas).toBe(1);
    await webservers.waitForEvent(ns.name, 'shared', 'ReleaseNameConflict');
    // Deleting the refused CR must not uninstall the other kind's release.
    await webservers.delete(ns.name, 'shared');
    await webservers.waitForGone(ns.name, 'shared');
    expect((await storage.records(ns.name, 'shared')).map((r) => r.status)).toEqual(['deployed']);
  });

  it('reports a name longer than helm allows instead of failing in helm', async () => {
    const name = `n${'x'.repeat(59)}`;
    await nginx.create(ns.name, name, {});
    const cr = await nginx.waitForCondition(ns.name, name, { type: 'Irreconcilable', status: 'True', reason: 'InvalidReleaseName' });
    expect(condition(cr, 'Irreconcilable')?.message).toMatch(/60 characters long; helm allows at most 53/);
    expect(await storage.records(ns.name, name)).toEqual([]);
    await nginx.delete(ns.name, name);
    await nginx.waitForGone(ns.name, name);
  });

  it('applies overrideValues over the spec and warns about them', async () => {
    await webservers.create(ns.name, 'overridden', { image: { tag: '1.25.0' } });
    await webservers.waitForCondition(ns.name, 'overridden', { type: 'Deployed', status: 'True' });
    const d = await apps.readNamespacedDeployment({ namespace: ns.name, name: 'overridden-nginx' });
    expect(d.spec?.template.spec?.containers[0]?.image).toBe('nginx:1.27.4');
    const warning = await webservers.waitForEvent(ns.name, 'overridden', 'OverrideValuesInUse');
    expect(warning.type).toBe('Warning');
    expect(warning.message).toBe('Chart value "image.tag" overridden to "1.27.4" by operator\'s watches.yaml');
  });

  it('does nothing for a paused CR and resumes when the annotation goes', async () => {
    await nginx.create(ns.name, 'paused', {}, { 'helm.sdk.operatorframework.io/paused': 'true' });
    const cr = await nginx.waitForCondition(ns.name, 'paused', { type: 'Paused', status: 'True', reason: 'PauseReconcileAnnotationTrue' });
    expect(cr.metadata.finalizers ?? []).toEqual([]);
    expect(await storage.records(ns.name, 'paused')).toEqual([]);
    await nginx.patch(ns.name, 'paused', { metadata: { annotations: { 'helm.sdk.operatorframework.io/paused': null } } });
    const resumed = await nginx.waitForCondition(ns.name, 'paused', { type: 'Deployed', status: 'True' });
    expect(condition(resumed, 'Paused')).toBeUndefined();
  });

  it('says in an event when a CRD has no status subresource', async () => {
    const statusless = new CRs(kc, NOSTATUS);
    await statusless.create(ns.name, 'mute', {});
    const event = await waitFor('a StatusWriteFailed event', async () =>
      (await statusless.events(ns.name, 'mute')).find((e) => e.reason === 'StatusWriteFailed'),
    );
    expect(event.type).toBe('Warning');
    expect(event.message).toContain('the CustomResourceDefinition statuslesses.test.example.com has no status subresource');
    await statusless.delete(ns.name, 'mute');
    await statusless.waitForGone(ns.name, 'mute');
  });

  it('with uninstall-wait keeps the CR until every release object is gone', async () => {
    await nginx.create(ns.name, 'waiter', {}, { 'helm.sdk.operatorframework.io/uninstall-wait': 'true' });
    await nginx.waitForCondition(ns.name, 'waiter', { type: 'Deployed', status: 'True' });
    const block = 'test.example.com/block';
    await core.patchNamespacedConfigMap(
      { namespace: ns.name, name: 'waiter-nginx', body: { metadata: { finalizers: [block] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await nginx.delete(ns.name, 'waiter');
    const waiting = await nginx.waitForCondition(ns.name, 'waiter', { type: 'Deployed', status: 'False', reason: 'UninstallSuccessful' });
    expect(condition(waiting, 'Deployed')?.message).toMatch(/Waiting until all resources are deleted: 1 left \(ConfigMap\/waiter-nginx\)/);
    expect(waiting.metadata.deletionTimestamp).toBeDefined();
    expect(await storage.records(ns.name, 'waiter')).toEqual([]);
    // Still held after the operator looked again: the finalizer stays while the ConfigMap exists.
    await waitForReconciles(op, 'nginx-controller', await activity(op), 2);
    const held = await nginx.get(ns.name, 'waiter');
    expect(held?.metadata.finalizers).toContain(FINALIZER);
    await core.patchNamespacedConfigMap(
      { namespace: ns.name, name: 'waiter-nginx', body: { metadata: { finalizers: null } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await nginx.waitForGone(ns.name, 'waiter');
    await waitFor('the ConfigMap to be gone', async () => {
      const list = await core.listNamespacedConfigMap({ namespace: ns.name, labelSelector: 'app.kubernetes.io/instance=waiter' });
      return list.items.length === 0;
    });
  });
});
