import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { CHART_LABEL } from '../../../src/reconciler/objects/ownership.js';
import { MAX_FAILED_ATTEMPTS } from '../../../src/reconciler/core/reconciler.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  condition,
  CRs,
  ensureCrd,
  fixtureChart,
  helmExecutionsSince,
  startOperator,
  waitForReconciles,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const BREAKABLE: TestKind = { group: 'test.example.com', version: 'v1', kind: 'Breakable', plural: 'breakables' };
const CONTROLLER = 'breakable-controller';

/** helm failures after rendering: the release is cleaned up or rolled back, and status says why. */
describe('failed installs and upgrades', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, BREAKABLE);
  const storage = new ReleaseStorage(kc);
  const core = kc.makeApiClient(CoreV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  beforeAll(async () => {
    await ensureCrd(kc, BREAKABLE);
    ns = await createNamespace(kc, 'failures');
    op = await startOperator({
      watches: `- {group: ${BREAKABLE.group}, version: ${BREAKABLE.version}, kind: ${BREAKABLE.kind}, chart: ${fixtureChart('breakable')}}\n`,
      namespaces: [ns.name],
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it("removes a failed install, reports helm's error, and installs once the spec is fixed", async () => {
    await crs.create(ns.name, 'bad-install', { configName: 'Not_A_Valid_Name' });
    const failed = await crs.waitForCondition(ns.name, 'bad-install', { type: 'ReleaseFailed', status: 'True', reason: 'InstallError' });
    expect(condition(failed, 'ReleaseFailed')?.message).toMatch(/Not_A_Valid_Name/);
    expect(condition(failed, 'Deployed')).toMatchObject({ status: 'False', reason: 'InstallError' });
    await crs.waitForEvent(ns.name, 'bad-install', 'InstallFailed');
    // No failed or pending revision is left behind between retries.
    await waitFor('the failed release to be removed', async () => (await storage.records(ns.name, 'bad-install')).length === 0);

    await crs.patch(ns.name, 'bad-install', { spec: { configName: 'bad-install-settings' } });
    const fixed = await crs.waitForCondition(ns.name, 'bad-install', { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
    expect(condition(fixed, 'ReleaseFailed')?.status).toBe('False');
    expect(fixed.status?.deployedRelease?.revision).toBe(1);
  });

  it("keeps the owner references a chart renders on an object, and adds the CR's after them", async () => {
    // The patch that stamps ownership on new objects without reading them first refuses an object
    // with owner references; the read-then-merge path takes over.
    const anchor = await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'anchor' } } });
    const anchorRef = { apiVersion: 'v1', kind: 'ConfigMap', name: 'anchor', uid: anchor.metadata?.uid };
    await crs.create(ns.name, 'owned', { configName: 'owned-settings', configOwners: [anchorRef] });
    const cr = await crs.waitForCondition(ns.name, 'owned', { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
    const cm = await core.readNamespacedConfigMap({ namespace: ns.name, name: 'owned-settings' });
    expect(cm.metadata?.ownerReferences).toEqual([
      expect.objectContaining(anchorRef),
      expect.objectContaining({ kind: BREAKABLE.kind, name: 'owned', uid: cr.metadata.uid, controller: true }),
    ]);
    expect(cm.metadata?.labels?.[CHART_LABEL]).toBe('breakable');
  });

  it('rolls a failed upgrade back to the revision that was serving', async () => {
    await crs.create(ns.name, 'bad-upgrade', { configName: 'bad-upgrade-settings' });
    await crs.waitForCondition(ns.name, 'bad-upgrade', { type: 'Deployed', status: 'True' });
    // A Job's pod template is immutable: the apply of revision 2 fails.
    await crs.patch(ns.name, 'bad-upgrade', { spec: { jobMessage: 'second' } });
    const failed = await crs.waitForCondition(ns.name, 'bad-upgrade', { type: 'ReleaseFailed', status: 'True', reason: 'UpgradeError' });
    expect(condition(failed, 'ReleaseFailed')?.message).toMatch(/immutable|Invalid/i);
    await crs.waitForEvent(ns.name, 'bad-upgrade', 'UpgradeFailed');
    await crs.waitForEvent(ns.name, 'bad-upgrade', 'RollbackSuccessful');
    // The failed upgrade may be tried again (each try fails and is rolled back again), so check
    // between tries, when the newest revision is the rollback, deployed.
    const records = await waitFor(
      'the newest revision to be the deployed rollback',
      async () => {
        const all = await storage.records(ns.name, 'bad-upgrade');
        const latest = all.reduce((a, b) => (b.revision > a.revision ? b : a));
        return latest.status === 'deployed' ? all : undefined;
      },
      { intervalMs: 50 },
    );
    expect(records.some((r) => r.status === 'failed')).toBe(true);
    expect(records.filter((r) => r.status.startsWith('pending-'))).toEqual([]);
    // Fixed by going back to the old value: the rolled-back release is what the spec asks for.
    await crs.patch(ns.name, 'bad-upgrade', { spec: { jobMessage: 'first' } });
    await crs.waitForCondition(ns.name, 'bad-upgrade', { type: 'ReleaseFailed', status: 'False' });
  });

  it(`stops retrying after ${MAX_FAILED_ATTEMPTS} failed upgrades of the same spec, and resumes when it changes`, async () => {
    type Counted = { status?: { failedAttempts?: { count: number } } };
    const attempts = async (): Promise<number> =>
      ((await crs.get(ns.name, 'stubborn')) as Counted | undefined)?.status?.failedAttempts?.count ?? 0;
    await crs.create(ns.name, 'stubborn', { configName: 'stubborn-settings' });
    await crs.waitForCondition(ns.name, 'stubborn', { type: 'Deployed', status: 'True' });
    await crs.patch(ns.name, 'stubborn', { spec: { jobMessage: 'changed' } });
    await waitFor('the first failed attempt', async () => (await attempts()) >= 1);
    // Whatever brings the CR back (backoff, an annotation, a dependent's event) counts; poke it until it stalls.
    for (let i = 0; i < MAX_FAILED_ATTEMPTS + 2 && condition(await crs.get(ns.name, 'stubborn'), 'Stalled') === undefined; i++) {
      const before = await attempts();
      await crs.patch(ns.name, 'stubborn', { metadata: { annotations: { 'test.example.com/poke': String(i) } } });
      await waitFor(
        'another attempt or the stall',
        async () => (await attempts()) > before || condition(await crs.get(ns.name, 'stubborn'), 'Stalled') !== undefined,
      );
    }
    const stalled = await crs.waitForCondition(ns.name, 'stubborn', { type: 'Stalled', status: 'True', reason: 'RetriesExhausted' });
    expect(await attempts()).toBe(MAX_FAILED_ATTEMPTS);
    expect(condition(stalled, 'ReleaseFailed')?.message).toMatch(/retries stopped until the spec or the chart changes/);
    // Stalled: more pokes run no helm and store no revision.
    const revisions = (await storage.records(ns.name, 'stubborn')).length;
    const before = await activity(op);
    await crs.patch(ns.name, 'stubborn', { metadata: { annotations: { 'test.example.com/poke': 'again' } } });
    // The poke's reconcile (the other CRs here are settled and next due a period later).
    await waitForReconciles(op, CONTROLLER, before, 1);
    expect(await helmExecutionsSince(op, before)).toBe(0);
    expect((await storage.records(ns.name, 'stubborn')).length).toBe(revisions);

    await crs.patch(ns.name, 'stubborn', { spec: { jobMessage: null } });
    const fixed = await crs.waitForCondition(ns.name, 'stubborn', { type: 'ReleaseFailed', status: 'False' });
    expect(condition(fixed, 'Stalled')).toBeUndefined();
    expect(await attempts()).toBe(0);
  });
});
