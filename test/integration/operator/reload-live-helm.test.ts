import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadWatches } from '../../../src/config/watches.js';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, fixtureChart, startOperator, SLOW_UPGRADE as SLOW, type RunningOperator } from '../../support/operator.js';

/** How long the restarted controller lets its reconciles run before cancelling them (then 5 s more). */
const STOP_TIMEOUT_MS = 3_000;
/** Enough hook Jobs (about a second each) that the upgrade outlives the controller's stop. */
const HOOK_JOBS = 20;

/**
 * A watches.yaml reload restarts a controller while its helm upgrade runs, and that helm outlives
 * the controller's stop (here: the real helm behind a shell that ignores SIGTERM, as a helm busy
 * cleaning up would). The restarted controller must not take the live `pending-upgrade` revision
 * for an abandoned one and roll it back under the running helm (issue 29, B4; ADR 0036).
 */
describe('a reload during a helm upgrade that outlives the controller', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, SLOW);
  const storage = new ReleaseStorage(kc);
  const core = kc.makeApiClient(CoreV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let dir: string;
  let op: RunningOperator;

  beforeAll(async () => {
    await ensureCrd(kc, SLOW);
    ns = await createNamespace(kc, 'reload-live-helm');
    dir = await mkdtemp(path.join(os.tmpdir(), 'reload-live-helm-'));
    const helm = path.join(dir, 'helm');
    // TERM reaches this shell only, which ignores it: the real helm runs on until it is done.
    await writeFile(helm, `#!/bin/sh\ntrap '' TERM\n'${inject('helmBin')}' "$@"\n`);
    await chmod(helm, 0o755);
    op = await startOperator({ watches: entry(''), namespaces: [ns.name], helmBin: helm, gracefulShutdownTimeoutMs: STOP_TIMEOUT_MS });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
    await rm(dir, { recursive: true, force: true });
  });

  function entry(extra: string): string {
    return `- {group: ${SLOW.group}, version: ${SLOW.version}, kind: ${SLOW.kind}, chart: ${fixtureChart('slow-upgrade')}${extra}}\n`;
  }

  it('leaves the live upgrade alone, and reconciles its outcome once helm has exited', { timeout: 240_000 }, async () => {
    await crs.create(ns.name, 'app', { message: 'v1' });
    await crs.waitForCondition(ns.name, 'app', { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
    await crs.patch(ns.name, 'app', { spec: { message: 'v2', upgradeHookJobs: HOOK_JOBS } });
    await waitFor(
      'the upgrade to be in progress (revision 2 pending-upgrade)',
      async () => (await storage.records(ns.name, 'app')).some((r) => r.revision === 2 && r.status === 'pending-upgrade'),
      { timeoutMs: 30_000, intervalMs: 100 },
    );

    const file = path.join(dir, 'watches.yaml');
    await writeFile(file, entry(', reconcilePeriod: 5s'));
    const applied = await op.operator.apply(await loadWatches(file));
    expect(applied.restarted).toEqual(['slowupgrade-controller']);
    // The race this test is about: the old controller gave up, its helm still runs, the new one reconciles.
    expect(op.helm.running('app', ns.name)).toBe(true);
    expect((await storage.records(ns.name, 'app')).map((r) => `${r.revision}:${r.status}`).sort()).toEqual([
      '1:deployed',
      '2:pending-upgrade',
    ]);

    await waitFor('the upgrade to finish', () => Promise.resolve(!op.helm.running('app', ns.name)), {
      timeoutMs: 180_000,
      intervalMs: 500,
    });
    const records = await waitFor(
      'the records to settle',
      async () => {
        const all = await storage.records(ns.name, 'app');
        return all.every((r) => !r.status.startsWith('pending-')) ? all : undefined;
      },
      { timeoutMs: 30_000 },
    );
    // Nothing rolled the live upgrade back: no third revision, and revision 2 is what serves.
    expect(records.map((r) => `${r.revision}:${r.status}`).sort()).toEqual(['1:superseded', '2:deployed']);
    expect((await core.readNamespacedConfigMap({ namespace: ns.name, name: 'app-data' })).data?.message).toBe('v2');
    const reasons = (await crs.events(ns.name, 'app')).map((e) => e.reason);
    expect(reasons).not.toContain('ReleaseUnlocked');
    expect(reasons).not.toContain('RollbackSuccessful');
    await crs.waitForCondition(ns.name, 'app', { type: 'Deployed', status: 'True' });
  });
});
