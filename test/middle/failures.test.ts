/**
 * Moved from the operator-level test/integration/operator/failures.test.ts (issue 45, item 2): helm
 * failures after rendering, reconcile by reconcile. The release is cleaned up or rolled back, status
 * says why, and the retries of one spec stop after MAX_FAILED_ATTEMPTS. The queue's backoff between
 * those retries is the controller's (test/integration/operator keeps it); here each retry runs at once.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../src/helm/storage.js';
import { MAX_FAILED_ATTEMPTS } from '../../src/reconciler/core/reconciler.js';
import { CHART_LABEL } from '../../src/reconciler/objects/ownership.js';
import { TerminalError } from '../../src/runtime/reconcile.js';
import { testKubeConfig } from '../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, type CR, type TestKind } from '../support/operator.js';
import { withReconcilers, type ReconcilerHarness } from '../support/reconciler-harness.js';

const BREAKABLE: TestKind = { group: 'test.example.com', version: 'v1', kind: 'Breakable', plural: 'breakables' };
const WATCHES = `- {group: ${BREAKABLE.group}, version: ${BREAKABLE.version}, kind: ${BREAKABLE.kind}, chart: ${fixtureChart('breakable')}}\n`;

const attemptsOf = (cr: CR | undefined): number =>
  (cr as { status?: { failedAttempts?: { count: number } } } | undefined)?.status?.failedAttempts?.count ?? 0;

describe.concurrent('failed installs and upgrades', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, BREAKABLE);
  const storage = new ReleaseStorage(kc);
  const core = kc.makeApiClient(CoreV1Api);
  /** The case's own namespace, and the reconcilers of WATCHES on it alone. */
  const inNamespace = (prefix: string, run: (ns: string, h: ReconcilerHarness) => Promise<void>): Promise<void> =>
    withReconcilers(prefix, { watches: WATCHES }, run);

  beforeAll(() => ensureCrd(kc, BREAKABLE));

  it("removes a failed install, reports helm's error, and installs once the spec is fixed", () =>
    inNamespace('failures-install', async (ns, h) => {
      await crs.create(ns, 'bad-install', { configName: 'Not_A_Valid_Name' });
      const failed = (await h.reconcileUntilSettled(`${ns}/bad-install`, undefined, { stopAtError: true })).cr;
      expect(condition(failed, 'ReleaseFailed')).toMatchObject({ status: 'True', reason: 'InstallError' });
      expect(condition(failed, 'ReleaseFailed')?.message).toMatch(/Not_A_Valid_Name/);
      expect(condition(failed, 'Deployed')).toMatchObject({ status: 'False', reason: 'InstallError' });
      await crs.waitForEvent(ns, 'bad-install', 'InstallFailed');
      // No failed or pending revision is left behind between retries.
      expect(await storage.records(ns, 'bad-install')).toEqual([]);

      await crs.patch(ns, 'bad-install', { spec: { configName: 'bad-install-settings' } });
      const fixed = (await h.reconcileUntilSettled(`${ns}/bad-install`)).cr;
      expect(condition(fixed, 'Deployed')).toMatchObject({ status: 'True', reason: 'InstallSuccessful' });
      expect(condition(fixed, 'ReleaseFailed')?.status).toBe('False');
      expect(fixed?.status?.deployedRelease?.revision).toBe(1);
    }));

  it("keeps the owner references a chart renders on an object, and adds the CR's after them", () =>
    inNamespace('failures-owned', async (ns, h) => {
      // The patch that stamps ownership on new objects without reading them first refuses an object
      // with owner references; the read-then-merge path takes over.
      const anchor = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'anchor' } } });
      const anchorRef = { apiVersion: 'v1', kind: 'ConfigMap', name: 'anchor', uid: anchor.metadata?.uid };
      await crs.create(ns, 'owned', { configName: 'owned-settings', configOwners: [anchorRef] });
      const cr = (await h.reconcileUntilSettled(`${ns}/owned`)).cr;
      expect(condition(cr, 'Deployed')).toMatchObject({ status: 'True', reason: 'InstallSuccessful' });
      const cm = await core.readNamespacedConfigMap({ namespace: ns, name: 'owned-settings' });
      expect(cm.metadata?.ownerReferences).toEqual([
        expect.objectContaining(anchorRef),
        expect.objectContaining({ kind: BREAKABLE.kind, name: 'owned', uid: cr?.metadata.uid, controller: true }),
      ]);
      expect(cm.metadata?.labels?.[CHART_LABEL]).toBe('breakable');
    }));

  it('rolls a failed upgrade back to the revision that was serving', () =>
    inNamespace('failures-upgrade', async (ns, h) => {
      await crs.create(ns, 'bad-upgrade', { configName: 'bad-upgrade-settings' });
      expect(condition((await h.reconcileUntilSettled(`${ns}/bad-upgrade`)).cr, 'Deployed')?.status).toBe('True');
      // A Job's pod template is immutable: the apply of revision 2 fails.
      await crs.patch(ns, 'bad-upgrade', { spec: { jobMessage: 'second' } });
      // One reconcile: the upgrade fails and is rolled back (the retries are the next case's).
      const { cr: failed } = await h.reconcile(`${ns}/bad-upgrade`);
      expect(condition(failed, 'ReleaseFailed')).toMatchObject({ status: 'True', reason: 'UpgradeError' });
      expect(condition(failed, 'ReleaseFailed')?.message).toMatch(/immutable|Invalid/i);
      await crs.waitForEvent(ns, 'bad-upgrade', 'UpgradeFailed');
      await crs.waitForEvent(ns, 'bad-upgrade', 'RollbackSuccessful');
      const records = await storage.records(ns, 'bad-upgrade');
      const latest = records.reduce((a, b) => (b.revision > a.revision ? b : a));
      expect(latest.status).toBe('deployed');
      expect(records.some((r) => r.status === 'failed')).toBe(true);
      expect(records.filter((r) => r.status.startsWith('pending-'))).toEqual([]);
      // Fixed by going back to the old value: the rolled-back release is what the spec asks for.
      await crs.patch(ns, 'bad-upgrade', { spec: { jobMessage: 'first' } });
      expect(condition((await h.reconcileUntilSettled(`${ns}/bad-upgrade`)).cr, 'ReleaseFailed')?.status).toBe('False');
    }));

  it(`stops retrying after ${MAX_FAILED_ATTEMPTS} failed upgrades of the same spec, and resumes when it changes`, () =>
    inNamespace('failures-stubborn', async (ns, h) => {
      const key = `${ns}/stubborn`;
      await crs.create(ns, 'stubborn', { configName: 'stubborn-settings' });
      expect(condition((await h.reconcileUntilSettled(key)).cr, 'Deployed')?.status).toBe('True');
      await crs.patch(ns, 'stubborn', { spec: { jobMessage: 'changed' } });
      let settled = await h.reconcileUntilSettled(key, undefined, { stopAtError: true });
      expect(attemptsOf(settled.cr)).toBe(1);
      // Whatever brings the CR back (backoff, an annotation, a dependent's event) counts; poke it until it stalls.
      for (let i = 0; i < MAX_FAILED_ATTEMPTS + 2 && condition(settled.cr, 'Stalled') === undefined; i++) {
        await crs.patch(ns, 'stubborn', { metadata: { annotations: { 'test.example.com/poke': String(i) } } });
        settled = await h.reconcileUntilSettled(key, undefined, { stopAtError: true });
      }
      expect(settled.error).toBeInstanceOf(TerminalError);
      expect(condition(settled.cr, 'Stalled')).toMatchObject({ status: 'True', reason: 'RetriesExhausted' });
      expect(attemptsOf(settled.cr)).toBe(MAX_FAILED_ATTEMPTS);
      expect(condition(settled.cr, 'ReleaseFailed')?.message).toMatch(/retries stopped until the spec or the chart changes/);
      // Stalled: a poke's reconcile runs no helm and stores no revision.
      const revisions = (await storage.records(ns, 'stubborn')).length;
      const executions = h.helm.executions;
      await crs.patch(ns, 'stubborn', { metadata: { annotations: { 'test.example.com/poke': 'again' } } });
      await h.reconcile(key);
      expect(h.helm.executions).toBe(executions);
      expect((await storage.records(ns, 'stubborn')).length).toBe(revisions);

      await crs.patch(ns, 'stubborn', { spec: { jobMessage: null } });
      const fixed = (await h.reconcileUntilSettled(key)).cr;
      expect(condition(fixed, 'ReleaseFailed')?.status).toBe('False');
      expect(condition(fixed, 'Stalled')).toBeUndefined();
      expect(attemptsOf(fixed)).toBe(0);
    }));
});
