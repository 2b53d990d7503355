/**
 * Waved rollouts of a new chart (issue 35, docs/rollouts.md), with real helm on the real control
 * plane: a chart whose Deployment never becomes ready (or whose hook fails) is halted at the canary
 * while every other CR keeps serving the old chart; a fixed chart then goes in waves, each after
 * the previous one is healthy, through a SIGKILLed leader and a new one, and helm's release history
 * shows every release upgraded exactly once per chart it took.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_ROLLOUT, type RolloutPolicy } from '../../../src/config/rollout-policy.js';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { waves } from '../../../src/reconciler/rollout/rollout-gate.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, startOperator, type CR, type RunningOperator, type TestKind } from '../../support/operator.js';
import { writeChart, type Version } from '../../support/fleet-charts.js';
import { startOperatorProcess, waitForExit, type OperatorProcess } from '../../support/process.js';

const FLEET: TestKind = { group: 'rollout.example.com', version: 'v1', kind: 'Fleet', plural: 'fleets' };
/**
 * A canary and three waves of four: every decision of the rollout (halt, undo, pause, the waves'
 * order, a leader change part way) shows at this size. The fleet at scale is the bench's
 * (`npm run bench -- --rollout --n 100`); ROLLOUT_TEST_CRS=60 runs this file at the issue's size.
 */
const COUNT = Number(process.env.ROLLOUT_TEST_CRS ?? 12);
const WAVE = Math.max(2, Math.round(COUNT / 3));
const POLICY: RolloutPolicy = {
  ...DEFAULT_ROLLOUT,
  canary: { count: 1 },
  waveSize: { count: WAVE },
  healthTimeoutMs: 15_000,
  stableForMs: 2_000,
};
const ROLLOUT_YAML = `  rollout:\n    canary: 1\n    waveSize: ${WAVE}\n    healthTimeout: 15s\n    stableFor: 2s\n`;
const WAIT_MS = 60_000 + COUNT * 6_000;
/** The hook variant's CRs: what it shows does not grow with the count. */
const HOOK_COUNT = 6;

describe('waved chart rollouts', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, FLEET);
  const storage = new ReleaseStorage(kc);
  let dir = '';
  let charts: Record<Version, string>;
  const namespaces: { remove: () => Promise<void> }[] = [];
  const running: OperatorProcess[] = [];
  let op: RunningOperator | undefined;

  beforeAll(async () => {
    await ensureCrd(kc, FLEET);
    dir = await mkdtemp(path.join(os.tmpdir(), 'rollout-test-'));
    charts = {
      v1: await writeChart(dir, 'v1'),
      'v2-unready': await writeChart(dir, 'v2-unready'),
      'v2-hook': await writeChart(dir, 'v2-hook'),
      v3: await writeChart(dir, 'v3'),
    };
  });
  afterAll(async () => {
    await op?.stop();
    for (const p of running) if (p.child.exitCode === null && p.child.signalCode === null) p.crash();
    for (const n of namespaces) await n.remove();
    await rm(dir, { recursive: true, force: true });
  });

  const watchesText = (v: Version): string =>
    `- group: ${FLEET.group}\n  version: ${FLEET.version}\n  kind: ${FLEET.kind}\n  chart: ${charts[v]}\n${ROLLOUT_YAML}`;
  const LEASE = 'rollout-test';

  /** `count` CRs in a namespace of their own, and what the test does with them. */
  async function fleetOf(count: number) {
    const created = await createNamespace(kc, 'rollout');
    namespaces.push(created);
    const ns = created.name;
    const names = Array.from({ length: count }, (_, i) => `fleet-${String(i).padStart(3, '0')}`);
    const all = async (): Promise<Map<string, CR>> => new Map((await crs.list(ns)).map((c) => [c.metadata.name, c]));
    return {
      ns,
      names,
      all,
      /** The rollout order the gate uses (namespace/name), wave by wave: its first CR the canary. */
      order: (): string[][] =>
        waves(
          names.map((n) => ({ key: `${ns}/${n}`, labels: {} })),
          POLICY,
        ).map((w) => w.map((m) => m.key.slice(ns.length + 1))),
      /** In-process, with leader election in the CRs' namespace: the pause Lease and the fingerprint key live there. */
      start: async (v: Version): Promise<void> => {
        const leaderElection = { id: LEASE, namespace: ns, leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_000 };
        op = await startOperator({ watches: watchesText(v), namespaces: [ns], maxConcurrentReconciles: 4, leaderElection });
      },
      stop: async (): Promise<void> => {
        await op?.stop();
        op = undefined;
      },
      /** `helm-operator run` as its own process (SIGKILL-able), a candidate for the same Lease. */
      startProcess: async (v: Version): Promise<OperatorProcess> => {
        const file = path.join(dir, `watches-${v}-${running.length}.yaml`);
        await writeFile(file, watchesText(v));
        const debug = process.env.ROLLOUT_TEST_DEBUG === undefined ? [] : ['--zap-log-level', 'debug'];
        const le = [
          '--leader-elect',
          '--leader-election-id',
          LEASE,
          '--leader-election-namespace',
          ns,
          '--leader-election-lease-duration',
          '6s',
          '--leader-election-renew-deadline',
          '4s',
          '--leader-election-retry-period',
          '1s',
        ];
        const p = startOperatorProcess(
          ['run', '--watches-file', file, '--helm-binary', inject('helmBin'), '--max-concurrent-reconciles', '4', ...le, ...debug],
          { WATCH_NAMESPACE: ns },
        );
        running.push(p);
        return p;
      },
      cli: async (...args: string[]): Promise<string> => {
        const p = startOperatorProcess([
          'rollout',
          ...args,
          '--kind',
          `${FLEET.kind}.${FLEET.group}`,
          '-n',
          ns,
          '--operator-namespace',
          ns,
          '--helm-binary',
          inject('helmBin'),
        ]);
        const { code } = await waitForExit(p, 60_000);
        expect(code, p.output()).toBe(0);
        return p.output();
      },
      /**
       * Upgrades of a release that deployed `fleet` (deployed, or superseded since): an upgrade a
       * SIGKILL interrupted leaves a pending revision, unlocked as failed, and is not one.
       */
      upgradesTo: async (name: string, fleet: string): Promise<number> =>
        (await storage.records(ns, name)).filter(
          (r) =>
            r.labels['helm.sdk.operatorframework.io/fleet-revision'] === fleet && (r.status === 'deployed' || r.status === 'superseded'),
        ).length,
      /** Revisions per release, from helm's storage: the history a `helm history` would list. */
      history: async (name: string): Promise<number> => (await storage.records(ns, name)).length,
      allOn: (version: string, timeoutMs = WAIT_MS): Promise<Map<string, CR>> =>
        waitFor(
          `all ${count} CRs on chart ${version} and Ready`,
          async () => {
            const now = await all();
            return names.every((n) => chartOf(now.get(n)) === version && condition(now.get(n), 'Ready')?.status === 'True')
              ? now
              : undefined;
          },
          { timeoutMs, intervalMs: 2_000 },
        ),
      /** Every CR but `canary` halted, still on 0.1.0 and Ready. */
      othersHalted: (canary: string): Promise<Map<string, CR>> =>
        waitFor(
          'every other CR halted, still on 0.1.0 and Ready',
          async () => {
            const now = await all();
            const rest = names.filter((n) => n !== canary).map((n) => now.get(n));
            return rest.every(
              (c) =>
                condition(c, 'Rollout')?.reason === 'RolloutHalted' && chartOf(c) === '0.1.0' && condition(c, 'Ready')?.status === 'True',
            )
              ? now
              : undefined;
          },
          { timeoutMs: WAIT_MS, intervalMs: 2_000 },
        ),
    };
  }
  type Fleet = Awaited<ReturnType<typeof fleetOf>>;

  /** All CRs created on v1 and Ready there, then the operator stopped. */
  async function onV1(f: Fleet): Promise<void> {
    await f.start('v1');
    for (const name of f.names) await crs.create(f.ns, name, {});
    await f.allOn('0.1.0');
    await f.stop();
  }

  /** The halt as every witness tells it: status, events, metrics, `rollout status`. */
  async function expectHalted(f: Fleet, canary: string, failure: RegExp): Promise<void> {
    const failed = await crs.waitForCondition(
      f.ns,
      canary,
      { type: 'Rollout', status: 'False', reason: 'RolloutFailed' },
      { timeoutMs: 120_000 },
    );
    expect(rolloutOf(failed)?.attempt?.failure).toMatch(failure);
    await crs.waitForEvent(f.ns, canary, 'RolloutFailed');
    await f.othersHalted(canary);
    for (const n of f.names.filter((x) => x !== canary)) expect(await f.history(n), n).toBe(1);
    const metrics = (await op?.metrics.metrics()) ?? '';
    const series = (state: string): RegExp =>
      new RegExp(
        `helm_operator_rollout_releases\\{controller="fleet-controller",fleet_revision="\\w+",chart_version="0.2.0",state="${state}"\\} (\\d+)`,
      );
    expect(metrics).toMatch(/helm_operator_rollout_halted\{controller="fleet-controller"\} 1/);
    expect(series('failed').exec(metrics)?.[1]).toBe('1');
    expect(series('pending').exec(metrics)?.[1]).toBe(String(f.names.length - 1));
    const status = await f.cli('status');
    expect(status).toContain('halted: 1 CR failed');
    expect(status).toMatch(new RegExp(`failed: ${f.ns}/${canary}: .*(?:${failure.source})`));
  }

  /** `rollout undo` takes the canary back to the revision it ran before; the operator keeps it there. */
  async function undo(f: Fleet, canary: string): Promise<void> {
    const v1 = rolloutOf((await f.all()).get(f.names[1] ?? ''))?.fleetRevision ?? '';
    expect(await f.cli('undo')).toContain(`${f.ns}/${canary}: rolled back to revision 1`);
    await waitFor(
      'the canary back on v1, held as failed',
      async () => {
        const cr = (await f.all()).get(canary);
        return rolloutOf(cr)?.fleetRevision === v1 && condition(cr, 'Rollout')?.reason === 'RolloutFailed';
      },
      { timeoutMs: 120_000 },
    );
    expect(await f.history(canary)).toBe(3);
  }

  /** Each wave started after every CR of the one before it was upgraded and stayed Ready for stableFor. */
  function expectWaves(f: Fleet, done: Map<string, CR>): void {
    const at = (n: string): number => Date.parse(rolloutOf(done.get(n))?.attempt?.at ?? '');
    const w = f.order().map((wave) => wave.map(at));
    for (let i = 1; i < w.length; i++) {
      expect(Math.min(...(w[i] ?? [])), `wave ${i + 1} starts after wave ${i} is stable`).toBeGreaterThanOrEqual(
        Math.max(...(w[i - 1] ?? [])) + POLICY.stableForMs,
      );
    }
  }

  it(
    'halts a chart that never becomes ready at the canary, then ships the fixed one in health-gated waves through a SIGKILL and a leader change',
    { timeout: 3 * WAIT_MS + 300_000 },
    async () => {
      const f = await fleetOf(COUNT);
      const canary = f.order()[0]?.[0] ?? '';
      await onV1(f);

      // v2: the canary's Deployment never becomes available.
      await f.start('v2-unready');
      await expectHalted(f, canary, /not Ready within 15s/);
      expect(chartOf((await f.all()).get(canary))).toBe('0.2.0');
      const v2 = rolloutOf((await f.all()).get(canary))?.attempt?.fleetRevision ?? '';
      await undo(f, canary);
      await f.stop();

      // v3, paused first: nothing moves until resumed.
      await f.cli('pause');
      const first = await f.startProcess('v3');
      await crs.waitForCondition(f.ns, canary, { type: 'Rollout', status: 'False', reason: 'RolloutPaused' }, { timeoutMs: 120_000 });
      expect(await f.history(canary)).toBe(3);
      const standby = await f.startProcess('v3');
      await f.cli('resume');

      // SIGKILL the leader once the second wave after the canary is under way: the standby takes over and goes on.
      const secondWave = f.order()[2] ?? [];
      await waitFor(
        'the second wave under way',
        async () => {
          const now = await f.all();
          return secondWave.some((n) => chartOf(now.get(n)) === '0.3.0');
        },
        { timeoutMs: WAIT_MS, intervalMs: 500 },
      );
      first.crash();
      await waitForExit(first);
      const done = await f.allOn('0.3.0', 2 * WAIT_MS);
      expect(standby.child.exitCode).toBeNull();

      // Each release took v3 exactly once, and only the canary took v2.
      const v3 = rolloutOf(done.get(canary))?.fleetRevision ?? '';
      expect(v3).not.toBe(v2);
      for (const n of f.names) {
        expect(await f.upgradesTo(n, v3), n).toBe(1);
        expect(await f.upgradesTo(n, v2), n).toBe(n === canary ? 1 : 0);
      }
      expectWaves(f, done);
      expect(await f.cli('status')).toContain(': complete');
    },
  );

  it(
    'halts at the canary when a hook Job of the new chart fails, keeping every release on the old chart, then ships the fix',
    { timeout: 600_000 },
    async () => {
      const f = await fleetOf(HOOK_COUNT);
      const canary = f.order()[0]?.[0] ?? '';
      await onV1(f);

      await f.start('v2-hook');
      await expectHalted(f, canary, /pre-upgrade hooks failed|backoffLimit/);
      await crs.waitForEvent(f.ns, canary, 'UpgradeFailed');
      // helm's failed revision was rolled back: the canary serves v1 again (Ready says the upgrade failed, ADR 0030).
      expect(chartOf((await f.all()).get(canary))).toBe('0.1.0');
      expect(
        (await storage.records(f.ns, canary)).find((r) => r.status === 'deployed')?.labels['helm.sdk.operatorframework.io/fleet-revision'],
      ).toBe(rolloutOf((await f.all()).get(f.names[1] ?? ''))?.fleetRevision);
      await f.stop();

      await f.start('v3');
      const done = await f.allOn('0.3.0');
      const v3 = rolloutOf(done.get(canary))?.fleetRevision ?? '';
      for (const n of f.names) expect(await f.upgradesTo(n, v3), n).toBe(1);
      expectWaves(f, done);
      await f.stop();
    },
  );
});

const chartOf = (cr: CR | undefined): string | undefined => cr?.status?.deployedRelease?.chartVersion;

interface RolloutStatusView {
  fleetRevision?: string;
  attempt?: { fleetRevision: string; at: string; failure?: string };
}
const rolloutOf = (cr: CR | undefined): RolloutStatusView | undefined =>
  (cr?.status as { rollout?: RolloutStatusView } | undefined)?.rollout;
