/**
 * An operator SIGKILLed outside a container leaves its helm running (only node was killed). The
 * next operator on the same helm homes must stop that helm before it reconciles: two helm
 * processes changing one release at once is what ADR 0036 exists to prevent.
 */
import { BatchV1Api } from '@kubernetes/client-node';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTime } from '../../../src/helm/instance.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, fixtureChart, type TestKind } from '../../support/operator.js';
import { startOperatorProcess, waitForExit, type OperatorProcess } from '../../support/process.js';

const SLOW: TestKind = { group: 'orphan.example.com', version: 'v1', kind: 'OrphanApp', plural: 'orphanapps' };
const WRITERS = new Set(['install', 'upgrade', 'rollback', 'uninstall']);

/** helm processes changing `release` of `namespace` right now, whoever started them. */
function helmWriters(release: string, namespace: string): { pid: number; verb: string; ppid: number }[] {
  const helm = inject('helmBin');
  const found: { pid: number; verb: string; ppid: number }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    let args: string[];
    let stat: string;
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (args[0] !== helm || fields[0] === 'Z' || !WRITERS.has(args[1] ?? '')) continue;
    if (!args.includes(release) || !args.includes(namespace)) continue;
    found.push({ pid, verb: args[1] ?? '', ppid: Number(fields[1]) });
  }
  return found;
}

describe('a helm left running by a SIGKILLed operator', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, SLOW);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let dir = '';
  let watches = '';
  const processes: OperatorProcess[] = [];

  beforeAll(async () => {
    await ensureCrd(kc, SLOW);
    ns = await createNamespace(kc, 'orphan');
    dir = await mkdtemp(path.join(os.tmpdir(), 'orphan-test-'));
    watches = path.join(dir, 'watches.yaml');
    await writeFile(
      watches,
      `- {group: ${SLOW.group}, version: ${SLOW.version}, kind: ${SLOW.kind}, chart: ${fixtureChart('slow-upgrade')}}\n`,
    );
  });
  afterAll(async () => {
    for (const p of processes) {
      try {
        p.crash();
      } catch {
        // Its group is gone already.
      }
    }
    await ns.remove();
    await rm(dir, { recursive: true, force: true });
  });

  // Both share TMPDIR, so the same helm homes, as a restarted operator outside a container does.
  const start = (): OperatorProcess => {
    const p = startOperatorProcess(['run', '--watches-file', watches, '--helm-binary', inject('helmBin')], {
      WATCH_NAMESPACE: ns.name,
      TMPDIR: dir,
    });
    processes.push(p);
    return p;
  };

  it('is stopped by the next operator before that one runs helm on the release', { timeout: 240_000 }, async () => {
    const a = start();
    await crs.create(ns.name, 'app', { upgradeHookJobs: 0 });
    await crs.waitForCondition(ns.name, 'app', { type: 'Deployed', status: 'True' });
    // About a minute of pre-upgrade hook Jobs: A's helm upgrade is still running long after A is gone.
    await crs.patch(ns.name, 'app', { spec: { upgradeHookJobs: 60, message: 'second' } });
    const orphan = await waitFor(
      'A to run helm upgrade',
      () => Promise.resolve(helmWriters('app', ns.name).find((h) => h.ppid === a.child.pid && h.verb === 'upgrade')),
      {
        timeoutMs: 60_000,
        intervalMs: 50,
      },
    );
    // Not before its first hook Job exists: until then helm may still be calling A's post-renderer
    // (ADR 0060), and a helm whose post-renderer dies with A fails on its own; only one past
    // rendering outlives A.
    const batch = kc.makeApiClient(BatchV1Api);
    await waitFor(
      "A's helm to run its pre-upgrade hooks",
      async () =>
        (await batch.listNamespacedJob({ namespace: ns.name })).items.some((j) => j.metadata?.name?.startsWith('app-pre-upgrade-')),
      {
        timeoutMs: 60_000,
        intervalMs: 50,
      },
    );
    const orphanStart = startTime(orphan.pid);
    // Only node dies: its helm lives on (a crash of the operator process outside a container).
    process.kill(a.child.pid ?? 0, 'SIGKILL');
    await waitForExit(a);
    expect(startTime(orphan.pid)).toBe(orphanStart);

    // Every 20 ms from now: how many helm processes change the release at once.
    let most = 0;
    let orphanGoneAt: number | undefined;
    let bHelmAt: number | undefined;
    const b = start();
    await waitFor(
      'B to run helm on the release',
      () => {
        const writers = helmWriters('app', ns.name);
        most = Math.max(most, writers.length);
        if (orphanGoneAt === undefined && startTime(orphan.pid) !== orphanStart) orphanGoneAt = Date.now();
        if (bHelmAt === undefined && writers.some((h) => h.ppid === b.child.pid)) bHelmAt = Date.now();
        return Promise.resolve(bHelmAt !== undefined);
      },
      { timeoutMs: 120_000, intervalMs: 20 },
    );
    expect(orphanGoneAt, "A's helm was stopped").toBeDefined();
    expect(orphanGoneAt).toBeLessThanOrEqual(bHelmAt ?? 0);
    expect(most, 'helm processes changing the release at once').toBe(1);
    b.crash();
    await waitForExit(b);
  });
});
