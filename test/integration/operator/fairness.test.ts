/**
 * Fair to tenants (issue 32 item 6, ADR 0041): one namespace can neither keep another's CRs waiting
 * behind its backlog (fair queuing) nor hold every worker with installs whose hook never completes
 * (a share of the workers per namespace, and helm's --timeout ending each such install).
 */
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, startOperator, type RunningOperator, type TestKind } from '../../support/operator.js';

const TENANT: TestKind = { group: 'fairness.example.com', version: 'v1', kind: 'Tenant', plural: 'tenants' };
const WATCHES = `- {group: ${TENANT.group}, version: ${TENANT.version}, kind: ${TENANT.kind}, chart: ${fixtureChart('hanging-hook')}}\n`;
const HANG = { hang: true };
const TRIVIAL = { hang: false };
/** Far below helm's 5-minute timeout, which the hanging installs run into. */
const SERVED_WITHIN_MS = 90_000;

type Namespace = Awaited<ReturnType<typeof createNamespace>>;

const kc = testKubeConfig();
const tenants = new CRs(kc, TENANT);
const core = kc.makeApiClient(CoreV1Api);
const batch = kc.makeApiClient(BatchV1Api);

const isTrue = (cr: Awaited<ReturnType<CRs['get']>>, type: string): boolean => condition(cr, type)?.status === 'True';

/** helm's release records of `namespace` in `status` (pending-install, deployed, failed …). */
const releasesIn = async (namespace: string, status: string): Promise<number> =>
  (await core.listNamespacedSecret({ namespace, labelSelector: `owner=helm,status=${status}` })).items.length;

beforeAll(async () => {
  await ensureCrd(kc, TENANT);
});

describe('a tenant whose installs hang on a hook', () => {
  let hostile: Namespace;
  let other: Namespace;
  let op: RunningOperator;

  beforeAll(async () => {
    hostile = await createNamespace(kc, 'fair-hostile');
    other = await createNamespace(kc, 'fair-other');
    // Two workers, two namespaces: each namespace may hold one (all but one).
    op = await startOperator({
      watches: WATCHES,
      namespaces: [hostile.name, other.name],
      maxConcurrentReconciles: 2,
      gracefulShutdownTimeoutMs: 1_000,
    });
  });
  afterAll(async () => {
    await op.stop();
    await hostile.remove();
    await other.remove();
  });

  it(
    'leaves a worker for another namespace: its trivial CR is deployed and Ready while four hooks still hang',
    { timeout: 180_000 },
    async () => {
      for (let i = 0; i < 4; i++) await tenants.create(hostile.name, `hang-${i}`, HANG);
      await waitFor(
        'a hanging hook Job in the hostile namespace',
        async () => (await batch.listNamespacedJob({ namespace: hostile.name })).items.length > 0,
      );

      await tenants.create(other.name, 'trivial', TRIVIAL);
      await tenants.waitForCondition(other.name, 'trivial', { type: 'Deployed', status: 'True' }, { timeoutMs: SERVED_WITHIN_MS });
      await tenants.waitForCondition(other.name, 'trivial', { type: 'Ready', status: 'True' }, { timeoutMs: SERVED_WITHIN_MS });

      // The hostile installs are still running: helm waits on their hooks, none is deployed or failed.
      expect(await releasesIn(hostile.name, 'pending-install')).toBeGreaterThan(0);
      for (let i = 0; i < 4; i++) {
        const cr = await tenants.get(hostile.name, `hang-${i}`);
        expect(isTrue(cr, 'Deployed'), `hang-${i} deployed`).toBe(false);
        expect(isTrue(cr, 'ReleaseFailed'), `hang-${i} failed`).toBe(false);
      }
    },
  );
});

describe("helm's timeout ends an install whose hook never completes", () => {
  let ns: Namespace;
  let op: RunningOperator;

  beforeAll(async () => {
    ns = await createNamespace(kc, 'fair-timeout');
    // One worker, so only the timeout can free it for the next CR.
    op = await startOperator({
      watches: WATCHES,
      namespaces: [ns.name],
      maxConcurrentReconciles: 1,
      helmTimeoutMs: 10_000,
      gracefulShutdownTimeoutMs: 1_000,
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('the release fails with a clear reason and the worker goes on to the next CR', { timeout: 180_000 }, async () => {
    await tenants.create(ns.name, 'hang', HANG);
    await waitFor('the hanging hook Job', async () => (await batch.listNamespacedJob({ namespace: ns.name })).items.length > 0);
    await tenants.create(ns.name, 'next', TRIVIAL);

    const failed = await tenants.waitForCondition(
      ns.name,
      'hang',
      { type: 'ReleaseFailed', status: 'True', reason: 'InstallError' },
      { timeoutMs: 90_000 },
    );
    expect(condition(failed, 'ReleaseFailed')?.message).toMatch(/post-install|hook/i);
    expect(condition(failed, 'ReleaseFailed')?.message).toMatch(/timed out|deadline exceeded/i);
    expect(isTrue(failed, 'Deployed')).toBe(false);
    await tenants.waitForCondition(ns.name, 'next', { type: 'Deployed', status: 'True' }, { timeoutMs: 90_000 });
  });
});

describe('a tenant that floods CRs', () => {
  /** Twenty times the two workers: the flood lasts far longer than serving one CR. */
  const FLOOD = 40;
  let flooding: Namespace;
  let other: Namespace;
  let op: RunningOperator;

  beforeAll(async () => {
    flooding = await createNamespace(kc, 'fair-flood');
    other = await createNamespace(kc, 'fair-quiet');
    // Every worker may serve the flood (a cap of 2 of 2): only the queue's fairness helps here.
    op = await startOperator({
      watches: WATCHES,
      namespaces: [flooding.name, other.name],
      maxConcurrentReconciles: 2,
      maxConcurrentReconcilesPerNamespace: 2,
      gracefulShutdownTimeoutMs: 1_000,
    });
  });
  afterAll(async () => {
    await op.stop();
    await flooding.remove();
    await other.remove();
  });

  it(`serves another namespace's CR before the flood of ${FLOOD} CRs is worked off`, { timeout: 300_000 }, async () => {
    for (let i = 0; i < FLOOD; i++) await tenants.create(flooding.name, `flood-${i}`, TRIVIAL);
    await tenants.create(other.name, 'mine', TRIVIAL);
    await tenants.waitForCondition(other.name, 'mine', { type: 'Deployed', status: 'True' }, { timeoutMs: SERVED_WITHIN_MS });

    const deployed = (await tenants.list(flooding.name)).filter((cr) => isTrue(cr, 'Deployed')).length;
    expect(deployed, 'flooding CRs deployed when the other namespace was served').toBeLessThan(FLOOD);
  });
});
