import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, fixtureChart, type TestKind } from '../../support/operator.js';
import { startOperatorProcess, waitForExit, type OperatorProcess } from '../../support/process.js';

const SLOW: TestKind = { group: 'test.example.com', version: 'v1', kind: 'SlowApp', plural: 'slowapps' };

/**
 * A crash in the middle of `helm install` leaves the release `pending-install`, which blocks every
 * later helm operation ("another operation is in progress"). The next operator must recover it.
 */
describe('crash recovery', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, SLOW);
  const storage = new ReleaseStorage(kc);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let dir = '';
  let watches = '';
  let running: OperatorProcess | undefined;

  beforeAll(async () => {
    await ensureCrd(kc, SLOW);
    ns = await createNamespace(kc, 'crash');
    dir = await mkdtemp(path.join(os.tmpdir(), 'crash-test-'));
    watches = path.join(dir, 'watches.yaml');
    await writeFile(watches, `- group: ${SLOW.group}\n  version: ${SLOW.version}\n  kind: ${SLOW.kind}\n  chart: ${fixtureChart('slow-hook')}\n`);
  });
  afterAll(async () => {
    running?.crash();
    await ns.remove();
    await rm(dir, { recursive: true, force: true });
  });

  const start = (): OperatorProcess =>
    startOperatorProcess(['run', '--watches-file', watches, '--helm-binary', inject('helmBin')], { WATCH_NAMESPACE: ns.name });

  it('finishes a release left pending-install by a SIGKILLed operator', async () => {
    running = start();
    await crs.create(ns.name, 'app', { message: 'first' });
    // The pre-install hook Job keeps the install pending for a few seconds: crash inside that window.
    await waitFor(
      'the release to be pending-install',
      async () => (await storage.records(ns.name, 'app')).some((r) => r.status === 'pending-install'),
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    running.crash();
    await waitForExit(running);
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await storage.records(ns.name, 'app')).map((r) => r.status)).toEqual(['pending-install']);

    running = start();
    const cr = await crs.waitForCondition(ns.name, 'app', { type: 'Deployed', status: 'True' }, { timeoutMs: 90_000 });
    const records = await storage.records(ns.name, 'app');
    expect(records.filter((r) => r.status.startsWith('pending-'))).toEqual([]);
    expect(records.find((r) => r.status === 'deployed')).toBeDefined();
    expect(cr.status?.deployedRelease?.revision).toBe(Math.max(...records.map((r) => r.revision)));
    expect((await crs.events(ns.name, 'app')).map((e) => e.reason)).toContain('ReleaseUnlocked');

    running.child.kill('SIGTERM');
    expect((await waitForExit(running)).code).toBe(0);
    running = undefined;
  });
});
