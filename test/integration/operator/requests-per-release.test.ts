import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CHANGED_OUTSIDE_EVENT } from '../../../src/reconciler/decide/outside-change.js';
import { CHART_LABEL } from '../../../src/reconciler/objects/ownership.js';
import { helmByHand, releaseByHand } from '../../support/helm.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  condition,
  CRs,
  ensureCrd,
  NGINX,
  NGINX_CHART,
  startOperator,
  waitForQuiet,
  waitForReconciles,
  type RunningOperator,
} from '../../support/operator.js';
import { total } from '../../support/prometheus.js';

const run = promisify(execFile);
const PAUSED = 'helm.sdk.operatorframework.io/paused';
const CRS = 3;
/** The kinds the nginx chart renders with its defaults. */
const KINDS = ['configmaps', 'services', 'serviceaccounts', 'deployments'] as const;

const metrics = async (): Promise<string> =>
  (
    await run(inject('kubectlBin'), ['--kubeconfig', inject('kubeconfigPath'), 'get', '--raw', '/metrics'], {
      timeout: 30_000,
      maxBuffer: 64 * 1024 * 1024,
    })
  ).stdout;
const count = (text: string, verb: string, resource: string): number =>
  total(text, 'apiserver_request_total', { verb, resource, subresource: '' });

/**
 * API requests of an install, counted by the API server (`apiserver_request_total`, all clients: the
 * cluster's own controllers write Pods and status subresources, not these): the operator must not
 * come back to each object helm created (ADR 0060), nor LIST the namespace's Secrets itself.
 */
describe('API requests per install', () => {
  const kc = testKubeConfig();
  const nginx = new CRs(kc, NGINX);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'requests');
    op = await startOperator({
      watches: `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}}\n`,
      namespaces: [ns.name],
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('creates each object owned, with no PATCH after helm and no Secret LIST but helm’s own', async () => {
    // The count is the API server's, of every client: the namespace controller, emptying a namespace
    // an earlier test file deleted, LISTs its Secrets too. Counted once none is terminating.
    await waitFor(
      'no namespace terminating',
      async () => (await kc.makeApiClient(CoreV1Api).listNamespace()).items.every((n) => n.metadata?.deletionTimestamp === undefined),
      { timeoutMs: 180_000, intervalMs: 500 },
    );
    const before = await metrics();
    const names = Array.from({ length: CRS }, (_, i) => `web-${i}`);
    await Promise.all(names.map((name) => nginx.create(ns.name, name, { replicaCount: 1 })));
    for (const name of names) await nginx.waitForCondition(ns.name, name, { type: 'Deployed', status: 'True' });
    const after = await metrics();
    const delta = (verb: string, resource: string): number => count(after, verb, resource) - count(before, verb, resource);

    const perKind = Object.fromEntries(KINDS.map((k) => [k, { APPLY: delta('APPLY', k), PATCH: delta('PATCH', k) }]));
    expect(perKind).toEqual(Object.fromEntries(KINDS.map((k) => [k, { APPLY: CRS, PATCH: 0 }])));
    // helm's own: the history LIST before the install, the record's create and its status update.
    expect({ POST: delta('POST', 'secrets'), PUT: delta('PUT', 'secrets') }).toEqual({ POST: CRS, PUT: CRS });
    // A LIST of the operator's own per install would add CRS; one a parallel test file's namespace
    // deletion may still bring is tolerated.
    expect(delta('LIST', 'secrets')).toBeGreaterThanOrEqual(CRS);
    expect(delta('LIST', 'secrets'), 'a Secret LIST per install besides helm’s').toBeLessThan(2 * CRS);

    // And the objects are owned as before: the chart label and a controller reference to their CR.
    const d = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: ns.name, name: 'web-0-nginx' });
    expect(d.metadata?.labels?.[CHART_LABEL]).toBe('nginx');
    expect(d.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Nginx', name: 'web-0', controller: true, blockOwnerDeletion: true }),
    ]);
  });

  it('reconciles that the release’s own objects bring read neither the CR nor the release storage (ADR 0069)', async () => {
    const names = Array.from({ length: CRS }, (_, i) => `web-${i}`);
    for (const name of names) await nginx.waitForCondition(ns.name, name, { type: 'Ready', status: 'True' });
    const kubectl = (...args: string[]) =>
      run(inject('kubectlBin'), ['--kubeconfig', inject('kubeconfigPath'), '-n', ns.name, ...args], { timeout: 30_000 });
    // An update of each CR's Deployment that is no drift and leaves it ready (a label the chart does
    // not set; a new annotation would bump its generation): its watch event queues the CR, whose
    // reconcile finds nothing to do.
    const poke = async (round: number): Promise<{ get: number; getSecrets: number }> => {
      const before = await metrics();
      const since = await activity(op);
      for (const name of names) await kubectl('label', '--overwrite', 'deployment', `${name}-nginx`, `example.com/poke=${round}`);
      await waitForReconciles(op, 'nginx-controller', since, CRS);
      // Every reconcile the pokes brought is counted in this round, however late (a loaded machine).
      await waitForQuiet(op, 'nginx-controller');
      const after = await metrics();
      return {
        get: count(after, 'GET', 'nginxes') - count(before, 'GET', 'nginxes'),
        getSecrets: count(after, 'GET', 'secrets') - count(before, 'GET', 'secrets'),
      };
    };
    // A first round settles what the converge left in flight: a reconcile whose cache still holds a
    // version of the CR the operator never read or wrote (the one created, before its finalizer
    // write was delivered) reads the CR once (ADR 0071 answers only versions the memo saw), and
    // records older than RECORDS_REMEMBERED_MS are read once.
    const first = await poke(1);
    expect(first.get, 'at most one read of each CR').toBeLessThanOrEqual(CRS);
    expect(first.getSecrets, 'at most one confirmation (two GETs) per release').toBeLessThanOrEqual(2 * CRS);
    // Then, nothing having changed: the CR is read at the version its own last write left, and
    // the records as that first round confirmed them.
    expect(await poke(2)).toEqual({ get: 0, getSecrets: 0 });
  });
});

/**
 * ADR 0111: a periodic reconcile of a release in sync learns from the watch of helm's storage that
 * its revision is still the latest and deployed, with no request; a revision made by hand that
 * changes no object (only its watch event and the next period can tell) is still found.
 */
describe('periodic reconciles and the release storage watch', () => {
  const kc = testKubeConfig();
  const nginx = new CRs(kc, NGINX);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;
  const names = Array.from({ length: CRS }, (_, i) => `periodic-${i}`);

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'periodic');
    // A period far shorter than RECORDS_REMEMBERED_MS: without the watch each periodic reconcile reads the storage.
    op = await startOperator({
      watches: `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}, reconcilePeriod: 2s}\n`,
      namespaces: [ns.name],
    });
    await Promise.all(names.map((name) => nginx.create(ns.name, name, { replicaCount: 1 })));
    for (const name of names) await nginx.waitForCondition(ns.name, name, { type: 'Ready', status: 'True' });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });
  const settledLooks = async (): Promise<number> =>
    total(await op.metrics.metrics(), 'helm_operator_settled_looks_total', { controller: 'nginx-controller' });

  it('read no storage Secret while the watch holds the release, and run no helm', async () => {
    await waitFor('the storage watch to hold every release', () =>
      Promise.resolve(names.every((name) => (op.operator.releaseStorage.cachedSecrets(ns.name, name)?.length ?? 0) > 0)),
    );
    const before = await metrics();
    const since = await activity(op);
    // Three periods of every CR.
    await waitForReconciles(op, 'nginx-controller', since, 3 * CRS);
    const after = await metrics();
    const done = await activity(op);
    expect({
      getSecrets: count(after, 'GET', 'secrets') - count(before, 'GET', 'secrets'),
      helm: done.helmExecutions - since.helmExecutions,
    }).toEqual({ getSecrets: 0, helm: 0 });
  });

  // ADR 0112: the periodic reconciles of a CR found settled decide nothing again while the
  // versions it was settled from stay the same; an object edited by hand is not one of them.
  it('take a settled decision again from unchanged versions, and repair an object edited since', async () => {
    const [name = ''] = names.slice(-1);
    await waitFor('periodic reconciles to be settled looks', async () => Promise.resolve((await settledLooks()) >= CRS));
    const core = kc.makeApiClient(CoreV1Api);
    const configMap = `${name}-nginx`;
    const rendered = (await core.readNamespacedConfigMap({ namespace: ns.name, name: configMap })).data?.['nginx.conf'];
    await core.patchNamespacedConfigMap(
      { namespace: ns.name, name: configMap, body: { data: { 'nginx.conf': 'edited by hand' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor(
      'the ConfigMap to be restored',
      async () => (await core.readNamespacedConfigMap({ namespace: ns.name, name: configMap })).data?.['nginx.conf'] === rendered,
      { timeoutMs: 30_000 },
    );
  });

  it('find a revision made by hand that the watch holds, and upgrade it back', async () => {
    const [name = ''] = names;
    // Paused while helm runs by hand: a reconcile beside it would take its pending-upgrade for one
    // a dead process left, and roll it back (ADR 0036 sees only this process's helm).
    await nginx.patch(ns.name, name, { metadata: { annotations: { [PAUSED]: 'true' } } });
    await waitFor('the CR to say it is paused', async () => condition(await nginx.get(ns.name, name), 'Paused')?.status === 'True');
    // A value no template reads: the objects stay as they are, so no dependent event comes.
    await helmByHand('upgrade', name, NGINX_CHART, '-n', ns.name, '--reuse-values', '--set', 'global.byHand=yes');
    await waitFor('the storage watch to hold revision 2', () =>
      Promise.resolve(op.operator.releaseStorage.cachedSecrets(ns.name, name)?.some((s) => s.metadata?.labels?.version === '2') === true),
    );
    await nginx.patch(ns.name, name, { metadata: { annotations: { [PAUSED]: null } } });
    const upgradedBack = await waitFor(
      'the operator to upgrade the release back to the CR',
      async () => {
        const release = await releaseByHand(name, ns.name);
        return release !== undefined && release.revision >= 3 && release.status === 'deployed' ? release : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(upgradedBack.values).toMatchObject({ replicaCount: 1 });
    expect(upgradedBack.values).not.toHaveProperty('global');
    // Events are recorded on the way out of the reconcile, and may be listed a moment after helm's record.
    const outside = await waitFor('the ReleaseChangedOutside event', async () => {
      const found = (await nginx.events(ns.name, name)).filter((e) => e.reason === CHANGED_OUTSIDE_EVENT);
      return found.length > 0 ? found : undefined;
    });
    expect(outside.map((e) => e.message)).toEqual([expect.stringContaining('revision 2 was made outside the operator')]);
  });
});
