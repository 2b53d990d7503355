import { appendFile, cp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, fixtureChart, type TestKind } from '../../support/operator.js';
import { total } from '../../support/prometheus.js';
import { killAll, scrape, spawnOperator, watchEntry, watchesFile, type OperatorProcess } from './support.js';

const ALPHA: TestKind = { group: 'reload.helm-operator.example.com', version: 'v1', kind: 'Alpha', plural: 'alphas' };
const BETA: TestKind = { group: 'reload.helm-operator.example.com', version: 'v1', kind: 'Beta', plural: 'betas' };

describe('run --watch-config', () => {
  const kc = testKubeConfig();
  const alphas = new CRs(kc, ALPHA);
  const betas = new CRs(kc, BETA);
  const chart = fixtureChart('slow-upgrade'); // installs are fast; only upgrades run hooks
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let watches: Awaited<ReturnType<typeof watchesFile>>;
  let op: OperatorProcess;

  beforeAll(async () => {
    await Promise.all([ensureCrd(kc, ALPHA), ensureCrd(kc, BETA)]);
    ns = await createNamespace(kc, 'prod-reload');
    watches = await watchesFile(watchEntry(ALPHA, chart));
    op = spawnOperator({ watchesFile: watches.file, namespace: ns.name, args: ['--watch-config'] });
    await op.waitForLog('the config watcher', (l) => l.msg === 'Watching the watches file and charts for changes');
  });
  afterAll(async () => {
    for (const [crs, name] of [
      [alphas, 'a1'],
      [alphas, 'a2'],
      [betas, 'b1'],
      [betas, 'b2'],
    ] as const) {
      await crs.delete(ns.name, name).catch(() => undefined);
    }
    for (const [crs, name] of [
      [alphas, 'a1'],
      [alphas, 'a2'],
      [betas, 'b1'],
      [betas, 'b2'],
    ] as const) {
      await crs.waitForGone(ns.name, name, { timeoutMs: 30_000 }).catch(() => undefined);
    }
    await killAll();
    await ns.remove();
    await watches.remove();
  });

  it('reconciles a kind added to watches.yaml while running', { timeout: 120_000 }, async () => {
    await alphas.create(ns.name, 'a1', { message: 'a' });
    await alphas.waitForCondition(ns.name, 'a1', { type: 'Deployed', status: 'True' });
    await betas.create(ns.name, 'b1', { message: 'b' });
    // The operator is live after b1 exists (a1's poke is reconciled), and b1 is still untouched: not watched yet.
    const url = await op.metricsUrl();
    const reconciled = async (): Promise<number> =>
      total(await scrape(url), 'controller_runtime_reconcile_total', { controller: 'alpha-controller' });
    const since = await reconciled();
    await alphas.patch(ns.name, 'a1', { metadata: { annotations: { 'test.example.com/poke': '1' } } });
    await waitFor('a reconcile of a1 after b1 exists', async () => (await reconciled()) > since);
    expect((await betas.get(ns.name, 'b1'))?.status).toBeUndefined();
    expect(await scrape(url)).not.toContain('controller="beta-controller"');

    await watches.write(watchEntry(ALPHA, chart) + watchEntry(BETA, chart));
    const applied = await op.waitForLog('the reload', (l) => l.msg === 'Applied the reloaded watches file', 30_000);
    expect(applied).toMatchObject({ added: ['beta-controller'], removed: [], restarted: [] });
    await betas.waitForCondition(ns.name, 'b1', { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
  });

  it('reports a broken edit with file:line and keeps the last good configuration running', { timeout: 120_000 }, async () => {
    await watches.write(`${watchEntry(ALPHA, chart)}${watchEntry(BETA, chart)}  reconcilPeriod: 5s\n`);
    const invalid = await op.waitForLog(
      'the invalid edit to be reported',
      (l) => l.msg === 'Invalid watches file; keeping the last good configuration',
      30_000,
    );
    expect(invalid.level).toBe('error');
    expect(String(invalid.error)).toContain(`${watches.file}:9:3`);
    expect(String(invalid.error)).toMatch(/reconcilPeriod/);
    // Both kinds still reconcile new CRs.
    await alphas.create(ns.name, 'a2', { message: 'a' });
    await betas.create(ns.name, 'b2', { message: 'b' });
    await alphas.waitForCondition(ns.name, 'a2', { type: 'Deployed', status: 'True' });
    await betas.waitForCondition(ns.name, 'b2', { type: 'Deployed', status: 'True' });
    expect(op.lines.filter((l) => l.msg === 'Applied the reloaded watches file')).toHaveLength(1);
  });

  it("a chart edit restarts that kind's controller and upgrades its releases", { timeout: 120_000 }, async () => {
    const copy = path.join(watches.dir, 'alpha-chart');
    await cp(chart, copy, { recursive: true });
    await writeFile(path.join(copy, 'values.yaml'), 'message: hello\nupgradeHookJobs: 0\n');
    const applies = () => op.lines.filter((l) => l.msg === 'Applied the reloaded watches file');
    const nextApply = async (description: string, after: number) => {
      await waitFor(description, () => Promise.resolve(applies().length > after), { timeoutMs: 30_000, intervalMs: 50 });
      return applies()[after]!;
    };
    let seen = applies().length;
    const before = (await alphas.get(ns.name, 'a1'))?.status?.deployedRelease?.revision ?? 0;
    await watches.write(watchEntry(ALPHA, copy) + watchEntry(BETA, chart));
    expect(await nextApply('the switch to the copied chart', seen)).toMatchObject({ restarted: ['alpha-controller'] });
    seen++;
    // Another chart (its values.yaml differs) is an upgrade of its own: let it land before the edit.
    const revision = before + 1;
    await waitFor('a1 to be upgraded to the copied chart', async () => {
      const a1 = await alphas.get(ns.name, 'a1');
      const deployed = a1?.status?.conditions?.find((c) => c.type === 'Deployed');
      return a1?.status?.deployedRelease?.revision === revision && deployed?.status === 'True';
    });
    await appendFile(path.join(copy, 'templates/configmap.yaml'), '  edited: "yes"\n');
    expect(await nextApply('the chart edit to restart alpha-controller', seen)).toMatchObject({
      added: [],
      removed: [],
      restarted: ['alpha-controller'],
    });
    const core = kc.makeApiClient(CoreV1Api);
    await waitFor('a1 to be upgraded with the edited chart', async () => {
      const cm = await core.readNamespacedConfigMap({ namespace: ns.name, name: 'a1-data' });
      return cm.data?.edited === 'yes';
    });
    // helm applied the ConfigMap before the reconcile writes the status that reports it.
    const upgraded = await waitFor("a1's status to report the upgrade", async () => {
      const a1 = await alphas.get(ns.name, 'a1');
      return a1?.status?.deployedRelease?.revision === revision + 1 ? a1 : undefined;
    });
    expect(upgraded.status?.conditions?.find((c) => c.type === 'Deployed')).toMatchObject({ status: 'True', reason: 'UpgradeSuccessful' });
  });
});
