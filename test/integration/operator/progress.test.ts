import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, fixtureChart, startOperator, type RunningOperator, type TestKind } from '../../support/operator.js';

/** test/fixtures/charts/slow-upgrade: pre-upgrade hook Jobs, about a second each; installs are fast. */
const SLOW: TestKind = { group: 'prod.helm-operator.example.com', version: 'v1', kind: 'SlowUpgrade', plural: 'slowupgrades' };

/**
 * A long helm action is shown while it runs, as Flux marks Reconciling before each action: the CR
 * says `Reconciling=True/Progressing` with what runs before helm is done, and the outcome's write
 * removes it (StatusWriter.progress, summarize).
 */
describe('the Reconciling condition during a long upgrade', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, SLOW);
  const storage = new ReleaseStorage(kc);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  beforeAll(async () => {
    await ensureCrd(kc, SLOW);
    ns = await createNamespace(kc, 'progress');
    const watches = `- {group: ${SLOW.group}, version: ${SLOW.version}, kind: ${SLOW.kind}, chart: ${fixtureChart('slow-upgrade')}}\n`;
    op = await startOperator({ watches, namespaces: [ns.name] });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('says what runs while helm upgrades, and nothing once the upgrade is reported', { timeout: 180_000 }, async () => {
    await crs.create(ns.name, 'app', { message: 'v1' });
    const installed = await crs.waitForCondition(ns.name, 'app', { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
    expect(condition(installed, 'Reconciling')).toBeUndefined();

    await crs.patch(ns.name, 'app', { spec: { message: 'v2' } });
    const during = await crs.waitForCondition(ns.name, 'app', { type: 'Reconciling', status: 'True', reason: 'Progressing' }, { intervalMs: 200 });
    expect(condition(during, 'Reconciling')?.message).toBe('Upgrading release app from revision 1');
    // Seen before helm was done: revision 2 is not deployed yet (its hook Jobs take seconds).
    expect((await storage.records(ns.name, 'app')).filter((r) => r.status === 'deployed').map((r) => r.revision)).toEqual([1]);
    expect(condition(during, 'Deployed')?.reason).toBe('InstallSuccessful');

    const upgraded = await crs.waitForCondition(ns.name, 'app', { type: 'Deployed', status: 'True', reason: 'UpgradeSuccessful' }, { timeoutMs: 120_000 });
    expect(condition(upgraded, 'Reconciling')).toBeUndefined();
    await waitFor('the upgrade event', async () => (await crs.events(ns.name, 'app')).some((e) => e.reason === 'UpgradeSuccessful'));
  });
});
