/**
 * A chart's CRDs follow the chart (issue 49 item 4, docs/adr/0075), with real helm on the real
 * control plane, through a 3-CR waved rollout whose canary decides: a chart whose `crds/` removes a
 * stored version is refused at the canary with nothing applied (the CRD as it was, every release on
 * the old chart, the other CRs never moved); then a chart whose CRD gains an optional field is
 * applied by the canary, after which each release's object of that CRD keeps the new field.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApiextensionsV1Api, CustomObjectsApi, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { isStatus } from '../../../src/k8s/errors.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, startOperator, type CR, type RunningOperator, type TestKind } from '../../support/operator.js';

const SHELF: TestKind = { group: 'owner.chartcrds.example.com', version: 'v1', kind: 'Shelf', plural: 'shelves' };
/** The CRD the chart itself ships in crds/, and uses in its templates. */
const BOOKS = 'books.chartcrds.example.com';
const NAMES = ['shelf-a', 'shelf-b', 'shelf-c'];
const WAIT_MS = 180_000;

type Version = 'v1' | 'unsafe' | 'safe';
const CHART_VERSION: Record<Version, string> = { v1: '0.1.0', unsafe: '0.2.0', safe: '0.3.0' };

/** A version of the Book CRD: `pages` is the field `safe` adds; `unsafe` serves v2 only, dropping the stored v1. */
function booksCrd(v: Version): string {
  const pages = v === 'safe' ? '                pages: { type: integer }\n' : '';
  const version = (name: string): string =>
    `    - name: ${name}\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n            spec:\n              type: object\n              properties:\n                title: { type: string }\n${pages}`;
  return `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: ${BOOKS}\nspec:\n  group: chartcrds.example.com\n  scope: Namespaced\n  names: { kind: Book, plural: books, singular: book, listKind: BookList }\n  versions:\n${version(v === 'unsafe' ? 'v2' : 'v1')}`;
}

async function writeChart(dir: string, v: Version): Promise<string> {
  const root = path.join(dir, v);
  await mkdir(path.join(root, 'templates'), { recursive: true });
  await mkdir(path.join(root, 'crds'), { recursive: true });
  await writeFile(path.join(root, 'Chart.yaml'), `apiVersion: v2\nname: shelf\nversion: ${CHART_VERSION[v]}\n`);
  await writeFile(path.join(root, 'crds', 'books.yaml'), booksCrd(v));
  const pages = v === 'safe' ? '\n  pages: 300' : '';
  await writeFile(
    path.join(root, 'templates', 'book.yaml'),
    `apiVersion: chartcrds.example.com/v1\nkind: Book\nmetadata:\n  name: {{ .Release.Name }}-book\nspec:\n  title: "chart ${CHART_VERSION[v]}"${pages}\n`,
  );
  return root;
}

const chartOf = (cr: CR | undefined): string | undefined => cr?.status?.deployedRelease?.chartVersion;

describe('a chart whose crds/ change', () => {
  const kc = testKubeConfig();
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const crs = new CRs(kc, SHELF);
  const storage = new ReleaseStorage(kc);
  let dir = '';
  let charts: Record<Version, string>;
  let ns = '';
  let removeNamespace: (() => Promise<void>) | undefined;
  let op: RunningOperator | undefined;

  beforeAll(async () => {
    await ensureCrd(kc, SHELF);
    dir = await mkdtemp(path.join(os.tmpdir(), 'chart-crds-test-'));
    charts = { v1: await writeChart(dir, 'v1'), unsafe: await writeChart(dir, 'unsafe'), safe: await writeChart(dir, 'safe') };
    const created = await createNamespace(kc, 'chart-crds');
    ns = created.name;
    removeNamespace = created.remove;
  });
  afterAll(async () => {
    // A run that failed part way leaves CRs holding the operator's finalizer: uninstall them while it runs.
    if (op !== undefined) {
      await crs.deleteAll(ns);
      for (const n of NAMES) await crs.waitForGone(ns, n, { timeoutMs: WAIT_MS });
    }
    await op?.stop();
    await removeNamespace?.();
    await rm(dir, { recursive: true, force: true });
    for (const name of [BOOKS, `${SHELF.plural}.${SHELF.group}`]) {
      try {
        await ext.deleteCustomResourceDefinition({ name });
      } catch (err) {
        if (!isStatus(err, 404)) throw err;
      }
    }
  });

  const start = async (v: Version): Promise<void> => {
    await op?.stop();
    const watches = `- group: ${SHELF.group}\n  version: ${SHELF.version}\n  kind: ${SHELF.kind}\n  chart: ${charts[v]}\n  crds: CreateReplace\n  rollout:\n    canary: 1\n    waveSize: 2\n    healthTimeout: 60s\n    stableFor: 1s\n`;
    const leaderElection = { id: 'chart-crds-test', namespace: ns, leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_000 };
    op = await startOperator({ watches, namespaces: [ns], maxConcurrentReconciles: 3, leaderElection, restartOnLostLeadership: true });
  };
  const all = async (): Promise<Map<string, CR>> => new Map((await crs.list(ns)).map((c) => [c.metadata.name, c]));
  const allOn = (version: string): Promise<Map<string, CR>> =>
    waitFor(
      `all CRs on chart ${version} and Ready`,
      async () => {
        const now = await all();
        return NAMES.every((n) => chartOf(now.get(n)) === version && condition(now.get(n), 'Ready')?.status === 'True') ? now : undefined;
      },
      { timeoutMs: WAIT_MS, intervalMs: 1_000 },
    );
  const books = async (): Promise<V1CustomResourceDefinition> => ext.readCustomResourceDefinition({ name: BOOKS });
  const book = async (release: string): Promise<{ spec?: { title?: string; pages?: number } }> =>
    (await custom.getNamespacedCustomObject({
      group: 'chartcrds.example.com',
      version: 'v1',
      namespace: ns,
      plural: 'books',
      name: `${release}-book`,
    })) as { spec?: { title?: string; pages?: number } };

  /** `unsafe` (v1 dropped) refused at the canary, nothing applied, no release moved; resolves with the canary. */
  async function refusedAtCanary(before: V1CustomResourceDefinition): Promise<string> {
    // A chart whose CRD drops the stored v1: the canary reports the CRD, the rule and the version; helm never runs.
    await start('unsafe');
    const refused = await waitFor(
      'a CR refused with CRDUpgradeUnsafe',
      async () => {
        const now = await all();
        return NAMES.map((n) => now.get(n)).find((c) => condition(c, 'ReleaseFailed')?.reason === 'CRDUpgradeUnsafe');
      },
      { timeoutMs: WAIT_MS, intervalMs: 1_000 },
    );
    const canary = refused.metadata.name;
    const message = condition(refused, 'ReleaseFailed')?.message ?? '';
    expect(message).toContain(`CRD ${BOOKS} (crds/books.yaml)`);
    expect(message).toContain('v1 .: stored version v1 removed (NoStoredVersionRemoved)');
    await crs.waitForCondition(ns, canary, { type: 'Rollout', status: 'False', reason: 'RolloutFailed' }, { timeoutMs: WAIT_MS });
    const others = NAMES.filter((n) => n !== canary);
    await waitFor(
      'the other CRs halted on 0.1.0',
      async () => {
        const now = await all();
        return others.every((n) => condition(now.get(n), 'Rollout')?.reason === 'RolloutHalted' && chartOf(now.get(n)) === '0.1.0')
          ? now
          : undefined;
      },
      { timeoutMs: WAIT_MS, intervalMs: 1_000 },
    );
    const after = await books();
    expect(after.metadata?.generation).toBe(before.metadata?.generation);
    expect(after.spec.versions.map((v) => v.name)).toEqual(['v1']);
    for (const n of NAMES) {
      const records = await storage.records(ns, n);
      expect(
        records.map((r) => `${r.revision}:${r.status}`),
        n,
      ).toEqual(['1:deployed']);
      expect(chartOf((await all()).get(n)), n).toBe('0.1.0');
    }
    return canary;
  }

  /** `safe` (an optional field added) applied by the canary, then every release stores the field. */
  async function appliedThroughCanary(canary: string): Promise<void> {
    // A chart whose CRD gains an optional field: the canary applies it, then every release stores the field.
    await start('safe');
    await allOn('0.3.0');
    const grown = await books();
    expect(JSON.stringify(grown.spec.versions[0]?.schema?.openAPIV3Schema?.properties?.spec?.properties)).toContain('"pages"');
    expect(grown.metadata?.managedFields?.some((f) => f.manager === 'helm-operator-crds' && f.operation === 'Apply')).toBe(true);
    for (const n of NAMES) expect((await book(n)).spec, n).toEqual({ title: 'chart 0.3.0', pages: 300 });
    const applied = await crs.waitForEvent(ns, canary, 'CRDsApplied');
    expect(applied.message).toContain(`${BOOKS} (replaced)`);
    // Only the canary changed the CRD: the waves after it found it as their chart writes it.
    for (const n of NAMES.filter((x) => x !== canary))
      expect(
        (await crs.events(ns, n)).filter((e) => e.reason === 'CRDsApplied'),
        n,
      ).toEqual([]);
  }

  it(
    'refuses a removed stored version at the canary with nothing applied, then applies an added optional field through the canary and the waves',
    { timeout: 4 * WAIT_MS },
    async () => {
      await start('v1');
      for (const name of NAMES) await crs.create(ns, name, {});
      await allOn('0.1.0');
      const before = await books();
      expect(before.status?.storedVersions).toEqual(['v1']);

      const canary = await refusedAtCanary(before);
      await appliedThroughCanary(canary);

      // Uninstalling the releases leaves the CRD where it is.
      for (const n of NAMES) await crs.delete(ns, n);
      for (const n of NAMES) await crs.waitForGone(ns, n, { timeoutMs: WAIT_MS });
      expect((await books()).metadata?.name).toBe(BOOKS);
    },
  );
});
