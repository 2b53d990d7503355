/**
 * Waved rollouts of a new chart (issue 35, docs/rollouts.md), with real helm on the real control
 * plane: a chart whose Deployment never becomes ready (or whose hook fails) is halted at the canary
 * while every other CR keeps serving the old chart; a fixed chart then goes in waves, each after
 * the previous one is healthy, through a SIGKILLed leader and a new one, and helm's release history
 * shows every release upgraded exactly once per chart it took.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_ROLLOUT, type RolloutPolicy } from '../../../src/config/rollout-policy.js';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { waves, type Member } from '../../../src/reconciler/rollout-gate.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, startOperator, type CR, type RunningOperator, type TestKind } from '../../support/operator.js';
import { startOperatorProcess, waitForExit, type OperatorProcess } from '../../support/process.js';

const FLEET: TestKind = { group: 'rollout.example.com', version: 'v1', kind: 'Fleet', plural: 'fleets' };
/** 60 by the issue; fewer for a quick look (ROLLOUT_TEST_CRS=12). */
const COUNT = Number(process.env.ROLLOUT_TEST_CRS ?? 60);
const WAVE = Math.max(2, Math.round(COUNT / 3));
const POLICY: RolloutPolicy = { ...DEFAULT_ROLLOUT, canary: { count: 1 }, waveSize: { count: WAVE }, healthTimeoutMs: 15_000, stableForMs: 2_000 };
const ROLLOUT_YAML = `  rollout:\n    canary: 1\n    waveSize: ${WAVE}\n    healthTimeout: 15s\n    stableFor: 2s\n`;
const WAIT_MS = 60_000 + COUNT * 6_000;

type Version = 'v1' | 'v2-unready' | 'v2-hook' | 'v3';
const CHART_VERSION: Record<Version, string> = { 'v1': '0.1.0', 'v2-unready': '0.2.0', 'v2-hook': '0.2.0', 'v3': '0.3.0' };

/** One Deployment; v2-unready pins it to a node that does not exist, v2-hook adds a pre-upgrade hook the API server refuses. */
async function writeChart(dir: string, v: Version): Promise<string> {
  const root = path.join(dir, v);
  await mkdir(path.join(root, 'templates'), { recursive: true });
  await writeFile(path.join(root, 'Chart.yaml'), `apiVersion: v2\nname: fleet\nversion: ${CHART_VERSION[v]}\n`);
  const pin = v === 'v2-unready' ? '      nodeSelector:\n        rollout.example.com/no-such-node: "true"\n' : '';
  await writeFile(
    path.join(root, 'templates', 'deployment.yaml'),
    `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n  labels: { chart: "${CHART_VERSION[v]}" }\nspec:\n  replicas: 1\n  selector: { matchLabels: { app: {{ .Release.Name }} } }\n  template:\n    metadata: { labels: { app: {{ .Release.Name }} } }\n    spec:\n${pin}      containers:\n        - { name: app, image: "busybox:1.36", command: [sleep, infinity] }\n`,
  );
  if (v === 'v2-hook') {
    await writeFile(
      path.join(root, 'templates', 'hook.yaml'),
      'apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate\n  annotations: { helm.sh/hook: pre-upgrade }\nspec:\n  backoffLimit: -1\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{ name: m, image: "busybox:1.36" }]\n',
    );
  }
  return root;
}

describe('waved chart rollouts', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, FLEET);
  const storage = new ReleaseStorage(kc);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let dir = '';
  let charts: Record<Version, string>;
  const running: OperatorProcess[] = [];
  let op: RunningOperator | undefined;

  beforeAll(async () => {
    await ensureCrd(kc, FLEET);
    ns = await createNamespace(kc, 'rollout');
    dir = await mkdtemp(path.join(os.tmpdir(), 'rollout-test-'));
    charts = { 'v1': await writeChart(dir, 'v1'), 'v2-unready': await writeChart(dir, 'v2-unready'), 'v2-hook': await writeChart(dir, 'v2-hook'), 'v3': await writeChart(dir, 'v3') };
  });
  afterAll(async () => {
    await op?.stop();
    for (const p of running) p.crash();
    await ns.remove();
    await rm(dir, { recursive: true, force: true });
  });

  const watchesText = (v: Version): string => `- group: ${FLEET.group}\n  version: ${FLEET.version}\n  kind: ${FLEET.kind}\n  chart: ${charts[v]}\n${ROLLOUT_YAML}`;
  const leaderElection = { id: 'rollout-test', namespace: '', leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_000 };
  /** In-process, with leader election in the test namespace: the pause Lease and the fingerprint key live there. */
  const start = async (v: Version): Promise<RunningOperator> =>
    (op = await startOperator({ watches: watchesText(v), namespaces: [ns.name], maxConcurrentReconciles: 4, leaderElection: { ...leaderElection, namespace: ns.name } }));
  const stop = async (): Promise<void> => {
    await op?.stop();
    op = undefined;
  };
  /** `helm-operator run` as its own process (SIGKILL-able), a candidate for the same Lease. */
  const startProcess = async (v: Version): Promise<OperatorProcess> => {
    const file = path.join(dir, `watches-${v}-${running.length}.yaml`);
    await writeFile(file, watchesText(v));
    const p = startOperatorProcess(
      ['run', '--watches-file', file, '--helm-binary', inject('helmBin'), '--max-concurrent-reconciles', '4', '--leader-elect', '--leader-election-id', leaderElection.id, '--leader-election-namespace', ns.name, '--leader-election-lease-duration', '6s', '--leader-election-renew-deadline', '4s', '--leader-election-retry-period', '1s', ...(process.env.ROLLOUT_TEST_DEBUG === undefined ? [] : ['--zap-log-level', 'debug'])],
      { WATCH_NAMESPACE: ns.name },
    );
    running.push(p);
    return p;
  };
  const cli = async (...args: string[]): Promise<string> => {
    const p = startOperatorProcess(['rollout', ...args, '--kind', `${FLEET.kind}.${FLEET.group}`, '-n', ns.name, '--operator-namespace', ns.name, '--helm-binary', inject('helmBin')]);
    const { code } = await waitForExit(p, 60_000);
    expect(code, p.output()).toBe(0);
    return p.output();
  };

  const names = Array.from({ length: COUNT }, (_, i) => `fleet-${String(i).padStart(3, '0')}`);
  /** The rollout order the gate uses (namespace/name), its first CR the canary. */
  const order = (): Member[][] => waves(names.map((n) => ({ key: `${ns.name}/${n}`, labels: {} })), POLICY);
  const chartOf = (cr: CR | undefined): string | undefined => cr?.status?.deployedRelease?.chartVersion;
  const all = async (): Promise<Map<string, CR>> => new Map((await crs.list(ns.name)).map((c) => [c.metadata.name, c]));
  /** Revisions per release, from helm's storage: the history a `helm history` would list. */
  const history = async (name: string): Promise<number> => (await storage.records(ns.name, name)).length;
  /**
   * Upgrades of a release that deployed `fleet` (deployed, or superseded since): an upgrade a
   * SIGKILL interrupted leaves a pending revision, unlocked as failed, and is not one.
   */
  const upgradesTo = async (name: string, fleet: string): Promise<number> =>
    (await storage.records(ns.name, name)).filter((r) => r.labels['helm.sdk.operatorframework.io/fleet-revision'] === fleet && (r.status === 'deployed' || r.status === 'superseded')).length;
  const rolloutOf = (cr: CR | undefined): { fleetRevision?: string; attempt?: { fleetRevision: string; at: string; failure?: string } } | undefined =>
    (cr?.status as { rollout?: { fleetRevision?: string; attempt?: { fleetRevision: string; at: string; failure?: string } } } | undefined)?.rollout;

  const allOn = (version: string, timeoutMs = WAIT_MS): Promise<Map<string, CR>> =>
    waitFor(`all ${COUNT} CRs on chart ${version} and Ready`, async () => {
      const now = await all();
      const done = names.every((n) => chartOf(now.get(n)) === version && condition(now.get(n), 'Ready')?.status === 'True');
      return done ? now : undefined;
    }, { timeoutMs, intervalMs: 2_000 });

  it('halts a chart that never becomes ready at the canary, then ships the fixed one in health-gated waves through a SIGKILL and a leader change', { timeout: 3 * WAIT_MS + 300_000 }, async () => {
    await start('v1');
    for (const name of names) await crs.create(ns.name, name, {});
    await allOn('0.1.0');
    await stop();

    // v2: the canary's Deployment never becomes available.
    const canary = order()[0]?.[0]?.key.split('/')[1] ?? '';
    await start('v2-unready');
    const failedCanary = await crs.waitForCondition(ns.name, canary, { type: 'Rollout', status: 'False', reason: 'RolloutFailed' }, { timeoutMs: 120_000 });
    expect(rolloutOf(failedCanary)?.attempt?.failure).toMatch(/not Ready within 15s/);
    const v2Fleet = rolloutOf(failedCanary)?.attempt?.fleetRevision;
    await crs.waitForEvent(ns.name, canary, 'RolloutFailed');
    const halted = await waitFor('every other CR halted, still on 0.1.0 and Ready', async () => {
      const now = await all();
      const rest = names.filter((n) => n !== canary).map((n) => now.get(n));
      return rest.every((c) => condition(c, 'Rollout')?.reason === 'RolloutHalted' && chartOf(c) === '0.1.0' && condition(c, 'Ready')?.status === 'True') ? now : undefined;
    }, { timeoutMs: WAIT_MS, intervalMs: 2_000 });
    expect(chartOf(halted.get(canary))).toBe('0.2.0');
    for (const n of names.filter((x) => x !== canary)) expect(await history(n), n).toBe(1);
    const metrics = await op?.metrics.metrics();
    expect(metrics).toMatch(/helm_operator_rollout_halted\{controller="fleet-controller"\} 1/);
    expect(metrics).toMatch(new RegExp(`helm_operator_rollout_releases\\{controller="fleet-controller",fleet_revision="\\w+",chart_version="0.2.0",state="failed"\\} 1`));
    expect(metrics).toMatch(new RegExp(`helm_operator_rollout_releases\\{controller="fleet-controller",fleet_revision="\\w+",chart_version="0.2.0",state="pending"\\} ${COUNT - 1}`));
    const status = await cli('status');
    expect(status).toContain('halted: 1 CR failed');
    expect(status).toContain(`failed: ${ns.name}/${canary}: not Ready within 15s`);
    await stop();

    // v3, paused first: nothing moves until resumed.
    await cli('pause');
    const first = await startProcess('v3');
    await crs.waitForCondition(ns.name, canary, { type: 'Rollout', status: 'False', reason: 'RolloutPaused' }, { timeoutMs: 120_000 });
    expect(await history(canary)).toBe(2);
    const standby = await startProcess('v3');
    await cli('resume');

    // SIGKILL the leader once the second wave is under way: the standby takes over and goes on.
    const secondWave = (order()[2] ?? []).map((m) => m.key.split('/')[1] ?? '');
    await waitFor('the second wave under way', async () => {
      const now = await all();
      return secondWave.some((n) => chartOf(now.get(n)) === '0.3.0');
    }, { timeoutMs: WAIT_MS, intervalMs: 500 }).catch(async (err: unknown) => {
      const now = await all();
      console.log(JSON.stringify([...now.values()].slice(0, 2).map((c) => [c.metadata.name, c.status]), null, 1), first.output().slice(-8000), standby.output().slice(-3000));
      console.log(JSON.stringify((await crs.events(ns.name, canary)).map((e) => [e.lastTimestamp, e.reason, e.message])), JSON.stringify(await storage.records(ns.name, canary)), v2Fleet);
      throw err;
    });
    first.crash();
    await waitForExit(first);
    const done = await allOn('0.3.0', 2 * WAIT_MS);
    expect(standby.child.exitCode).toBeNull();

    // Each release took v3 exactly once (a revision of that fleet revision that deployed), and only the canary took v2.
    const v2 = rolloutOf(failedCanary)?.attempt?.fleetRevision ?? '';
    const v3 = rolloutOf(done.get(canary))?.fleetRevision ?? '';
    expect(v3).not.toBe(v2);
    for (const n of names) {
      expect(await upgradesTo(n, v3), n).toBe(1);
      expect(await upgradesTo(n, v2), n).toBe(n === canary ? 1 : 0);
    }
    // Each wave started after every CR of the one before it was upgraded and stable (stableFor 2s).
    const at = (n: string): number => Date.parse(rolloutOf(done.get(n))?.attempt?.at ?? '');
    const w = order().map((wave) => wave.map((m) => at(m.key.split('/')[1] ?? '')));
    for (let i = 1; i < w.length; i++) {
      expect(Math.min(...(w[i] ?? [])), `wave ${i + 1} starts after wave ${i} is stable`).toBeGreaterThanOrEqual(Math.max(...(w[i - 1] ?? [])) + POLICY.stableForMs);
    }
    expect(await cli('status')).toContain(': complete');
  });
});
