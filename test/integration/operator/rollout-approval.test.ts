/**
 * Issue 47, item 4 (docs/adr/0093), on the real control plane with real helm: under a watch with
 * both a rollout and `approval: risky`, a new chart that deletes an object stops at the canary,
 * whose plan `rollout status` shows, and no release moves until the platform approves that plan;
 * then the canary upgrades and the later wave goes on under the rollout's health gate with the
 * canary's approval (its plans carry no risk beyond it). Item 5: a CR in sync on the new chart
 * plans nothing and runs no helm.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { planCommand } from '../../../src/cli/plan.js';
import { rolloutCommand } from '../../../src/cli/rollout.js';
import { DEFAULT_ROLLOUT, type RolloutPolicy } from '../../../src/config/rollout-policy.js';
import { isStatus } from '../../../src/k8s/errors.js';
import type { PlanStatus } from '../../../src/reconciler/plan/plan-status.js';
import { waves } from '../../../src/reconciler/rollout/rollout-gate.js';
import { helmByHand } from '../../support/helm.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  condition,
  CRs,
  ensureCrd,
  helmExecutionsSince,
  startOperator,
  waitForReconciles,
  type CR,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const GATED: TestKind = { group: 'rollout-approval.example.com', version: 'v1', kind: 'Gated', plural: 'gateds' };
/** A canary and one wave of two: the canary's hold, and a later wave going with its approval. */
const NAMES = ['gated-0', 'gated-1', 'gated-2'];
const POLICY: RolloutPolicy = {
  ...DEFAULT_ROLLOUT,
  canary: { count: 1 },
  waveSize: { count: 2 },
  healthTimeoutMs: 15_000,
  stableForMs: 1_000,
};
const ROLLOUT_YAML = '  approval: risky\n  rollout:\n    canary: 1\n    waveSize: 2\n    healthTimeout: 15s\n    stableFor: 1s\n';

/** v1: two ConfigMaps; v2 changes one and drops the other, a deletion `approval: risky` holds. */
async function writeChart(dir: string, v: 'v1' | 'v2'): Promise<string> {
  const root = path.join(dir, v);
  await mkdir(path.join(root, 'templates'), { recursive: true });
  await writeFile(path.join(root, 'Chart.yaml'), `apiVersion: v2\nname: gated\nversion: ${v === 'v1' ? '0.1.0' : '0.2.0'}\n`);
  const settings = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  greeting: ${v === 'v1' ? 'one' : 'two'}\n`;
  const extra = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata:\n  kept: "no"\n';
  await writeFile(path.join(root, 'templates', 'settings.yaml'), settings);
  if (v === 'v1') await writeFile(path.join(root, 'templates', 'extra.yaml'), extra);
  return root;
}

const planOf = (cr: CR | undefined): PlanStatus | undefined => (cr?.status as { plan?: PlanStatus } | undefined)?.plan;
const fleetOf = (cr: CR | undefined): string | undefined =>
  (cr?.status as { rollout?: { fleetRevision?: string } } | undefined)?.rollout?.fleetRevision;

describe('a rollout whose canary waits for the approval of its plan', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const crs = new CRs(kc, GATED);
  const kubeconfig = inject('kubeconfigPath');
  let dir = '';
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let opNs: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator | undefined;

  const start = async (chart: string): Promise<void> => {
    const watches = `- group: ${GATED.group}\n  version: ${GATED.version}\n  kind: ${GATED.kind}\n  chart: ${chart}\n${ROLLOUT_YAML}`;
    const leaderElection = {
      id: 'rollout-approval-test',
      namespace: opNs.name,
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    };
    op = await startOperator({ watches, namespaces: [ns.name], leaderElection });
  };
  const history = async (release: string): Promise<number[]> =>
    (JSON.parse(await helmByHand('history', release, '-n', ns.name, '-o', 'json')) as { revision: number }[]).map((r) => r.revision);
  const histories = async (): Promise<number[][]> => Promise.all(NAMES.map(history));
  const extraExists = async (release: string): Promise<boolean> => {
    try {
      await core.readNamespacedConfigMap({ namespace: ns.name, name: `${release}-extra` });
      return true;
    } catch (err) {
      if (isStatus(err, 404)) return false;
      throw err;
    }
  };
  const deployed = (release: string, revision: number): Promise<CR> =>
    waitFor(
      `${release} to deploy revision ${revision}, Ready`,
      async () => {
        const cr = await crs.get(ns.name, release);
        return cr?.status?.deployedRelease?.revision === revision && condition(cr, 'Ready')?.status === 'True' ? cr : undefined;
      },
      { timeoutMs: 180_000 },
    );
  const status = (): Promise<string> =>
    rolloutCommand({
      verb: 'status',
      kind: `${GATED.kind}.${GATED.group}`,
      namespace: ns.name,
      operatorNamespace: opNs.name,
      kubeconfig,
      helmBinary: inject('helmBin'),
    });

  beforeAll(async () => {
    await ensureCrd(kc, GATED);
    dir = await mkdtemp(path.join(os.tmpdir(), 'rollout-approval-'));
    ns = await createNamespace(kc, 'rollout-approval');
    opNs = await createNamespace(kc, 'rollout-approval-op');
  });
  afterAll(async () => {
    await op?.stop();
    await ns.remove();
    await opNs.remove();
    await rm(dir, { recursive: true, force: true });
  });

  it("holds the canary with its plan in rollout status, moves nothing until it is approved, then the later wave goes on with the canary's approval; a CR in sync plans nothing", async () => {
    const order = waves(
      NAMES.map((n) => ({ key: `${ns.name}/${n}`, labels: {} })),
      POLICY,
    ).map((w) => w.map((m) => m.key.slice(ns.name.length + 1)));
    expect(order).toStrictEqual([['gated-0'], ['gated-1', 'gated-2']]);
    const [canary, ...later] = NAMES as [string, ...string[]];

    await start(await writeChart(dir, 'v1'));
    for (const n of NAMES) await crs.create(ns.name, n, {});
    const v1 = await Promise.all(NAMES.map((n) => deployed(n, 1)));
    const oldFleet = fleetOf(v1[0]);
    await op?.stop();

    // The new chart: the canary plans, and holds for the platform's approval of the deletion.
    await start(await writeChart(dir, 'v2'));
    const held = await waitFor(`${canary} to hold its plan for approval`, async () => {
      const plan = planOf(await crs.get(ns.name, canary));
      return plan?.state === 'AwaitingApproval' ? plan : undefined;
    });
    expect(held).toMatchObject({ fromRevision: 1, chartVersion: '0.2.0', counts: { change: 1, delete: 1 }, risks: ['delete'] });
    for (const n of later)
      await crs.waitForCondition(ns.name, n, { type: 'Rollout', status: 'False', reason: 'RolloutWaiting' }, { timeoutMs: 60_000 });

    // Held: however often the operator looks, no release moves and no object goes.
    const since = await activity(op as RunningOperator);
    await waitForReconciles(op as RunningOperator, 'gated-controller', since, 2);
    expect(await histories()).toStrictEqual([[1], [1], [1]]);
    for (const n of NAMES) expect(await extraExists(n)).toBe(true);

    const target = await newFleet();
    const approveStep = `a platform admin approves it with: helm-operator plan approve gated/${canary} -n ${ns.name} --digest ${held.digest}`;
    expect((await status()).split('\n')).toStrictEqual([
      `rollout of ${GATED.kind}.${GATED.group}: in progress; 1 plan awaits approval`,
      '3 CRs by fleet revision:',
      `  ${oldFleet}  chart 0.1.0: 3`,
      `plan awaiting approval: ${ns.name}/${canary}: ${held.digest} (revision 1 to chart 0.2.0: 1 to change, 1 to delete; risky: delete)`,
      `  read it: helm-operator plan show gated/${canary} -n ${ns.name}`,
      `  approve: ${approveStep}`,
      `waiting: 2 (first: ${ns.name}/${later[0]}: waiting for wave 1 of 2 (0 of 1 healthy on fleet revision ${target}); this CR is in wave 2)`,
      'NAMESPACE/NAME  CHART  FLEET  READY  ROLLOUT  SEAL',
      `${ns.name}/${canary}  0.1.0  ${oldFleet}  True  PlanAwaitingApproval  sealed`,
      ...later.map((n) => `${ns.name}/${n}  0.1.0  ${oldFleet}  True  RolloutWaiting  sealed`),
    ]);

    // The platform approves the canary's plan: it upgrades, then the later wave with that approval.
    const approve = { verb: 'approve' as const, target: `gated/${canary}`, namespace: ns.name, kubeconfig, operatorNamespace: opNs.name };
    await planCommand({ ...approve, digest: held.digest });
    const after = await Promise.all(NAMES.map((n) => deployed(n, 2))).catch(async (err: unknown) => {
      // What each CR says when one does not converge: its conditions and rollout status.
      const states = (await crs.list(ns.name)).map((c) => ({ name: c.metadata.name, status: c.status }));
      throw new Error(`${String(err)}\n${JSON.stringify(states, undefined, 1)}`);
    });
    expect(condition(after[0], 'Approved')).toMatchObject({ status: 'True', reason: 'PlanApproved' });
    for (const cr of after.slice(1)) {
      expect(condition(cr, 'Approved')).toMatchObject({ status: 'True', reason: 'PlanApprovedByRollout' });
      expect(condition(cr, 'Approved')?.message).toContain(`approved at ${ns.name}/${canary}, plan ${held.digest}`);
      expect(planOf(cr)).toMatchObject({ state: 'Applied', risks: ['delete'] });
    }
    expect(await histories()).toStrictEqual([
      [1, 2],
      [1, 2],
      [1, 2],
    ]);
    for (const n of NAMES) expect(await extraExists(n)).toBe(false);
    await waitFor('the rollout to complete', async () =>
      (await status()).startsWith(`rollout of ${GATED.kind}.${GATED.group}: complete\n`) ? true : undefined,
    );

    // Item 5: a CR in sync on the new chart makes no plan and runs no helm.
    const last = later[later.length - 1] as string;
    const planBefore = planOf(await crs.get(ns.name, last));
    const idle = await activity(op as RunningOperator);
    await crs.patch(ns.name, last, { metadata: { annotations: { touched: 'yes' } } });
    await waitForReconciles(op as RunningOperator, 'gated-controller', idle, 1);
    expect(await helmExecutionsSince(op as RunningOperator, idle)).toBe(0);
    expect(planOf(await crs.get(ns.name, last))).toStrictEqual(planBefore);
  }, 600_000);

  /** The fleet revision the rollout moves to, as the later wave's Rollout condition names it. */
  async function newFleet(): Promise<string> {
    const message = condition(await crs.get(ns.name, NAMES[1] as string), 'Rollout')?.message ?? '';
    return /on fleet revision (\S+)\)/.exec(message)?.[1] ?? '(none)';
  }
});
