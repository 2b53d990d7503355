/**
 * Scenario 2: the operator SIGKILLed (with the helm it runs, as the OOM killer or a node loss does)
 * during install, upgrade, rollback and uninstall at seeded random points, and the helm child
 * SIGKILLed alone. After each fault a fresh operator must converge every CR with no pending release.
 */
import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../src/helm/storage.js';
import { killAll, type OperatorProcess } from '../integration/production/support.js';
import { testKubeConfig, uniqueName } from '../support/kube.js';
import { createNamespaces, helmRunning, operatorUnderTest, seededRandom, sleep, type OperatorUnderTest } from './support/harness.js';
import { alive, helmChildren, killTree } from './support/processes.js';
import { recordFault } from './support/report.js';
import { deploymentName, expectIdle, Fleet, specFor } from './support/verdict.js';

const N = Number(process.env.CHAOS_KILLS ?? 3);
const NS = uniqueName('chaos-kill');
const CONVERGE_MS = 120_000;

describe('operator and helm SIGKILL', () => {
  const kc = testKubeConfig();
  const fleet = new Fleet(kc);
  const storage = new ReleaseStorage(kc);
  const apps = kc.makeApiClient(AppsV1Api);
  const random = seededRandom(2);
  let out: OperatorUnderTest;
  let op: OperatorProcess;
  let rev = 0;

  beforeAll(async () => {
    await createNamespaces(kc, [NS]);
    out = await operatorUnderTest(kc, [NS]);
    op = await out.start();
  });
  afterAll(async () => {
    await killAll();
    await out.remove();
  });

  /** Kills the operator tree `0–delayMs` after helm `verb` started, restarts it and waits for the verdict. */
  async function killDuring(kind: string, verb: string, trigger: () => Promise<void>, delayMs = 400): Promise<void> {
    await trigger();
    await helmRunning(op.pid, verb);
    await sleep(Math.floor(random() * delayMs));
    killTree(op.pid);
    const killedAt = Date.now();
    await op.exited;
    await recover(kind, killedAt);
  }

  async function recover(kind: string, since: number): Promise<void> {
    try {
      op = await out.start();
      const ms = await fleet.converge(CONVERGE_MS, since);
      recordFault(kind, true, ms);
    } catch (err) {
      recordFault(kind, false, null);
      throw err;
    }
  }

  /** Waits for the operator to run one `helm uninstall` for two releases or more; returns its pid. */
  async function batchedUninstallRunning(pid: number, timeoutMs = 30_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      // Release names follow `--` (src/helm/args.ts).
      const batch = helmChildren(pid).find(
        (c) => c.verb === 'uninstall' && c.args.length - c.args.indexOf('--') - 1 >= 2 && c.args.includes('--'),
      );
      if (batch !== undefined) return batch.pid;
      await sleep(5);
    }
    throw new Error(`the operator ran no batched helm uninstall within ${timeoutMs} ms`);
  }

  /** Steps helm in short slices until its pending-upgrade record is stored; leaves it frozen then. */
  async function freezeWhenPending(name: string, helm: number): Promise<boolean> {
    while (alive(helm)) {
      process.kill(helm, 'SIGSTOP');
      if ((await storage.records(NS, name)).some((r) => r.status === 'pending-upgrade')) return true;
      process.kill(helm, 'SIGCONT');
      await sleep(20);
    }
    return false;
  }

  it(`survives ${N} kills during install`, async () => {
    for (let i = 0; i < N; i++) {
      await killDuring('operator SIGKILL: install', 'install', async () => {
        await fleet.create(NS, `inst-${i}`, specFor(++rev));
        await fleet.create(NS, `inst-${i}b`, specFor(++rev));
      });
    }
    await expectIdle(op.pid);
  });

  it(`survives ${N} kills during upgrade`, async () => {
    for (let i = 0; i < N; i++) {
      await killDuring('operator SIGKILL: upgrade', 'upgrade', async () => {
        await fleet.setSpec(NS, `inst-${i}`, specFor(++rev, 1));
      });
    }
    await expectIdle(op.pid);
  });

  /**
   * A kill inside `helm upgrade` after helm stored the pending revision leaves the release locked;
   * the next operator rolls it back (#unlock), and that rollback is killed in turn.
   */
  it(`survives ${N} kills during rollback`, async () => {
    for (let i = 0; i < N; i++) {
      const name = `inst-${i}b`;
      let locked = false;
      for (let attempt = 0; attempt < 5 && !locked; attempt++) {
        await fleet.setSpec(NS, name, specFor(++rev));
        locked = await freezeWhenPending(name, await helmRunning(op.pid, 'upgrade'));
        if (!locked) await fleet.converge(CONVERGE_MS);
      }
      expect(locked, 'a helm upgrade was caught with its pending-upgrade record stored').toBe(true);
      killTree(op.pid);
      await op.exited;
      op = await out.start();
      await helmRunning(op.pid, 'rollback');
      await sleep(Math.floor(random() * 300));
      killTree(op.pid);
      const killedAt = Date.now();
      await op.exited;
      await recover('operator SIGKILL: rollback', killedAt);
    }
    await expectIdle(op.pid);
  });

  /**
   * Waits until the operator is uninstalling `name`: with helm (a `helm uninstall` child), or by
   * itself (ADR 0066: no helm, the release's Deployment already deleted, its storage maybe not yet).
   */
  async function uninstallUnderway(name: string, timeoutMs = 30_000): Promise<'helm' | 'operator'> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (helmChildren(op.pid).some((c) => c.verb === 'uninstall')) return 'helm';
      const deployment = await apps.readNamespacedDeployment({ namespace: NS, name: deploymentName(name) }).then(
        () => true,
        () => false,
      );
      if (!deployment) return 'operator';
      await sleep(2);
    }
    throw new Error(`the operator did not start uninstalling ${name} within ${timeoutMs} ms`);
  }

  it(`survives ${N} kills during uninstall, by helm or by the operator itself`, async () => {
    for (let i = 0; i < N; i++) {
      const name = `inst-${i}`;
      await fleet.delete(NS, name);
      // Frozen first (killTree), so a half-done uninstall without helm stays half done: objects
      // deleted, storage left for the next operator, which has not read the release (helm then).
      const by = await uninstallUnderway(name);
      killTree(op.pid);
      const killedAt = Date.now();
      await op.exited;
      await recover(`operator SIGKILL: uninstall (${by === 'helm' ? 'helm' : 'without helm'})`, killedAt);
    }
    await expectIdle(op.pid);
  });

  /**
   * CRs deleted together are uninstalled by one `helm uninstall a b c`; the operator is killed in
   * the middle of it, and the same names are created again and deleted again afterwards (issue 28):
   * no release, and no object, may be left behind by any of these deletions.
   */
  it(`survives ${N} kills during a batched uninstall, the same names created again after each`, async () => {
    const names = Array.from({ length: 8 }, (_, i) => `churn-${i}`);
    const createAll = async (): Promise<void> => {
      for (const name of names) await fleet.create(NS, name, specFor(++rev));
      await fleet.converge(CONVERGE_MS);
    };
    await createAll();
    for (let i = 0; i < N; i++) {
      // Deleted while no operator runs: the next one finds them all being deleted and batches them.
      await op.stop();
      await Promise.all(names.map((name) => fleet.delete(NS, name)));
      op = await out.start();
      await batchedUninstallRunning(op.pid);
      await sleep(Math.floor(random() * 300));
      killTree(op.pid);
      const killedAt = Date.now();
      await op.exited;
      await recover('operator SIGKILL: batched uninstall', killedAt);
      await createAll();
    }
    // And once more with the operator running throughout: all deleted together, then the verdict.
    await Promise.all(names.map((name) => fleet.delete(NS, name)));
    await fleet.converge(CONVERGE_MS);
    await expectIdle(op.pid);
  });

  it(`survives the helm child SIGKILLed alone, ${N + 1} times`, async () => {
    for (let i = 0; i <= N; i++) {
      const verb = i % 2 === 0 ? 'upgrade' : 'install';
      if (verb === 'upgrade') await fleet.setSpec(NS, `inst-${N - 1}b`, specFor(++rev, i % 2));
      else await fleet.create(NS, `helm-kill-${i}`, specFor(++rev));
      const helm = await helmRunning(op.pid, verb);
      await sleep(Math.floor(random() * 300));
      const killedAt = Date.now();
      try {
        process.kill(helm, 'SIGKILL');
      } catch {
        // helm finished first: still a valid random point
      }
      try {
        recordFault(`helm child SIGKILL: ${verb}`, true, await fleet.converge(CONVERGE_MS, killedAt));
      } catch (err) {
        recordFault(`helm child SIGKILL: ${verb}`, false, null);
        throw err;
      }
    }
    await expectIdle(op.pid);
  });
});
