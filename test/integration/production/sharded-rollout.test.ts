/**
 * What spans a kind stays the kind's with sharding (issue 46 item 4, docs/adr/0096): two replicas,
 * in-process, with pinned identities and namespaces that hash to one each; a waved rollout over
 * the CRs of both. The canary is one CR of the kind (the other replica's first CR waits for it),
 * its failure halts the other replica's CRs too, the waves advance across the replicas in the
 * kind's order, each CR is still moved only by its namespace's owner, and `rollout status` and
 * `shards` tell it from the cluster.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { shardsCommand } from '../../../src/cli/shards.js';
import { DEFAULT_ROLLOUT, type RolloutPolicy } from '../../../src/config/rollout-policy.js';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { SHARD_RELEASE_LABEL } from '../../../src/operator/operator.js';
import { RolloutControl } from '../../../src/operator/rollout-control.js';
import { waves } from '../../../src/reconciler/rollout/rollout-gate.js';
import { namespaceBucket, bucketOwner } from '../../../src/runtime/shard-assignment.js';
import { identityDigest } from '../../../src/runtime/shard-coordinator.js';
import type { ShardGroupView } from '../../../src/runtime/shard-view.js';
import { writeChart, type Version } from '../../support/fleet-charts.js';
import { createNamespace, testKubeConfig, uniqueName, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, startOperator, type CR, type RunningOperator, type TestKind } from '../../support/operator.js';
import { startOperatorProcess, waitForExit } from '../../support/process.js';

const SPAN: TestKind = { group: 'span.example.com', version: 'v1', kind: 'Span', plural: 'spans' };
/** Three CRs in each replica's namespace; waves of three: [a0], [a1 a2 b0], [b1 b2], the second across both replicas. */
const POLICY: RolloutPolicy = {
  ...DEFAULT_ROLLOUT,
  canary: { count: 1 },
  waveSize: { count: 3 },
  healthTimeoutMs: 15_000,
  stableForMs: 2_000,
};
const ROLLOUT_YAML = '  rollout:\n    canary: 1\n    waveSize: 3\n    healthTimeout: 15s\n    stableFor: 2s\n';
const NAMES = ['fleet-0', 'fleet-1', 'fleet-2'];
const WAIT_MS = 420_000;

describe('a waved rollout over two sharded replicas is decided over the whole kind (docs/adr/0096)', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, SPAN);
  const storage = new ReleaseStorage(kc);
  const group = uniqueName('span');
  const ids = [`${group}-a`, `${group}-b`];
  const owner = (ns: string): string | undefined => bucketOwner(namespaceBucket(ns), ids);
  let dir = '';
  let charts: Record<Version, string>;
  const spaces: Awaited<ReturnType<typeof createNamespace>>[] = [];
  let home = '';
  /** nsA's CRs belong to replica a, nsB's to replica b; nsA sorts first, so the canary is a's. */
  let nsA = '';
  let nsB = '';
  let replicas: RunningOperator[] = [];

  beforeAll(async () => {
    await ensureCrd(kc, SPAN);
    dir = await mkdtemp(path.join(os.tmpdir(), 'sharded-rollout-'));
    charts = {
      v1: await writeChart(dir, 'v1'),
      'v2-unready': await writeChart(dir, 'v2-unready'),
      'v2-hook': '',
      v3: await writeChart(dir, 'v3'),
    };
    spaces.push(await createNamespace(kc, 'span-home'));
    spaces.push(await createNamespace(kc, 'span-a', (n) => owner(n) === ids[0]));
    spaces.push(await createNamespace(kc, 'span-b', (n) => owner(n) === ids[1]));
    [home, nsA, nsB] = spaces.map((s) => s.name) as [string, string, string];
  });
  afterAll(async () => {
    await stopAll();
    for (const s of spaces) await s.remove();
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (v: Version): Promise<void> => {
    const watches = `- group: ${SPAN.group}\n  version: ${SPAN.version}\n  kind: ${SPAN.kind}\n  chart: ${charts[v]}\n${ROLLOUT_YAML}`;
    replicas = await Promise.all(
      ids.map((identity) =>
        startOperator({
          watches,
          namespaces: [nsA, nsB],
          maxConcurrentReconciles: 3,
          // Long timings: this shared 2-core machine runs at load ~40, and a replica whose event loop
          // stalls past the renew deadline leaves the group (sharding.test.ts); restarted, it joins again.
          leaderElection: { id: group, namespace: home, leaseDurationMs: 40_000, renewDeadlineMs: 30_000, retryPeriodMs: 4_000, identity },
          restartOnLostLeadership: true,
          sharding: true,
        }),
      ),
    );
  };
  async function stopAll(): Promise<void> {
    await Promise.all(replicas.map((r) => r.stop()));
    replicas = [];
  }
  /** Both replicas live and every bucket held by its rendezvous owner, as `shards -o json` says. */
  const settled = (namespace?: string): Promise<ShardGroupView> =>
    waitFor(
      'both replicas holding their shares',
      async () => {
        const json = await shardsCommand({
          id: group,
          operatorNamespace: home,
          output: 'json',
          kubeconfig: inject('kubeconfigPath'),
          ...(namespace === undefined ? {} : { namespace }),
        });
        const view = JSON.parse(json) as ShardGroupView;
        return view.peers.filter((p) => p.state === 'live').length === 2 && view.handoffs.length === 0 ? view : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 1_000 },
    );
  /** Starts both replicas on `v` with the rollout paused until each holds its share: every CR then moves by its owner. */
  const rollTo = async (v: Version): Promise<void> => {
    const control = new RolloutControl(kc, home, SPAN);
    await control.set(true);
    await start(v);
    await settled();
    await control.set(false);
  };

  const keys = (): { ns: string; name: string }[] => [nsA, nsB].flatMap((ns) => NAMES.map((name) => ({ ns, name })));
  const all = async (): Promise<Map<string, CR>> => new Map([...(await crs.list(nsA)), ...(await crs.list(nsB))].map((c) => [key(c), c]));
  const key = (c: CR): string => `${c.metadata.namespace}/${c.metadata.name}`;
  const allOn = (version: string): Promise<Map<string, CR>> =>
    waitFor(
      `all CRs on chart ${version} and Ready`,
      async () => {
        const now = await all();
        return keys().every(
          ({ ns, name }) =>
            chartOf(now.get(`${ns}/${name}`)) === version && condition(now.get(`${ns}/${name}`), 'Ready')?.status === 'True',
        )
          ? now
          : undefined;
      },
      { timeoutMs: WAIT_MS, intervalMs: 2_000 },
    );
  const cli = async (...args: string[]): Promise<string> => {
    const p = startOperatorProcess(args);
    const { code } = await waitForExit(p, 60_000);
    expect(code, p.output()).toBe(0);
    return p.output();
  };
  const rolloutStatus = (): Promise<string> =>
    cli('rollout', 'status', '--kind', `${SPAN.kind}.${SPAN.group}`, '--operator-namespace', home);
  /** Revisions of `ns/name` that deployed `fleet`, with the share each was made under. */
  const madeOn = async (ns: string, name: string, fleet: string): Promise<(string | undefined)[]> =>
    (await storage.records(ns, name))
      .filter(
        (r) => r.labels['helm.sdk.operatorframework.io/fleet-revision'] === fleet && (r.status === 'deployed' || r.status === 'superseded'),
      )
      .map((r) => r.labels[SHARD_RELEASE_LABEL]);

  /** The kind's one canary failed `v2`; every other CR, of either replica, halted on 0.1.0 without an upgrade; both replicas and `rollout status` say so. */
  async function expectHaltedEverywhere(canary: string): Promise<void> {
    const failed = await crs.waitForCondition(
      nsA,
      'fleet-0',
      { type: 'Rollout', status: 'False', reason: 'RolloutFailed' },
      { timeoutMs: WAIT_MS },
    );
    expect(rolloutOf(failed)?.attempt?.failure).toMatch(/not Ready within 15s/);
    const v2 = rolloutOf(failed)?.attempt?.fleetRevision ?? '';
    await waitFor(
      'every other CR halted, still on 0.1.0 and Ready',
      async () => {
        const now = await all();
        return [...now.values()]
          .filter((c) => key(c) !== canary)
          .every(
            (c) =>
              condition(c, 'Rollout')?.reason === 'RolloutHalted' && chartOf(c) === '0.1.0' && condition(c, 'Ready')?.status === 'True',
          );
      },
      { timeoutMs: WAIT_MS, intervalMs: 2_000 },
    );
    for (const { ns, name } of keys())
      expect(await madeOn(ns, name, v2), `${ns}/${name} on v2`).toHaveLength(`${ns}/${name}` === canary ? 1 : 0);
    // Each replica's rollout metrics are the kind's: both say halted, with the one failure.
    for (const [i, r] of replicas.entries()) {
      await waitFor(
        `replica ${ids[i]} reporting the rollout halted`,
        async () => /helm_operator_rollout_halted\{controller="span-controller"\} 1/.test(await r.metrics.metrics()),
        { timeoutMs: 60_000 },
      );
    }
    const halted = await rolloutStatus();
    expect(halted).toContain('halted: 1 CR failed');
    expect(halted).toContain(`failed: ${canary}: not Ready within 15s`);
  }
  /** Each wave started after every CR of the one before it, whichever replica owns it, was stable. */
  function expectWavesInOrder(order: readonly string[][], done: Map<string, CR>): void {
    const at = (k: string): number => Date.parse(rolloutOf(done.get(k))?.attempt?.at ?? '');
    for (let i = 1; i < order.length; i++) {
      expect(Math.min(...(order[i] ?? []).map(at)), `wave ${i + 1} starts after wave ${i} is stable`).toBeGreaterThanOrEqual(
        Math.max(...(order[i - 1] ?? []).map(at)) + POLICY.stableForMs,
      );
    }
  }
  /** Each CR took `v3` once, by its namespace's owner, under the fence of its bucket (ADR 0086's label). */
  async function expectEachMovedByItsOwner(v3: string): Promise<void> {
    for (const { ns, name } of keys()) {
      const made = await madeOn(ns, name, v3);
      expect(made, `${ns}/${name} on v3`).toHaveLength(1);
      expect(made[0], `${ns}/${name}`).toMatch(new RegExp(`^b${namespaceBucket(ns)}-e\\d+-${identityDigest(owner(ns) ?? '')}$`));
    }
  }
  /** `shards` tells who owns what: both replicas, and nsB held by b. */
  async function expectShardsTold(): Promise<void> {
    const view = await settled(nsB);
    expect(view.namespace).toMatchObject({ namespace: nsB, bucket: namespaceBucket(nsB), holder: ids[1], owner: ids[1] });
    const text = (await cli('shards', '--id', group, '--operator-namespace', home, '-n', nsB)).trim().split('\n');
    // Each replica holds three CRs by bucket count already: balancing by CRs gains nothing, so nothing is published (docs/adr/0113).
    expect(text[0]).toBe(
      `shard group ${group}: 2 live replicas, 64 of 64 buckets held, 0 handoffs under way, shares balanced by bucket count`,
    );
    expect(text[1]).toBe('REPLICA  STATE  RENEWED  HOLDS  CRS  BUCKETS');
    expect(text.slice(2, 4).map((l) => l.split('  ').slice(0, 2).join('  '))).toEqual([`${ids[0]}  live`, `${ids[1]}  live`]);
    expect(text.at(-1)).toBe(`namespace ${nsB}: bucket ${namespaceBucket(nsB)}, held by ${ids[1]} (epoch ${view.namespace?.epoch ?? 0})`);
  }

  it(
    'one canary for the kind, halted everywhere by its failure, then waves across both replicas in the kind’s order, each CR moved by its owner',
    { timeout: 1_800_000 },
    async () => {
      const order = waves(
        keys().map(({ ns, name }) => ({ key: `${ns}/${name}`, labels: {} })),
        POLICY,
      ).map((w) => w.map((m) => m.key));
      const canary = `${nsA}/fleet-0`;
      expect(order).toEqual([[canary], [`${nsA}/fleet-1`, `${nsA}/fleet-2`, `${nsB}/fleet-0`], [`${nsB}/fleet-1`, `${nsB}/fleet-2`]]);

      await start('v1');
      for (const { ns, name } of keys()) await crs.create(ns, name, {});
      await allOn('0.1.0');
      await stopAll();

      // v2 never becomes Ready: the kind's one canary (replica a's) fails it, and replica b's CRs halt
      // with a's, none of them upgraded: b took no canary of its own.
      await rollTo('v2-unready');
      await expectHaltedEverywhere(canary);
      await stopAll();

      // v3: the waves in the kind's order, the second one across both replicas.
      await rollTo('v3');
      const done = await allOn('0.3.0');
      expectWavesInOrder(order, done);
      await expectEachMovedByItsOwner(rolloutOf(done.get(canary))?.fleetRevision ?? '');
      expect(await rolloutStatus()).toContain(': complete');

      // `shards` tells who owns what: both replicas, and nsB held by b.
      await expectShardsTold();
      await stopAll();
    },
  );
});

const chartOf = (cr: CR | undefined): string | undefined => cr?.status?.deployedRelease?.chartVersion;
const rolloutOf = (
  cr: CR | undefined,
): { fleetRevision?: string; attempt?: { fleetRevision: string; at: string; failure?: string } } | undefined =>
  (cr?.status as { rollout?: { fleetRevision?: string; attempt?: { fleetRevision: string; at: string; failure?: string } } } | undefined)
    ?.rollout;
