import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { denyInNamespace, type DenyingPolicy } from '../../support/admission.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { activity, condition, CRs, ensureCrd, fixtureChart, startOperator, waitForReconciles, type RunningOperator, type TestKind } from '../../support/operator.js';

const ZOO: TestKind = { group: 'drift.example.com', version: 'v1', kind: 'Zoo', plural: 'zoos' };
const PERIOD = { 'helm.sdk.operatorframework.io/reconcile-period': '1s' };

/**
 * Exhausted drift repair retries mean it: a deleted ConfigMap whose recreation an admission policy
 * refuses is retried with backoff five times, then one RetriesExhausted event and condition say
 * so, and reconciles every second neither retry nor warn again (they used to, every period, with
 * a count that kept growing). An upgrade starts again.
 */
describe('the drift repair budget', () => {
  const kc = testKubeConfig();
  const zoos = new CRs(kc, ZOO);
  const core = kc.makeApiClient(CoreV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;
  let policy: DenyingPolicy | undefined;

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
    await zoos.create(ns.name, 'locked', {}, PERIOD);
    await zoos.waitForCondition(ns.name, 'locked', { type: 'Ready', status: 'True' });
    // Installed: from now on nothing may create the ConfigMap again.
    policy = await denyInNamespace(kc, ns.name, `zoo-create-${Date.now().toString(36)}`, {
      resources: ['configmaps'],
      operations: ['CREATE'],
      expression: "object.metadata.name != 'locked-config'",
      message: 'locked-config may not be created again',
    });
  });
  afterAll(async () => {
    await op.stop();
    await policy?.remove();
    await ns.remove();
  });

  it('retries a refused recreation five times, says so once, then stays quiet over reconcile periods', async () => {
    // The policy takes a moment to be enforced: delete until a recreation is refused.
    await waitFor(
      'a recreation to be refused',
      async () => {
        await deleteConfigMap();
        return condition(await zoos.get(ns.name, 'locked'), 'Drifted')?.reason === 'DriftRepairFailed';
      },
      { timeoutMs: 60_000, intervalMs: 1_000 },
    );
    const stopped = await zoos.waitForCondition(ns.name, 'locked', { type: 'Drifted', status: 'True', reason: 'RetriesExhausted' }, { timeoutMs: 90_000 });
    expect(condition(stopped, 'Drifted')?.message).toMatch(/^Drift repair of revision 1 failed 5 times; it stays stopped until an upgrade or a spec change: ConfigMap .*locked-config may not be created again/);
    expect(stopped.status).toMatchObject({ driftRepairFailures: { revision: 1, count: 5 } });
    const exhausted = await zoos.waitForEvent(ns.name, 'locked', 'RetriesExhausted');
    expect(exhausted.type).toBe('Warning');
    const failed = await eventCount('DriftRepairFailed');
    expect(failed).toBe(5);

    // Reconciles every second: none retries the recreation, counts or warns again.
    await waitForReconciles(op, 'zoo-controller', await activity(op), 5);
    expect({ failed: await eventCount('DriftRepairFailed'), exhausted: await eventCount('RetriesExhausted') }).toEqual({ failed, exhausted: 1 });
    const later = await zoos.get(ns.name, 'locked');
    expect(later?.status).toMatchObject({ driftRepairFailures: { revision: 1, count: 5 } });
    expect(condition(later, 'Drifted')?.message).toContain('failed 5 times');
    expect(condition(later, 'Deployed')?.status).toBe('True');

    // Stopped means stopped: with the policy gone, the ConfigMap is still not recreated by drift repair.
    await policy?.unbind();
    await waitForReconciles(op, 'zoo-controller', await activity(op), 3);
    expect(await configMapExists()).toBe(false);
  });

  it('starts again with an upgrade: the new revision restores the object and clears the record', async () => {
    await zoos.patch(ns.name, 'locked', { spec: { greeting: 'again' } });
    const upgraded = await waitFor('revision 2 without drift', async () => {
      const c = await zoos.get(ns.name, 'locked');
      return c?.status?.deployedRelease?.revision === 2 && condition(c, 'Drifted') === undefined ? c : undefined;
    });
    expect(upgraded.status).not.toHaveProperty('driftRepairFailures');
    expect(await configMapExists()).toBe(true);
  });
});
