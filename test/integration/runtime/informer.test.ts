/**
 * The runtime (informer → work queue → controller) against the real control plane: a Widget CRD with
 * a status subresource, real watch events, server-side label selectors and namespace restriction.
 */
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Controller, type ControllerOptions } from '../../../src/runtime/controller.js';
import { dropManagedFields, Informer } from '../../../src/runtime/informer.js';
import type { ReconcileContext, Reconciler, Request, Result } from '../../../src/runtime/reconcile.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { createNamespace, testKubeConfig, uniqueName, waitFor } from '../../support/kube.js';

const group = 'rt.test.example.com';
const version = 'v1';
const plural = 'widgets';
const crdName = `${plural}.${group}`;
const resource = { group, version, kind: 'Widget', plural, namespaced: true };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls a synchronous condition (reconciler records, the informer cache) with a deadline. */
const until = (description: string, condition: () => boolean, timeoutMs = 20_000) =>
  waitFor(description, () => Promise.resolve(condition()), { timeoutMs });

/** Records every reconcile and the peak number running at once; optionally slow. */
class RecordingReconciler implements Reconciler {
  readonly seen: Request[] = [];
  active = 0;
  maxActive = 0;

  constructor(private readonly delayMs = 0) {}

  async reconcile(request: Request, _context: ReconcileContext): Promise<Result> {
    this.seen.push(request);
    this.maxActive = Math.max(this.maxActive, ++this.active);
    try {
      if (this.delayMs > 0) await sleep(this.delayMs);
      return {};
    } finally {
      this.active--;
    }
  }

  count(namespace: string, name: string): number {
    return this.seen.filter((r) => r.namespace === namespace && r.name === name).length;
  }
}

let kc: KubeConfig;
let custom: CustomObjectsApi;
const namespaces: { name: string; remove: () => Promise<void> }[] = [];
const controllers: Controller[] = [];

async function namespace(prefix: string): Promise<string> {
  const ns = await createNamespace(kc, prefix);
  namespaces.push(ns);
  return ns.name;
}

function startController(reconciler: Reconciler, options: Partial<ControllerOptions> = {}): Promise<Controller> {
  const controller = new Controller({
    name: uniqueName('widget'),
    kubeConfig: kc,
    resource,
    namespaces: [],
    maxConcurrentReconciles: 1,
    reconciler,
    log: silentLogger(),
    cacheSyncTimeoutMs: 30_000,
    ...options,
  });
  controllers.push(controller);
  return controller.start().then(() => controller);
}

async function createWidget(ns: string, name: string, labels: Record<string, string> = {}): Promise<KubernetesObject> {
  const body = { apiVersion: `${group}/${version}`, kind: 'Widget', metadata: { name, labels }, spec: { size: 1 } };
  return (await custom.createNamespacedCustomObject({ group, version, plural, namespace: ns, body })) as KubernetesObject;
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

async function patchSpec(ns: string, name: string, size: number): Promise<KubernetesObject> {
  const body = { spec: { size } };
  return (await custom.patchNamespacedCustomObject({ group, version, plural, namespace: ns, name, body }, mergePatch)) as KubernetesObject;
}

async function patchStatus(ns: string, name: string, phase: string): Promise<KubernetesObject> {
  const body = { status: { phase } };
  return (await custom.patchNamespacedCustomObjectStatus(
    { group, version, plural, namespace: ns, name, body },
    mergePatch,
  )) as KubernetesObject;
}

beforeAll(async () => {
  kc = testKubeConfig();
  custom = kc.makeApiClient(CustomObjectsApi);
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  await ext
    .createCustomResourceDefinition({
      body: {
        metadata: { name: crdName },
        spec: {
          group,
          scope: 'Namespaced',
          names: { kind: 'Widget', plural, singular: 'widget', listKind: 'WidgetList' },
          versions: [
            {
              name: version,
              served: true,
              storage: true,
              subresources: { status: {} },
              schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
            },
          ],
        },
      },
    })
    .catch((err: unknown) => {
      if ((err as { code?: number }).code !== 409) throw err; // left over from an earlier run
    });
  await waitFor('the Widget CRD to be established', async () => {
    const crd = await ext.readCustomResourceDefinition({ name: crdName });
    return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
  });
});

afterEach(async () => {
  await Promise.all(controllers.splice(0).map((c) => c.stop()));
});

afterAll(async () => {
  await Promise.all(namespaces.splice(0).map((ns) => ns.remove()));
  await kc
    .makeApiClient(ApiextensionsV1Api)
    .deleteCustomResourceDefinition({ name: crdName })
    .catch(() => undefined);
});

describe('Controller on a real cluster', () => {
  it('reconciles existing objects on start, then creates, spec updates and deletes — but not status-only patches', async () => {
    const ns = await namespace('rt-crud');
    await createWidget(ns, 'before');
    const rec = new RecordingReconciler();
    const controller = await startController(rec, { namespaces: [ns] });
    expect(controller.hasSynced()).toBe(true);
    await until('the pre-existing widget to be reconciled', () => rec.count(ns, 'before') === 1);

    await createWidget(ns, 'w1');
    await until('a reconcile after create', () => rec.count(ns, 'w1') === 1);

    await patchSpec(ns, 'w1', 2);
    await until('a reconcile after a spec change', () => rec.count(ns, 'w1') === 2);

    const patched = await patchStatus(ns, 'w1', 'Ready');
    const rv = patched.metadata?.resourceVersion;
    await until('the cache to see the status patch', () => controller.cache.get(ns, 'w1')?.metadata?.resourceVersion === rv);
    // A later event of the same watch, reconciled by the one worker in queue order: had the status
    // patch enqueued w1, w1 would have been reconciled before the marker.
    await createWidget(ns, 'marker');
    await until('a reconcile of the marker', () => rec.count(ns, 'marker') === 1);
    expect(rec.count(ns, 'w1')).toBe(2);

    await custom.deleteNamespacedCustomObject({ group, version, plural, namespace: ns, name: 'w1' });
    await until('a reconcile after delete', () => rec.count(ns, 'w1') === 3);
    expect(controller.cache.get(ns, 'w1')).toBeUndefined();
  });

  it('applies the label selector server-side', async () => {
    const ns = await namespace('rt-labels');
    const selectorValue = uniqueName('sel');
    const rec = new RecordingReconciler();
    const controller = await startController(rec, { labelSelector: `rt-test=${selectorValue}` });
    await createWidget(ns, 'unlabeled');
    await createWidget(ns, 'other', { 'rt-test': 'something-else' });
    await createWidget(ns, 'labeled', { 'rt-test': selectorValue });
    // Created last: had the others reached the controller, its one worker would have reconciled them first.
    await until('the labeled widget to be reconciled', () => rec.count(ns, 'labeled') === 1);
    expect(rec.count(ns, 'unlabeled')).toBe(0);
    expect(rec.count(ns, 'other')).toBe(0);
    // Never listed nor watched: the cache holds only matching objects.
    expect(controller.cache.list().map((o) => o.metadata?.name)).toEqual(['labeled']);
  });

  it('ignores other namespaces when restricted to some', async () => {
    const watched = await namespace('rt-watched');
    const watched2 = await namespace('rt-watched2');
    const ignored = await namespace('rt-ignored');
    const rec = new RecordingReconciler();
    const controller = await startController(rec, { namespaces: [watched, watched2] });
    await createWidget(ignored, 'w');
    await createWidget(watched, 'w');
    await createWidget(watched2, 'w');
    // Created last: had the ignored namespace's widget reached the controller, its one worker would have reconciled it first.
    await until('both watched namespaces to be reconciled', () => rec.count(watched, 'w') === 1 && rec.count(watched2, 'w') === 1);
    expect(rec.count(ignored, 'w')).toBe(0);
    expect(controller.cache.get(ignored, 'w')).toBeUndefined();
    expect(controller.cache.get(watched2, 'w')?.metadata?.namespace).toBe(watched2);
  });

  it('never runs more than maxConcurrentReconciles at once', async () => {
    const ns = await namespace('rt-concurrency');
    const rec = new RecordingReconciler(150);
    await startController(rec, { namespaces: [ns], maxConcurrentReconciles: 3 });
    await Promise.all(Array.from({ length: 30 }, (_, i) => createWidget(ns, `w${i}`)));
    await until('all 30 widgets to be reconciled', () => new Set(rec.seen.map((r) => r.name)).size === 30, 60_000);
    expect(rec.maxActive).toBeLessThanOrEqual(3);
    expect(rec.maxActive).toBe(3); // the bound was actually reached
  });
});

describe('Informer on a real cluster', () => {
  it('lists and watches a core-group resource through the generic list path', async () => {
    const ns = await namespace('rt-core');
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'before' }, data: { a: '1' } } });
    const informer = new Informer(kc, { resource: { group: '', version: 'v1', plural: 'configmaps', namespace: ns }, pageSize: 1 });
    const added: string[] = [];
    informer.onAdd((o) => added.push(o.metadata?.name ?? ''));
    try {
      await informer.start();
      expect(informer.hasSynced()).toBe(true);
      expect(informer.get('before', ns)).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', data: { a: '1' } });
      await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'after' } } });
      await until('the watch to deliver the new ConfigMap', () => added.includes('after'));
      expect(added).toContain('before');
    } finally {
      await informer.stop();
    }
  });

  it('caches what the transform returns, for listed and for watched objects', async () => {
    const ns = await namespace('rt-transform');
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'listed' }, data: { a: '1' } } });
    const informer = new Informer(kc, {
      resource: { group: '', version: 'v1', plural: 'configmaps', namespace: ns },
      transform: dropManagedFields,
    });
    const handed: KubernetesObject[] = [];
    informer.onAdd((o) => handed.push(o));
    informer.onUpdate((o) => handed.push(o));
    try {
      await informer.start();
      await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'watched' }, data: { b: '2' } } });
      await core.patchNamespacedConfigMap(
        { namespace: ns, name: 'watched', body: { data: { b: '3' } }, fieldManager: 'someone-else' },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await until(
        'the watch to deliver the update',
        () => (informer.get('watched', ns) as { data?: Record<string, string> } | undefined)?.data?.b === '3',
      );
      // The server keeps managedFields (two managers now); neither the cache nor the handlers see them.
      expect((await core.readNamespacedConfigMap({ namespace: ns, name: 'watched' })).metadata?.managedFields?.length).toBe(2);
      for (const name of ['listed', 'watched']) expect(informer.get(name, ns)?.metadata).not.toHaveProperty('managedFields');
      expect(handed.length).toBeGreaterThanOrEqual(3);
      for (const o of handed) expect(o.metadata).not.toHaveProperty('managedFields');
      expect(informer.get('listed', ns)).toMatchObject({
        kind: 'ConfigMap',
        data: { a: '1' },
        metadata: { name: 'listed', namespace: ns },
      });
    } finally {
      await informer.stop();
    }
  });
});
