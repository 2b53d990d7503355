/**
 * Moved from the operator-level test/integration/operator/adoption.test.ts (issue 32, item 7; ADR 0042): reconcile by
 * reconcile: a CR named after a release this operator did not install never takes it over from the
 * name alone. The attack: an administrator installs release `web` of the chart by hand; a tenant who
 * may create CRs names one `web`, to overwrite its values and, on deleting the CR, uninstall it.
 * Adoption happens only when the watch says so (`adoptReleases: true`, the migration from
 * operator-sdk) or when the release names this very CR as owner (operator-sdk's).
 */
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { storageSecretName } from '../../src/helm/storage.js';
import { RELEASE_LABELS } from '../../src/reconciler/decide/state.js';
import { helmByHand, releaseByHand } from '../support/helm.js';
import { createNamespace, testKubeConfig } from '../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, type TestKind } from '../support/operator.js';
import { startReconcilers, withReconcilers, type ReconcilerHarness } from '../support/reconciler-harness.js';

const CHART = fixtureChart('tenant-app');
const APP: TestKind = { group: 'adoption.example.com', version: 'v1', kind: 'App', plural: 'apps' };
const MIGRATED: TestKind = { group: 'adoption.example.com', version: 'v1', kind: 'MigratedApp', plural: 'migratedapps' };
const watchOf = (k: TestKind, extra = ''): string =>
  `- {group: ${k.group}, version: ${k.version}, kind: ${k.kind}, chart: ${CHART}${extra}}\n`;

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = new CRs(kc, APP);
const migrated = new CRs(kc, MIGRATED);
const installByHand = (release: string, namespace: string, greeting: string): Promise<string> =>
  helmByHand('install', release, CHART, '-n', namespace, '--set', `greeting=${greeting}`, '--set', 'service=true');
const greetingOf = async (namespace: string, release: string): Promise<string | undefined> =>
  (await core.readNamespacedConfigMap({ namespace, name: `${release}-settings` })).data?.greeting;
const exists = (read: () => Promise<unknown>): Promise<boolean> =>
  read().then(
    () => true,
    () => false,
  );

describe.concurrent('a release installed by hand and a CR of its name', () => {
  beforeAll(async () => {
    await ensureCrd(kc, APP);
    await ensureCrd(kc, MIGRATED);
  });

  it('is not taken over: nothing upgraded, ReleaseNotOwned says why, and deleting the CR leaves the release deployed', () =>
    withReconcilers('adopt', { watches: watchOf(APP) }, async (ns, h) => {
      await installByHand('web', ns, 'from-admin');
      await apps.create(ns, 'web', { greeting: 'from-tenant', service: false });

      const { cr } = await h.reconcileUntilSettled(`${ns}/web`);
      expect(condition(cr, 'Irreconcilable')).toMatchObject({ status: 'True', reason: 'ReleaseNotOwned' });
      expect(condition(cr, 'Irreconcilable')?.message).toContain(
        `release "web" in namespace "${ns}" (chart tenant-app-0.1.0) was not installed by this operator`,
      );
      expect(condition(cr, 'Irreconcilable')?.message).toContain('set adoptReleases: true on the App watch in watches.yaml');
      await apps.waitForEvent(ns, 'web', 'ReleaseNotOwned');
      expect(cr?.status?.deployedRelease).toBeUndefined();
      expect(await releaseByHand('web', ns)).toStrictEqual({
        revision: 1,
        status: 'deployed',
        values: { greeting: 'from-admin', service: true },
      });
      expect(await greetingOf(ns, 'web')).toBe('from-admin');

      // The CR carries our finalizer: its deletion goes through the uninstall path, which must let go.
      expect(cr?.metadata.finalizers).toContain('helm.sdk.operatorframework.io/uninstall-release');
      await apps.delete(ns, 'web');
      expect((await h.reconcileUntilSettled(`${ns}/web`)).cr).toBeUndefined();
      expect(await releaseByHand('web', ns)).toStrictEqual({
        revision: 1,
        status: 'deployed',
        values: { greeting: 'from-admin', service: true },
      });
      expect(await greetingOf(ns, 'web')).toBe('from-admin');
      expect(await exists(() => core.readNamespacedService({ namespace: ns, name: 'web-svc' }))).toBe(true);
      expect(await exists(() => core.readNamespacedSecret({ namespace: ns, name: 'web-auth' }))).toBe(true);
      expect((await apps.events(ns, 'web')).map((e) => e.reason)).not.toContain('UninstallSuccessful');
    }));

  it("is adopted when the watch sets adoptReleases: true (the migration from operator-sdk): upgraded to the CR's values, labelled ours, uninstalled with the CR", () =>
    withReconcilers('adopt-migrated', { watches: watchOf(MIGRATED, ', adoptReleases: true') }, async (ns, h) => {
      await installByHand('legacy', ns, 'from-operator-sdk');
      await migrated.create(ns, 'legacy', { greeting: 'from-cr' });

      const { cr } = await h.reconcileUntilSettled(`${ns}/legacy`, MIGRATED);
      expect(condition(cr, 'Deployed')?.status).toBe('True');
      expect(cr?.status?.deployedRelease?.revision).toBe(2);
      expect(await releaseByHand('legacy', ns)).toStrictEqual({ revision: 2, status: 'deployed', values: { greeting: 'from-cr' } });
      expect(await greetingOf(ns, 'legacy')).toBe('from-cr');
      const storage = await core.readNamespacedSecret({ namespace: ns, name: storageSecretName('legacy', 2) });
      expect(storage.metadata?.labels?.[RELEASE_LABELS.ownerKind]).toBe('MigratedApp.adoption.example.com');
      const adopting = await migrated.waitForEvent(ns, 'legacy', 'AdoptingRelease');
      expect(adopting.message).toContain('adoptReleases: true');

      await migrated.delete(ns, 'legacy');
      expect((await h.reconcileUntilSettled(`${ns}/legacy`, MIGRATED)).cr).toBeUndefined();
      expect(await releaseByHand('legacy', ns)).toBeUndefined();
    }));
});

describe("a release of operator-sdk's Helm operator, made for this very CR", () => {
  beforeAll(() => ensureCrd(kc, APP));

  it("is adopted without the watch setting when its storage names the CR's UID as owner; a release naming another CR is not", async () => {
    const ns = await createNamespace(kc, 'adopt-sdk');
    /** What operator-sdk's release storage carries (ownerRefSecretClient): a controller reference to its CR. */
    const ownStorageBy = async (release: string, owner: { name: string; uid: string }): Promise<void> => {
      const ref = { apiVersion: `${APP.group}/${APP.version}`, kind: APP.kind, name: owner.name, uid: owner.uid, controller: true };
      await core.patchNamespacedSecret(
        { namespace: ns.name, name: storageSecretName(release, 1), body: { metadata: { ownerReferences: [ref] } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    };
    let h: ReconcilerHarness | undefined;
    try {
      // As operator-sdk left them: the CRs exist, each release made by hand here stands for the one
      // operator-sdk made, and no reconciler of ours ran yet.
      const web = await apps.create(ns.name, 'web', { greeting: 'from-cr' });
      await apps.create(ns.name, 'other', { greeting: 'from-other-cr' });
      await installByHand('web', ns.name, 'from-operator-sdk');
      await installByHand('other', ns.name, 'from-admin');
      const uid = web.metadata.uid ?? '';
      await ownStorageBy('web', { name: 'web', uid });
      // `other`'s release names a CR that exists (so the garbage collector keeps it), but not `other`.
      await ownStorageBy('other', { name: 'web', uid });

      h = await startReconcilers({ watches: watchOf(APP), namespaces: [ns.name] });
      const { cr } = await h.reconcileUntilSettled(`${ns.name}/web`);
      expect(condition(cr, 'Deployed')?.status).toBe('True');
      expect(cr?.status?.deployedRelease?.revision).toBe(2);
      expect(await releaseByHand('web', ns.name)).toMatchObject({ revision: 2, status: 'deployed', values: { greeting: 'from-cr' } });
      expect(await greetingOf(ns.name, 'web')).toBe('from-cr');
      expect((await apps.waitForEvent(ns.name, 'web', 'AdoptingRelease')).message).toContain('name this resource as their owner');

      const other = (await h.reconcileUntilSettled(`${ns.name}/other`)).cr;
      expect(condition(other, 'Irreconcilable')).toMatchObject({ status: 'True', reason: 'ReleaseNotOwned' });
      expect(await releaseByHand('other', ns.name)).toStrictEqual({
        revision: 1,
        status: 'deployed',
        values: { greeting: 'from-admin', service: true },
      });
      expect(other?.status?.deployedRelease).toBeUndefined();
    } finally {
      await h?.stop();
      await ns.remove();
    }
  });
});
