import { AppsV1Api, CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, NGINX, NGINX_CHART, startOperator, type RunningOperator } from '../../support/operator.js';

/**
 * CRs of one namespace deleted and created again under the same names (issue 28): every deletion
 * must take its release along, however the uninstall was batched, and no CR may be reported
 * uninstalled while its release stays. Real apiserver, real helm, the sample chart.
 */
describe('CRs deleted and created again under the same names', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NGINX);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'churn');
    op = await startOperator({
      watches: `- group: example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: ${NGINX_CHART}\n`,
      namespaces: [ns.name],
      helmBin: inject('helmBin'),
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  const names = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

  /** Release Secrets (helm's storage) of the releases named `prefix…` left in the namespace. */
  const releasesLeft = async (prefix: string): Promise<string[]> =>
    (await core.listNamespacedSecret({ namespace: ns.name, labelSelector: 'owner=helm' })).items
      .map((s) => s.metadata?.labels?.name ?? '?')
      .filter((name) => name.startsWith(prefix))
      .sort();

  /** What the releases named `prefix…` created (the chart names its objects `<release>-nginx`), still in the namespace. */
  const objectsLeft = async (prefix: string): Promise<string[]> =>
    [
      ...(await apps.listNamespacedDeployment({ namespace: ns.name })).items.map((d) => `Deployment/${d.metadata?.name}`),
      ...(await core.listNamespacedService({ namespace: ns.name })).items.map((s) => `Service/${s.metadata?.name}`),
    ].filter((o) => o.split('/')[1]?.startsWith(prefix));

  const uninstallEvents = async (): Promise<CoreV1Event[]> =>
    (await core.listNamespacedEvent({ namespace: ns.name })).items.filter((e) => e.reason === 'UninstallSuccessful');

  async function createAll(crNames: readonly string[]): Promise<Map<string, string>> {
    const uids = new Map<string, string>();
    for (const name of crNames) uids.set(name, (await crs.create(ns.name, name, { replicaCount: 1 })).metadata.uid ?? '');
    for (const name of crNames) await crs.waitForCondition(ns.name, name, { type: 'Deployed', status: 'True' });
    return uids;
  }

  /**
   * Once every CR named `prefix…` is gone its release must be gone already: the finalizer comes off
   * only after the uninstall.
   */
  async function expectNothingLeft(prefix: string, cycle: string): Promise<void> {
    const crsLeft = async (): Promise<number> => (await crs.list(ns.name)).filter((cr) => cr.metadata.name.startsWith(prefix)).length;
    await waitFor(`every CR of ${cycle} to be gone`, async () => (await crsLeft()) === 0, { timeoutMs: 120_000 });
    expect(await releasesLeft(prefix), `releases left after ${cycle}`).toEqual([]);
    // helm deletes the objects before the release record, but a Deployment may take a moment to go.
    const none = async (): Promise<string[] | undefined> => {
      const now = await objectsLeft(prefix);
      return now.length === 0 ? now : undefined;
    };
    const left = await waitFor(`the release objects of ${cycle} to be gone`, none, { timeoutMs: 30_000 }).catch(async () =>
      objectsLeft(prefix),
    );
    expect(left, `objects left after ${cycle}`).toEqual([]);
  }

  it('leaves no release and no object behind, cycle after cycle of deleting all together', async () => {
    const crNames = names('c', 12);
    for (let cycle = 1; cycle <= 3; cycle++) {
      await createAll(crNames);
      await crs.deleteAll(ns.name);
      await expectNothingLeft('c', `cycle ${cycle}`);
    }
  });

  it('uninstalls each release when CRs deleted together come back and are deleted one at a time', async () => {
    const crNames = names('s', 6);
    await createAll(crNames);
    await crs.deleteAll(ns.name);
    await expectNothingLeft('s', 'the batched deletion');
    const again = await createAll(crNames);
    for (const name of crNames) {
      await crs.delete(ns.name, name);
      await crs.waitForGone(ns.name, name);
      expect(await releasesLeft(name), `release ${name} after its CR is gone`).not.toContain(name);
    }
    await expectNothingLeft('s', 'the one-by-one deletion');
    // Each instance deleted on its own was reported uninstalled by its own uninstall (events are
    // written in the background, after the finalizer comes off).
    const reported = await waitFor(
      'an UninstallSuccessful event about each CR deleted one at a time',
      async () => {
        const uids = new Set((await uninstallEvents()).map((e) => e.involvedObject.uid));
        return [...again.values()].every((uid) => uids.has(uid)) ? uids : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(reported.size).toBeGreaterThanOrEqual(again.size);
  });
});
