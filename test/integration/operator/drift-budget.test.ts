import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { denyInNamespace, type DenyingPolicy } from '../../support/admission.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  condition,
  CRs,
  ensureCrd,
  fixtureChart,
  startOperator,
  waitForReconciles,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const ZOO: TestKind = { group: 'drift.example.com', version: 'v1', kind: 'Zoo', plural: 'zoos' };
const PERIOD = { 'helm.sdk.operatorframework.io/reconcile-period': '1s' };

/**
 * A repair the API server refuses (here an admission policy) is reported and retried with backoff,
 * without blocking the release: its spec changes still upgrade. Exhausted retries mean it: a
 * deleted ConfigMap whose recreation is refused is retried with backoff five times, then one
 * RetriesExhausted event and condition say so, and reconciles every second neither retry nor warn
 * again (they used to, every period, with a count that kept growing). An upgrade starts again.
 */
describe('drift repair the API server refuses, and its retry budget', () => {
  const kc = testKubeConfig();
  const zoos = new CRs(kc, ZOO);
  const core = kc.makeApiClient(CoreV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;
  /** The admission policies the tests made, removed after them all. */
  const policies: DenyingPolicy[] = [];

  /** Events of one reason, counting each aggregated repeat. */
  const eventCount = async (reason: string): Promise<number> =>
    (await zoos.events(ns.name, 'locked')).filter((e) => e.reason === reason).reduce((n, e) => n + (e.count ?? 1), 0);
  const configMapExists = async (): Promise<boolean> => {
    try {
      await core.readNamespacedConfigMap({ namespace: ns.name, name: 'locked-config' });
      return true;
    } catch (err) {
      if (isStatus(err, 404)) return false;
      throw err;
    }
  };
  const deleteConfigMap = async (): Promise<void> => {
    await core.deleteNamespacedConfigMap({ namespace: ns.name, name: 'locked-config' }).catch((err: unknown) => {
      if (!isStatus(err, 404)) throw err;
    });
  };

  beforeAll(async () => {
    await ensureCrd(kc, ZOO);
    ns = await createNamespace(kc, 'drift-budget');
    op = await startOperator({
      watches: `- {group: ${ZOO.group}, version: ${ZOO.version}, kind: ${ZOO.kind}, chart: ${fixtureChart('drift-zoo')}}\n`,
      namespaces: [ns.name],
      // Its CRs ask for 1s resyncs; the default floor (30s) would raise them.
      annotationPeriodFloorMs: 1_000,
    });
  });
  afterAll(async () => {
    await op.stop();
    for (const policy of policies) await policy.remove();
    await ns.remove();
  });

  it('retries a refused recreation five times, says so once, then stays quiet over reconcile periods', async () => {
    await zoos.create(ns.name, 'locked', {}, PERIOD);
    await zoos.waitForCondition(ns.name, 'locked', { type: 'Ready', status: 'True' });
    // Installed: from now on nothing may create the ConfigMap again.
    const policy = await denyInNamespace(kc, ns.name, `zoo-create-${Date.now().toString(36)}`, {
      resources: ['configmaps'],
      operations: ['CREATE'],
      expression: "object.metadata.name != 'locked-config'",
      message: 'locked-config may not be created again',
    });
    policies.push(policy);
    // The policy takes a moment to be enforced: delete until a recreation is refused.
    await waitFor(
      'a recreation to be refused',
      async () => {
        await deleteConfigMap();
        return condition(await zoos.get(ns.name, 'locked'), 'Drifted')?.reason === 'DriftRepairFailed';
      },
      { timeoutMs: 60_000, intervalMs: 1_000 },
    );
    const stopped = await zoos.waitForCondition(
      ns.name,
      'locked',
      { type: 'Drifted', status: 'True', reason: 'RetriesExhausted' },
      { timeoutMs: 90_000 },
    );
    expect(condition(stopped, 'Drifted')?.message).toMatch(
      /^Drift repair of revision 1 failed 5 times; it stays stopped until an upgrade or a spec change: ConfigMap .*locked-config may not be created again/,
    );
    expect(stopped.status).toMatchObject({ driftRepairFailures: { revision: 1, count: 5 } });
    const exhausted = await zoos.waitForEvent(ns.name, 'locked', 'RetriesExhausted');
    expect(exhausted.type).toBe('Warning');
    const failed = await eventCount('DriftRepairFailed');
    expect(failed).toBe(5);

    // Reconciles every second: none retries the recreation, counts or warns again.
    await waitForReconciles(op, 'zoo-controller', await activity(op), 5);
    expect({ failed: await eventCount('DriftRepairFailed'), exhausted: await eventCount('RetriesExhausted') }).toEqual({
      failed,
      exhausted: 1,
    });
    const later = await zoos.get(ns.name, 'locked');
    expect(later?.status).toMatchObject({ driftRepairFailures: { revision: 1, count: 5 } });
    expect(condition(later, 'Drifted')?.message).toContain('failed 5 times');
    expect(condition(later, 'Deployed')?.status).toBe('True');

    // Stopped means stopped: with the policy gone, the ConfigMap is still not recreated by drift repair.
    await policy.unbind();
    await waitForReconciles(op, 'zoo-controller', await activity(op), 3);
    expect(await configMapExists()).toBe(false);
  });

  // Needs the CR the test above left stopped: one stage of the same story, in order.
  it('starts again with an upgrade: the new revision restores the object and clears the record', async () => {
    await zoos.patch(ns.name, 'locked', { spec: { greeting: 'again' } });
    const upgraded = await waitFor('revision 2 without drift', async () => {
      const c = await zoos.get(ns.name, 'locked');
      return c?.status?.deployedRelease?.revision === 2 && condition(c, 'Drifted') === undefined ? c : undefined;
    });
    expect(upgraded.status).not.toHaveProperty('driftRepairFailures');
    expect(await configMapExists()).toBe(true);
  });

  it('reports DriftRepairFailed with the object and the API message, backs off, stops, and still upgrades', async () => {
    await zoos.create(ns.name, 'frozen', {});
    await zoos.waitForCondition(ns.name, 'frozen', { type: 'Ready', status: 'True' });
    // Once a ConfigMap is in staging, nothing may move it back to production.
    policies.push(
      await denyInNamespace(kc, ns.name, `zoo-mode-${Date.now().toString(36)}`, {
        resources: ['configmaps'],
        operations: ['UPDATE'],
        expression:
          "!(has(oldObject.data) && oldObject.data[?'mode'].orValue('') == 'staging' && has(object.data) && object.data[?'mode'].orValue('') == 'production')",
        message: 'a staging ConfigMap may not be promoted back to production',
      }),
    );
    // The policy takes a moment to be enforced: edit until an attempt to restore production is refused.
    await waitFor(
      'the edit to be refused back to production',
      async () => {
        await core.patchNamespacedConfigMap(
          { namespace: ns.name, name: 'frozen-config', body: { data: { mode: 'staging' } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        const cr = await zoos.get(ns.name, 'frozen');
        return condition(cr, 'Drifted')?.reason === 'DriftRepairFailed' ? cr : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1_000 },
    );
    const cr = await zoos.get(ns.name, 'frozen');
    const drifted = condition(cr, 'Drifted');
    expect(drifted?.status).toBe('True');
    expect(drifted?.message).toContain(`ConfigMap ${ns.name}/frozen-config`);
    expect(drifted?.message).toContain('a staging ConfigMap may not be promoted back to production');
    expect(condition(cr, 'Deployed')?.status).toBe('True');
    expect(condition(cr, 'Irreconcilable')?.status).toBe('False');
    const event = await zoos.waitForEvent(ns.name, 'frozen', 'DriftRepairFailed');
    expect(event.type).toBe('Warning');
    expect(event.message).toContain('may not be promoted back to production');

    // Retries back off and stop (0.2 + 0.4 + 0.8 + 1.6 s between the first five attempts at the tests' --min-retry-delay; 1 + 2 + 4 + 8 s in production).
    const stalled = await zoos.waitForCondition(
      ns.name,
      'frozen',
      { type: 'Drifted', status: 'True', reason: 'RetriesExhausted' },
      { timeoutMs: 90_000 },
    );
    expect(condition(stalled, 'Drifted')?.message).toContain(`ConfigMap ${ns.name}/frozen-config`);

    // A spec change still upgrades, and the new revision starts with no drift.
    await zoos.patch(ns.name, 'frozen', { spec: { mode: 'staging' } });
    const upgraded = await waitFor('revision 2', async () => {
      const c = await zoos.get(ns.name, 'frozen');
      return c?.status?.deployedRelease?.revision === 2 ? c : undefined;
    });
    expect(condition(upgraded, 'Drifted')).toBeUndefined();
    expect(condition(upgraded, 'Deployed')).toMatchObject({ status: 'True', reason: 'UpgradeSuccessful' });
  });
});
