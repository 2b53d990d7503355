import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectRef } from '../../../src/k8s/objects.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, type CR } from '../../support/operator.js';
import { killAll, spawnOperator, watchEntry, watchesFile, type OperatorProcess } from '../production/support.js';
import { idiomCases, type Ctx, type IdiomCase } from './cases.js';
import { Cluster, counters, timeUntil, type Counters } from './harness.js';

/** Short, so that three periods pass quickly; spread ±5 % by the operator. */
const PERIOD_MS = 3_000;
const IDLE_PERIODS = 3;
const DRIFT_REASONS = new Set(['DriftCorrected', 'DriftRepairFailed']);

/** One row of the closing table, filled as the steps pass. */
interface Row {
  deployed?: boolean;
  ready?: string;
  idle?: { helm: number; writes: number; driftEvents: number; revision: string };
  upgrade?: string;
  repairs: string[];
  deleteClean?: string;
}

/**
 * The idiom charts, each written the way popular public charts are, driven by the real operator
 * process (`helm-operator run`, its /metrics read as Prometheus would) with the real helm on the
 * test cluster, all at once in namespaces of their own: installed, left idle for three reconcile
 * periods, upgraded, hand-edited and deleted. Every step asserts on the cluster: objects, release
 * records, events, CR status.
 */
describe('idiom charts under the operator', () => {
  const kc = testKubeConfig();
  const cluster = new Cluster(kc);
  const cases = idiomCases();
  const rows = new Map<string, Row>(cases.map((c) => [c.id, { repairs: [] }]));
  const crs = new Map<string, CRs>(cases.map((c) => [c.id, new CRs(kc, c.kind)]));
  const namespaces = new Map<string, Awaited<ReturnType<typeof createNamespace>>>();
  const controllers = cases.map((c) => `${c.kind.kind.toLowerCase()}-controller`);
  let watches: Awaited<ReturnType<typeof watchesFile>>;
  let op: OperatorProcess;
  let metricsUrl = '';

  const ctx = (c: IdiomCase): Ctx => ({ kc, cluster, namespace: namespaces.get(c.id)?.name ?? '', release: c.release });
  const cr = async (c: IdiomCase): Promise<CR | undefined> => crs.get(c.id)?.get(ctx(c).namespace, c.release);
  const row = (c: IdiomCase): Row => rows.get(c.id) ?? { repairs: [] };
  const driftEvents = async (c: IdiomCase): Promise<string[]> =>
    ((await crs.get(c.id)?.events(ctx(c).namespace, c.release)) ?? [])
      .filter((e) => DRIFT_REASONS.has(e.reason ?? ''))
      .map((e) => `${e.reason}: ${e.message}`);
  const metrics = (): Promise<Counters> => counters(metricsUrl, controllers);

  /** What the idle check compares: revision, every release object's and record's resourceVersion, drift events. */
  interface Snapshot {
    readonly revision: number | undefined;
    readonly objects: Record<string, string>;
    readonly records: string[];
    readonly drift: string[];
  }
  const snapshot = async (c: IdiomCase): Promise<Snapshot> => {
    const got = await cr(c);
    return {
      revision: got?.status?.deployedRelease?.revision,
      objects: await cluster.resourceVersions(got),
      records: (await cluster.releaseSecrets(ctx(c).namespace, c.release)).map((s) => `${s.revision}@${s.resourceVersion}`),
      drift: await driftEvents(c),
    };
  };

  /** Runs `step` for every chart at once; fails naming each chart that failed, after all have finished. */
  async function forEachChart(step: (c: IdiomCase) => Promise<void>): Promise<void> {
    const results = await Promise.allSettled(cases.map((c) => step(c)));
    const failed = results.flatMap((r, i) =>
      r.status === 'rejected' ? [`${cases[i]?.id}: ${String((r.reason as Error).stack ?? r.reason)}`] : [],
    );
    if (failed.length > 0) throw new Error(`${failed.length} chart(s) failed:\n${failed.join('\n\n')}`);
  }

  /** Waits until the CR reports Ready as the case expects (kwok runs pods, but binds no volumes and assigns no load balancer). */
  const waitForReady = (c: IdiomCase): Promise<CR> =>
    waitFor(
      `${c.id}: Ready=${c.ready.status} matching ${c.ready.message}`,
      async () => {
        const got = await cr(c);
        const ready = condition(got, 'Ready');
        return ready?.status === c.ready.status && c.ready.message.test(ready.message) ? got : undefined;
      },
      { timeoutMs: 90_000 },
    );

  beforeAll(async () => {
    for (const c of cases) {
      await ensureCrd(kc, c.kind);
      namespaces.set(c.id, await createNamespace(kc, `idiom-${c.id}`));
    }
    watches = await watchesFile(cases.map((c) => watchEntry(c.kind, c.chart, `  reconcilePeriod: ${PERIOD_MS / 1000}s\n`)).join(''));
    op = spawnOperator({ watchesFile: watches.file, namespace: [...namespaces.values()].map((n) => n.name).join(',') });
    metricsUrl = await op.metricsUrl();
  });

  afterAll(async () => {
    await killAll();
    // The operator's own log, for a failure the assertions do not explain.
    if (process.env.IDIOMS_OPERATOR_LOG !== undefined) await writeFile(process.env.IDIOMS_OPERATOR_LOG, op.dump());
    for (const ns of namespaces.values()) await ns.remove();
    for (const c of cases) await c.cleanup?.(kc);
    await watches.remove();
    const table = [
      '| chart | deployed | Ready | idle: helm runs / writes / drift events / revision | upgrade | repair (hand edit → repaired) | delete clean |',
      '|---|---|---|---|---|---|---|',
      ...cases.map((c) => {
        const r = row(c);
        const idle = r.idle === undefined ? '—' : `${r.idle.helm} / ${r.idle.writes} / ${r.idle.driftEvents} / ${r.idle.revision}`;
        return `| ${c.id} | ${r.deployed === true ? 'yes' : 'no'} | ${r.ready ?? '—'} | ${idle} | ${r.upgrade ?? '—'} | ${r.repairs.join('; ') || '—'} | ${r.deleteClean ?? '—'} |`;
      }),
    ];
    console.log(`idiom charts:\n${table.join('\n')}`);
  });

  it('installs every chart: Deployed, and Ready or the honest reason it is not', { timeout: 150_000 }, async () => {
    await forEachChart(async (c) => {
      const { namespace } = ctx(c);
      await crs.get(c.id)?.create(namespace, c.release, c.spec);
      const deployed = await crs
        .get(c.id)
        ?.waitForCondition(namespace, c.release, { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
      expect(deployed?.status?.deployedRelease?.revision).toBe(1);
      row(c).deployed = true;
      const settled = await waitForReady(c);
      expect(condition(settled, 'Irreconcilable')?.status).toBe('False');
      const ready = condition(settled, 'Ready');
      row(c).ready = `${ready?.status}: ${ready?.message}`;
      await c.installed(ctx(c));
      expect((await driftEvents(c)).join('\n')).toBe('');
    });
  });

  it(
    `stays idle for ${IDLE_PERIODS} reconcile periods: no helm process, no write, no drift event, same revision`,
    { timeout: 90_000 },
    async () => {
      // Whatever controllers still did after the install (pod status, ownership) has settled once Ready holds.
      await Promise.all(cases.map(waitForReady));
      const before = await Promise.all(cases.map(snapshot));
      const start = await metrics();
      const started = Date.now();
      // Proof that reconciles ran: every controller finished at least one per period since.
      const end = await waitFor(
        `every controller to reconcile ${IDLE_PERIODS} times`,
        async () => {
          const now = await metrics();
          const ran = controllers.every((k) => (now.reconciles[k] ?? 0) - (start.reconciles[k] ?? 0) >= IDLE_PERIODS);
          return ran && Date.now() - started >= IDLE_PERIODS * PERIOD_MS ? now : undefined;
        },
        { timeoutMs: IDLE_PERIODS * PERIOD_MS * 2 + 15_000 },
      );

      expect(end.helm - start.helm).toBe(0);
      expect(end.driftCorrections - start.driftCorrections).toBe(0);
      await forEachChart(async (c) => {
        const was = before[cases.indexOf(c)] as Snapshot;
        const now = await snapshot(c);
        const written = Object.keys(now.objects).filter((k) => now.objects[k] !== was.objects[k]);
        const recordsWritten = now.records.join() === was.records.join() ? 0 : 1;
        row(c).idle = {
          helm: end.helm - start.helm,
          writes: written.length + recordsWritten,
          driftEvents: now.drift.length - was.drift.length,
          revision: `${was.revision} → ${now.revision}`,
        };
        expect(written).toEqual([]);
        expect(now.records).toEqual(was.records);
        expect(now.drift).toEqual(was.drift);
        expect(now.revision).toBe(was.revision);
        await c.idle?.(ctx(c));
      });
    },
  );

  it('upgrades on a spec change: a new revision, its objects updated', { timeout: 120_000 }, async () => {
    await forEachChart(async (c) => {
      const { namespace } = ctx(c);
      await crs.get(c.id)?.patch(namespace, c.release, { spec: c.upgrade.spec });
      const upgraded = await waitFor(
        `${c.id}: revision 2 deployed`,
        async () => {
          const got = await cr(c);
          const deployed = condition(got, 'Deployed');
          return got?.status?.deployedRelease?.revision === 2 && deployed?.reason === 'UpgradeSuccessful' && deployed.status === 'True'
            ? got
            : undefined;
        },
        { timeoutMs: 90_000 },
      );
      await waitFor(`${c.id}: objects updated by the upgrade`, async () => (await c.upgrade.updated(ctx(c))) || undefined);
      const records = await cluster.releaseSecrets(namespace, c.release);
      expect(records.map((r) => `${r.revision}:${r.record().info?.status}`)).toEqual(['1:superseded', '2:deployed']);
      await c.upgrade.verify?.(ctx(c));
      expect((await driftEvents(c)).join('\n')).toBe('');
      row(c).upgrade = `rev ${upgraded.status?.deployedRelease?.revision}, ${Object.keys(c.upgrade.spec).join(', ')} applied`;
    });
  });

  it('repairs hand edits without helm and without touching fields other managers own', { timeout: 120_000 }, async () => {
    const start = await metrics();
    await forEachChart(async (c) => {
      await waitForReady(c);
      for (const edit of c.edits) {
        const events = (await driftEvents(c)).length;
        await edit.apply(ctx(c));
        const ms = await timeUntil(`${c.id}: ${edit.what}: repaired`, () => edit.repaired(ctx(c)));
        row(c).repairs.push(`${edit.what}: ${ms} ms`);
        console.log(`[idioms] ${c.id}: ${edit.what}: repaired ${ms} ms after the edit`);
        await edit.verify?.(ctx(c));
        const event = await waitFor(`${c.id}: a DriftCorrected event`, async () =>
          (await driftEvents(c)).slice(events).find((e) => e.startsWith('DriftCorrected')),
        );
        expect(event).toMatch(/^DriftCorrected: (Restored|Recreated) /);
      }
      // Repaired from the deployed revision's manifest: no new revision.
      expect((await cr(c))?.status?.deployedRelease?.revision).toBe(2);
    });
    expect((await metrics()).helm - start.helm).toBe(0);
  });

  it('deletes: no release and no object left, but what helm keeps by design', { timeout: 120_000 }, async () => {
    await forEachChart(async (c) => {
      const { namespace } = ctx(c);
      const inventory: ObjectRef[] = (await cr(c))?.status?.inventory ?? [];
      expect(inventory.length).toBeGreaterThan(0);
      await crs.get(c.id)?.delete(namespace, c.release);
      await crs.get(c.id)?.waitForGone(namespace, c.release);
      expect(await cluster.releaseSecrets(namespace, c.release)).toEqual([]);
      // Deletion is asynchronous for objects with finalizers or dependents (a StatefulSet's pods).
      const left = await waitFor(`${c.id}: release objects gone`, async () => {
        const remaining = await cluster.remaining(inventory);
        return remaining.every((r) => c.kept.includes(r)) ? remaining : undefined;
      });
      expect(left.sort()).toEqual([...c.kept].sort());
      await c.deleted?.(ctx(c));
      row(c).deleteClean = c.kept.length === 0 ? 'yes' : `yes (kept by design: ${c.kept.join(', ')})`;
    });
  });
});
