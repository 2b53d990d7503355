import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CHART_LABEL } from '../../../src/reconciler/objects/ownership.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  CRs,
  ensureCrd,
  NGINX,
  NGINX_CHART,
  startOperator,
  waitForReconciles,
  type RunningOperator,
} from '../../support/operator.js';
import { total } from '../../support/prometheus.js';

const run = promisify(execFile);
const CRS = 3;
/** The kinds the nginx chart renders with its defaults. */
const KINDS = ['configmaps', 'services', 'serviceaccounts', 'deployments'] as const;

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

  const metrics = async (): Promise<string> =>
    (
      await run(inject('kubectlBin'), ['--kubeconfig', inject('kubeconfigPath'), 'get', '--raw', '/metrics'], {
        timeout: 30_000,
        maxBuffer: 64 * 1024 * 1024,
      })
    ).stdout;
  const count = (text: string, verb: string, resource: string): number =>
    total(text, 'apiserver_request_total', { verb, resource, subresource: '' });

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
