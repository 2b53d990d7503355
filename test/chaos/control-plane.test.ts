/**
 * Scenario 1: the API server, then etcd, goes away for 30 s while the operator installs, upgrades
 * and uninstalls: SIGSTOPped (a hung process), then SIGKILLed and restarted with its own command
 * line. Once it is back, every CR must converge with no pending release and an idle operator.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { killAll, type OperatorProcess } from '../integration/production/support.js';
import { testKubeConfig, waitFor, uniqueName } from '../support/kube.js';
import { createNamespaces, operatorUnderTest, sleep, type OperatorUnderTest } from './support/harness.js';
import { ClusterComponent, helmChildren, type Component } from './support/processes.js';
import { recordFault } from './support/report.js';
import { expectIdle, Fleet, specFor } from './support/verdict.js';

const OUTAGE_MS = Number(process.env.CHAOS_OUTAGE_MS ?? 30_000);
const NS = uniqueName('chaos-cp');

describe('control plane outages', () => {
  const kc = testKubeConfig();
  const fleet = new Fleet(kc);
  let out: OperatorUnderTest;
  let op: OperatorProcess;
  let rev = 0;
  let created = 0;

  beforeAll(async () => {
    await createNamespaces(kc, [NS]);
    out = await operatorUnderTest(kc, [NS]);
    op = await out.start();
    for (let i = 0; i < 6; i++) await fleet.create(NS, `cp-${created++}`, specFor(++rev));
    await fleet.converge(120_000);
  });
  afterAll(async () => {
    await killAll();
    await out.remove();
  });

  const core = kc.makeApiClient(CoreV1Api);
  const apiAnswers = async (): Promise<boolean> => (await core.readNamespace({ name: NS })).metadata?.name === NS;

  for (const name of ['kube-apiserver', 'etcd'] as Component[]) {
    it(
      `${name} stopped then killed and restarted: ${OUTAGE_MS / 1000} s during installs, upgrades and uninstalls`,
      { timeout: 240_000 },
      async () => {
        const component = new ClusterComponent(name);
        const kind = `${name} down ${OUTAGE_MS / 1000}s`;
        // Work in flight: three installs, three upgrades, two uninstalls.
        const live = fleet.names(NS);
        await Promise.all([
          ...[0, 1, 2].map(async () => fleet.create(NS, `cp-${created++}`, specFor(++rev))),
          ...live.slice(-3).map(async (n) => fleet.setSpec(NS, n, specFor(++rev, 1))),
          ...live.slice(0, 2).map(async (n) => fleet.delete(NS, n)),
        ]);
        await waitFor('the operator to run helm', () => Promise.resolve(helmChildren(op.pid).some((h) => h.verb !== 'version')), {
          timeoutMs: 30_000,
          intervalMs: 5,
        });
        // controller-manager and scheduler exit when they cannot renew their leases during the outage;
        // in a cluster the kubelet restarts them, here the test does (later scenarios need their Jobs, Pods).
        const supervised = (['kube-controller-manager', 'kube-scheduler'] as const).map((n) => {
          const c = new ClusterComponent(n);
          return { c, restart: c.snapshot() };
        });
        try {
          component.stop();
          await sleep(OUTAGE_MS / 2);
          const restart = component.kill();
          await sleep(OUTAGE_MS / 2);
          restart.start();
          const restarted = Date.now();
          await waitFor(`${name} to answer again`, apiAnswers, { timeoutMs: 60_000, intervalMs: 500 });
          for (const { c, restart } of supervised) if (!c.running()) restart.start();
          if (op.child.exitCode !== null || op.child.signalCode !== null)
            throw new Error(`the operator exited during the outage:\n${op.dump().slice(-4000)}`);
          const ms = await fleet.converge(150_000, restarted);
          recordFault(kind, true, ms);
          for (const { c, restart: again } of supervised) if (!c.running()) again.start();
        } catch (err) {
          recordFault(kind, false, null);
          throw err;
        }
        await expectIdle(op.pid);
      },
    );
  }
});
