/**
 * Moved from the operator-level test/integration/operator/policies.test.ts (issue 45, item 2): naming,
 * collisions, pause, overrides, a CRD without status and uninstall-wait, reconcile by reconcile against
 * the real API server and helm. Each case owns a namespace and runs beside the
 * others; one harness serves the file.
 */
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../src/helm/storage.js';
import { FINALIZER } from '../../src/reconciler/core/reconciler.js';
import { testKubeConfig, waitFor } from '../support/kube.js';
import { condition, CRs, ensureCrd, NGINX, NGINX_CHART, type TestKind } from '../support/operator.js';
import { caseNamespaces, startReconcilers, type CaseNamespaces, type ReconcilerHarness } from '../support/reconciler-harness.js';

const WEBSERVER: TestKind = { group: 'test.example.com', version: 'v1', kind: 'Webserver', plural: 'webservers' };
const NOSTATUS: TestKind = {
  group: 'test.example.com',
  version: 'v1',
  kind: 'Statusless',
  plural: 'statuslesses',
  noStatusSubresource: true,
};
const WATCHES = [
  `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}}`,
  '- group: test.example.com',
  '  version: v1',
  '  kind: Webserver',
  `  chart: ${NGINX_CHART}`,
  '  overrideValues:',
  '    image.tag: $POLICY_TEST_TAG',
  `- {group: test.example.com, version: v1, kind: Statusless, chart: ${NGINX_CHART}}`,
  '',
].join('\n');
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

describe.concurrent('reconcile policies', () => {
  const kc = testKubeConfig();
  const nginx = new CRs(kc, NGINX);
  const webservers = new CRs(kc, WEBSERVER);
  const statusless = new CRs(kc, NOSTATUS);
  const storage = new ReleaseStorage(kc);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  // One harness for the file (one set of reconcilers), watching a namespace of each case's own.
  const CASES = ['policies-shared', 'policies-long', 'policies-override', 'policies-paused', 'policies-mute', 'policies-wait'] as const;
  let spaces: CaseNamespaces<(typeof CASES)[number]>;
  let h: ReconcilerHarness;

  const inNamespace = (prefix: (typeof CASES)[number], run: (ns: string) => Promise<void>): Promise<void> => run(spaces.of[prefix]);

  beforeAll(async () => {
    await Promise.all([ensureCrd(kc, NGINX), ensureCrd(kc, WEBSERVER), ensureCrd(kc, NOSTATUS)]);
    process.env.POLICY_TEST_TAG = '1.27.4';
    spaces = await caseNamespaces(CASES);
    h = await startReconcilers({ watches: WATCHES, namespaces: spaces.names });
  });
  afterAll(async () => {
    delete process.env.POLICY_TEST_TAG;
    await h.stop();
    await spaces.remove();
  });

  it('refuses a release name already used by a CR of another kind, leaving the first untouched', () =>
    inNamespace('policies-shared', async (ns) => {
      await nginx.create(ns, 'shared', { replicaCount: 1 });
      expect(condition((await h.reconcileUntilSettled(`${ns}/shared`, NGINX)).cr, 'Deployed')?.status).toBe('True');
      await webservers.create(ns, 'shared', { replicaCount: 2 });
      const second = (await h.reconcileUntilSettled(`${ns}/shared`, WEBSERVER)).cr;
      expect(condition(second, 'Irreconcilable')).toMatchObject({ status: 'True', reason: 'ReleaseNameConflict' });
      expect(condition(second, 'Irreconcilable')?.message).toMatch(/already used by Nginx\.example\.com/);
      expect(condition(second, 'Deployed')).toBeUndefined();
      const first = await nginx.get(ns, 'shared');
      expect(first?.status?.deployedRelease?.revision).toBe(1);
      expect((await storage.records(ns, 'shared')).map((r) => r.revision)).toEqual([1]);
      const d = await apps.readNamespacedDeployment({ namespace: ns, name: 'shared-nginx' });
      expect(d.spec?.replicas).toBe(1);
      await webservers.waitForEvent(ns, 'shared', 'ReleaseNameConflict');
      // Deleting the refused CR must not uninstall the other kind's release.
      await webservers.delete(ns, 'shared');
      expect((await h.reconcileUntilSettled(`${ns}/shared`, WEBSERVER)).cr).toBeUndefined();
      expect((await storage.records(ns, 'shared')).map((r) => r.status)).toEqual(['deployed']);
    }));

  it('reports a name longer than helm allows instead of failing in helm', () =>
    inNamespace('policies-long', async (ns) => {
      const name = `n${'x'.repeat(59)}`;
      await nginx.create(ns, name, {});
      const { cr } = await h.reconcileUntilSettled(`${ns}/${name}`, NGINX);
      expect(condition(cr, 'Irreconcilable')).toMatchObject({ status: 'True', reason: 'InvalidReleaseName' });
      expect(condition(cr, 'Irreconcilable')?.message).toMatch(/60 characters long; helm allows at most 53/);
      expect(await storage.records(ns, name)).toEqual([]);
      await nginx.delete(ns, name);
      expect((await h.reconcileUntilSettled(`${ns}/${name}`, NGINX)).cr).toBeUndefined();
    }));

  it('applies overrideValues over the spec and warns about them', () =>
    inNamespace('policies-override', async (ns) => {
      await webservers.create(ns, 'overridden', { image: { tag: '1.25.0' } });
      const { cr } = await h.reconcileUntilSettled(`${ns}/overridden`, WEBSERVER);
      expect(condition(cr, 'Deployed')?.status).toBe('True');
      const d = await apps.readNamespacedDeployment({ namespace: ns, name: 'overridden-nginx' });
      expect(d.spec?.template.spec?.containers[0]?.image).toBe('nginx:1.27.4');
      const warning = await webservers.waitForEvent(ns, 'overridden', 'OverrideValuesInUse');
      expect(warning.type).toBe('Warning');
      expect(warning.message).toBe('Chart value "image.tag" overridden to "1.27.4" by operator\'s watches.yaml');
    }));

  it('does nothing for a paused CR and resumes when the annotation goes', () =>
    inNamespace('policies-paused', async (ns) => {
      await nginx.create(ns, 'paused', {}, { 'helm.sdk.operatorframework.io/paused': 'true' });
      const { cr } = await h.reconcileUntilSettled(`${ns}/paused`, NGINX);
      expect(condition(cr, 'Paused')).toMatchObject({ status: 'True', reason: 'PauseReconcileAnnotationTrue' });
      expect(cr?.metadata.finalizers ?? []).toEqual([]);
      expect(await storage.records(ns, 'paused')).toEqual([]);
      await nginx.patch(ns, 'paused', { metadata: { annotations: { 'helm.sdk.operatorframework.io/paused': null } } });
      const resumed = (await h.reconcileUntilSettled(`${ns}/paused`, NGINX)).cr;
      expect(condition(resumed, 'Deployed')?.status).toBe('True');
      expect(condition(resumed, 'Paused')).toBeUndefined();
    }));

  it('says in an event when a CRD has no status subresource', () =>
    inNamespace('policies-mute', async (ns) => {
      await statusless.create(ns, 'mute', {});
      // The status write fails on every reconcile: the error is retried by the queue, so run a few
      // reconciles (the finalizer, the install) rather than waiting for a settled state.
      for (let i = 0; i < 3 && (await statusless.events(ns, 'mute')).every((e) => e.reason !== 'StatusWriteFailed'); i++) {
        await h.reconcile(`${ns}/mute`, NOSTATUS);
      }
      const event = await statusless.waitForEvent(ns, 'mute', 'StatusWriteFailed');
      expect(event.type).toBe('Warning');
      expect(event.message).toContain('the CustomResourceDefinition statuslesses.test.example.com has no status subresource');
      await statusless.delete(ns, 'mute');
      expect((await h.reconcileUntilSettled(`${ns}/mute`, NOSTATUS)).cr).toBeUndefined();
    }));

  it('with uninstall-wait keeps the CR until every release object is gone', () =>
    inNamespace('policies-wait', async (ns) => {
      await nginx.create(ns, 'waiter', {}, { 'helm.sdk.operatorframework.io/uninstall-wait': 'true' });
      expect(condition((await h.reconcileUntilSettled(`${ns}/waiter`, NGINX)).cr, 'Deployed')?.status).toBe('True');
      const block = 'test.example.com/block';
      await core.patchNamespacedConfigMap({ namespace: ns, name: 'waiter-nginx', body: { metadata: { finalizers: [block] } } }, merge);
      await nginx.delete(ns, 'waiter');
      // The uninstall is done and the CR waits on the ConfigMap: its 2 s polls are not waited out here.
      const waiting = (await h.reconcileUntilSettled(`${ns}/waiter`, NGINX, { pollBelowMs: 0 })).cr;
      expect(condition(waiting, 'Deployed')).toMatchObject({ status: 'False', reason: 'UninstallSuccessful' });
      expect(condition(waiting, 'Deployed')?.message).toMatch(
        /Waiting until all resources are deleted: 1 left \(ConfigMap\/waiter-nginx\)/,
      );
      expect(waiting?.metadata.deletionTimestamp).toBeDefined();
      expect(await storage.records(ns, 'waiter')).toEqual([]);
      // Still held after two more looks: the finalizer stays while the ConfigMap exists.
      for (let i = 0; i < 2; i++) await h.reconcile(`${ns}/waiter`, NGINX);
      expect((await nginx.get(ns, 'waiter'))?.metadata.finalizers).toContain(FINALIZER);
      await core.patchNamespacedConfigMap({ namespace: ns, name: 'waiter-nginx', body: { metadata: { finalizers: null } } }, merge);
      expect((await h.reconcileUntilSettled(`${ns}/waiter`, NGINX)).cr).toBeUndefined();
      await waitFor('the ConfigMap to be gone', async () => {
        const list = await core.listNamespacedConfigMap({ namespace: ns, labelSelector: 'app.kubernetes.io/instance=waiter' });
        return list.items.length === 0;
      });
    }));
});
