/**
 * Issue 49 item 5 (docs/adr/0076): helm's own waits never hang a reconcile. The chart's `crds/`
 * creates a CRD no controller serves, and its templates render two objects of it. helm 4's
 * `--wait=watcher` (kstatus) waits on such objects until `--timeout` as soon as their status is
 * one kstatus cannot call Current: an Argo Rollout's string `observedGeneration` (Unknown, helm
 * #32615) or a `Ready=False` kept by design (InProgress). The operator runs helm with no `--wait`
 * (helm 4's `hookOnly`), so install and upgrade end as soon as helm applied, and its own readiness
 * reports those objects in `Ready`. helm's timeout here is 10 minutes and every wait of the test is
 * far shorter: a helm that waited would fail the test, not slow it.
 */
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { helmByHand } from '../../support/helm.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, startOperator, type RunningOperator, type TestKind } from '../../support/operator.js';

const CHART = fixtureChart('unready-crs');
const KIND: TestKind = { group: 'waits.example.com', version: 'v1', kind: 'Unready', plural: 'unreadies' };
/** The CRD of the chart's own `crds/`: no controller ever writes its objects' status. */
const GIZMOS = { group: 'unready.example.com', version: 'v1', plural: 'gizmos' };
const GIZMO_CRD = 'gizmos.unready.example.com';
const HELM_TIMEOUT_MS = 600_000;
/** Each wait of the test: far below helm's timeout, above an install's or upgrade's time on a loaded machine. */
const WAIT = { timeoutMs: 90_000 };
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

describe("helm's waits never hang a reconcile", () => {
  const kc = testKubeConfig();
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const objects = kc.makeApiClient(CustomObjectsApi);
  const kind = new CRs(kc, KIND);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  const gizmo = async (name: string): Promise<{ status?: Record<string, unknown> } | undefined> => {
    try {
      return (await objects.getNamespacedCustomObject({ ...GIZMOS, namespace: ns.name, name })) as { status?: Record<string, unknown> };
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  };
  /** Stands in for a controller that writes a status of its own. */
  const writeStatus = (name: string, status: Record<string, unknown>) =>
    objects.patchNamespacedCustomObjectStatus(
      { ...GIZMOS, namespace: ns.name, name, body: { status }, fieldManager: 'gizmo-controller' },
      mergePatch,
    );
  const history = async (release: string) =>
    (JSON.parse(await helmByHand('history', release, '-n', ns.name, '-o', 'json')) as { revision: number; status: string }[]).map(
      ({ revision, status }) => ({ revision, status }),
    );

  beforeAll(async () => {
    await ensureCrd(kc, KIND);
    // The chart's crds/ creates it at install: no informer or discovery knows the kind before.
    await ext.deleteCustomResourceDefinition({ name: GIZMO_CRD }).catch(() => undefined);
    await waitFor(`CRD ${GIZMO_CRD} to be gone`, async () => {
      try {
        await ext.readCustomResourceDefinition({ name: GIZMO_CRD });
        return false;
      } catch (err) {
        return isStatus(err, 404);
      }
    });
    ns = await createNamespace(kc, 'helm-waits');
    op = await startOperator({
      watches: `- {group: ${KIND.group}, version: v1, kind: ${KIND.kind}, chart: ${CHART}}`,
      namespaces: [ns.name],
      helmTimeoutMs: HELM_TIMEOUT_MS,
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
    await ext.deleteCustomResourceDefinition({ name: GIZMO_CRD }).catch(() => undefined);
  });

  it('installs a chart whose crds/ CRD is new and whose custom resources stay without status: deployed, and Ready', async () => {
    await kind.create(ns.name, 'fresh', { greeting: 'one' });
    const cr = await kind.waitForCondition(ns.name, 'fresh', { type: 'Deployed', status: 'True' }, WAIT);
    expect(cr.status?.deployedRelease?.revision).toBe(1);
    expect(await history('fresh')).toStrictEqual([{ revision: 1, status: 'deployed' }]);
    for (const name of ['fresh-rollout', 'fresh-secret']) expect((await gizmo(name))?.status).toBeUndefined();
    const ready = await kind.waitForCondition(ns.name, 'fresh', { type: 'Ready', status: 'True' }, WAIT);
    expect(condition(ready, 'Ready')?.message).toContain('3/3');
  });

  it('upgrades past custom resources kstatus would never call Current, in one revision; the operator reports them in Ready instead of waiting', async () => {
    // An Argo Rollout's status (observedGeneration a string: kstatus Unknown), and an ExternalSecret's
    // Ready=False kept by design (kstatus InProgress). helm 4.1.4 --wait=watcher holds an upgrade
    // over either until --timeout (measured: docs/adr/0076).
    await writeStatus('fresh-rollout', { observedGeneration: '1', phase: 'Healthy' });
    await writeStatus('fresh-secret', {
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'SecretSyncedError',
          message: 'key has no version',
          lastTransitionTime: new Date().toISOString(),
        },
      ],
    });

    await kind.patch(ns.name, 'fresh', { spec: { greeting: 'two' } });
    const cr = await waitFor(
      'fresh to deploy revision 2',
      async () => {
        const c = await kind.get(ns.name, 'fresh');
        return c?.status?.deployedRelease?.revision === 2 &&
          condition(c, 'Deployed')?.status === 'True' &&
          c.status.observedGeneration === c.metadata.generation
          ? c
          : undefined;
      },
      WAIT,
    );
    expect(condition(cr, 'ReleaseFailed')?.status).toBe('False');
    expect((await core.readNamespacedConfigMap({ namespace: ns.name, name: 'fresh-settings' })).data?.greeting).toBe('two');
    expect(await history('fresh')).toStrictEqual([
      { revision: 1, status: 'superseded' },
      { revision: 2, status: 'deployed' },
    ]);
    // The status helm's watcher could not read is still there: nothing waited for it to change.
    expect((await gizmo('fresh-rollout'))?.status?.observedGeneration).toBe('1');
    // The operator's own readiness reads a Ready condition it knows, and reports it.
    const notReady = await kind.waitForCondition(ns.name, 'fresh', { type: 'Ready', status: 'False' }, WAIT);
    expect(condition(notReady, 'Ready')?.message).toContain('Gizmo fresh-secret not ready: key has no version');
    expect(condition(notReady, 'Deployed')?.status).toBe('True');
  });
});
