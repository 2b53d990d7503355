/**
 * Issue 47, item 4 (docs/adr/0093, decision 3), on the real control plane with real helm: the
 * canary's approved plan covers a later wave's plans only when their risks are among its own. A
 * new chart changes a ConfigMap and deletes another; one later CR's values made its ConfigMap
 * `immutable`, so its plan also carries a recreate (the API server refuses the change) that the
 * canary's did not. After the platform approves the canary's plan, the covered CR of the later wave
 * upgrades with the rollout's approval, and that one holds for its own: `Approved=False` naming the
 * risk beyond the canary's, its helm history and objects unchanged while the operator looks again.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { planCommand } from '../../../src/cli/plan.js';
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
  startOperator,
  waitForReconciles,
  type CR,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const BEYOND: TestKind = { group: 'rollout-approval-beyond.example.com', version: 'v1', kind: 'Beyond', plural: 'beyonds' };
const NAMES = ['beyond-0', 'beyond-1', 'beyond-2'];
const POLICY: RolloutPolicy = {
  ...DEFAULT_ROLLOUT,
  canary: { count: 1 },
  waveSize: { count: 2 },
  healthTimeoutMs: 15_000,
  stableForMs: 1_000,
};
const ROLLOUT_YAML = '  approval: risky\n  rollout:\n    canary: 1\n    waveSize: 2\n    healthTimeout: 15s\n    stableFor: 1s\n';

/**
 * v1: a settings ConfigMap (immutable when the CR says `frozen: true`) and an extra one; v2 changes
 * the settings and drops the extra: a delete for every CR, and a recreate for a frozen one.
 */
async function writeChart(dir: string, v: 'v1' | 'v2'): Promise<string> {
  const root = path.join(dir, v);
  await mkdir(path.join(root, 'templates'), { recursive: true });
  await writeFile(path.join(root, 'Chart.yaml'), `apiVersion: v2\nname: beyond\nversion: ${v === 'v1' ? '0.1.0' : '0.2.0'}\n`);
  const settings = [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: {{ .Release.Name }}-settings',
    'immutable: {{ .Values.frozen | default false }}',
    'data:',
    `  greeting: ${v === 'v1' ? 'one' : 'two'}`,
    '',
  ].join('\n');
  const extra = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata:\n  kept: "no"\n';
  await writeFile(path.join(root, 'templates', 'settings.yaml'), settings);
  if (v === 'v1') await writeFile(path.join(root, 'templates', 'extra.yaml'), extra);
  return root;
}

const planOf = (cr: CR | undefined): PlanStatus | undefined => (cr?.status as { plan?: PlanStatus } | undefined)?.plan;

describe("a later wave's plan with a risk the canary's plan did not have", () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const crs = new CRs(kc, BEYOND);
  const kubeconfig = inject('kubeconfigPath');
  let dir = '';
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let opNs: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator | undefined;

  const start = async (chart: string): Promise<void> => {
    const watches = `- group: ${BEYOND.group}\n  version: ${BEYOND.version}\n  kind: ${BEYOND.kind}\n  chart: ${chart}\n${ROLLOUT_YAML}`;
    const leaderElection = {
      id: 'rollout-approval-beyond-test',
      namespace: opNs.name,
      // Long: on a loaded machine a 10 s renew deadline was missed and the operator stopped mid-test.
      leaseDurationMs: 60_000,
      renewDeadlineMs: 40_000,
      retryPeriodMs: 5_000,
    };
    op = await startOperator({ watches, namespaces: [ns.name], leaderElection });
  };
  const history = async (release: string): Promise<number[]> =>
    (JSON.parse(await helmByHand('history', release, '-n', ns.name, '-o', 'json')) as { revision: number }[]).map((r) => r.revision);
  const configMap = async (name: string): Promise<Record<string, string> | undefined> => {
    try {
      return (await core.readNamespacedConfigMap({ namespace: ns.name, name })).data;
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
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
  const heldPlan = (release: string, timeoutMs: number): Promise<PlanStatus> =>
    waitFor(
      `${release} to hold its plan for approval`,
      async () => {
        const plan = planOf(await crs.get(ns.name, release));
        return plan?.state === 'AwaitingApproval' ? plan : undefined;
      },
      { timeoutMs },
    );

  beforeAll(async () => {
    await ensureCrd(kc, BEYOND);
    dir = await mkdtemp(path.join(os.tmpdir(), 'rollout-approval-beyond-'));
    ns = await createNamespace(kc, 'rollout-beyond');
    opNs = await createNamespace(kc, 'rollout-beyond-op');
  });
  afterAll(async () => {
    await op?.stop();
    await ns.remove();
    await opNs.remove();
    await rm(dir, { recursive: true, force: true });
  });

  it("holds the later CR whose plan recreates while the canary's approval carries the covered one", async () => {
    const order = waves(
      NAMES.map((n) => ({ key: `${ns.name}/${n}`, labels: {} })),
      POLICY,
    ).map((w) => w.map((m) => m.key.slice(ns.name.length + 1)));
    expect(order.map((w) => w.length)).toStrictEqual([1, 2]);
    const [[canary], [covered, frozen]] = order as [[string], [string, string]];

    await start(await writeChart(dir, 'v1'));
    for (const n of NAMES) await crs.create(ns.name, n, n === frozen ? { frozen: true } : {});
    await Promise.all(NAMES.map((n) => deployed(n, 1)));
    await op?.stop();

    // The new chart: the canary's plan deletes (risky), and it holds for the platform's approval.
    await start(await writeChart(dir, 'v2'));
    const held = await heldPlan(canary, 60_000);
    expect(held).toMatchObject({ fromRevision: 1, chartVersion: '0.2.0', risks: ['delete'] });
    await planCommand({
      verb: 'approve',
      target: `beyond/${canary}`,
      namespace: ns.name,
      kubeconfig,
      operatorNamespace: opNs.name,
      digest: held.digest,
    });

    // The canary upgrades; the covered CR of the next wave goes with its approval.
    const [afterCanary, afterCovered] = await Promise.all([deployed(canary, 2), deployed(covered, 2)]).catch(async (err: unknown) => {
      const states = (await crs.list(ns.name)).map((c) => ({ name: c.metadata.name, status: c.status }));
      throw new Error(`${String(err)}\n${JSON.stringify(states, undefined, 1)}`);
    });
    expect(condition(afterCanary, 'Approved')).toMatchObject({ status: 'True', reason: 'PlanApproved' });
    expect(condition(afterCovered, 'Approved')).toMatchObject({ status: 'True', reason: 'PlanApprovedByRollout' });
    expect(planOf(afterCovered)).toMatchObject({ state: 'Applied', risks: ['delete'] });

    // The frozen one's plan carries a recreate nobody approved: it holds for its own approval.
    const own = await heldPlan(frozen, 120_000);
    expect(own).toMatchObject({ fromRevision: 1, chartVersion: '0.2.0', risks: ['delete', 'recreate'] });
    expect(own.digest).not.toBe(held.digest);
    const approved = condition(await crs.get(ns.name, frozen), 'Approved');
    expect(approved?.status).toBe('False');
    expect(approved?.message).toContain(`approved at ${ns.name}/${canary}, plan ${held.digest}`);
    expect(approved?.message).toContain("covers risks delete, and this plan's recreate needs its own approval");

    // Held: however often the operator looks again, its release and objects stay as they were.
    const since = await activity(op as RunningOperator);
    await waitForReconciles(op as RunningOperator, 'beyond-controller', since, 2);
    expect(await history(frozen)).toStrictEqual([1]);
    expect(await history(covered)).toStrictEqual([1, 2]);
    expect(await history(canary)).toStrictEqual([1, 2]);
    expect(await configMap(`${frozen}-settings`)).toStrictEqual({ greeting: 'one' });
    expect(await configMap(`${frozen}-extra`)).toStrictEqual({ kept: 'no' });
    expect(await configMap(`${covered}-extra`)).toBeUndefined();
    const still = await crs.get(ns.name, frozen);
    expect(condition(still, 'Approved')?.status).toBe('False');
    expect(planOf(still)).toMatchObject({ digest: own.digest, state: 'AwaitingApproval' });
    expect(still?.status?.deployedRelease?.revision).toBe(1);
  }, 600_000);
});
