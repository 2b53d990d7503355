/**
 * Scenario 4: leader failover under load. Two replicas with leader election; the leader is frozen
 * (SIGSTOP: a long GC pause, a throttled container, a VM stall) in the middle of a burst of
 * installs and spec changes until the standby takes the Lease, then thawed. The thawed replica must
 * stop without running helm again, no key may be worked on by both replicas at once, and the new
 * leader converges everything with no pending release.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll } from '../integration/production/support.js';
import { testKubeConfig, uniqueName } from '../support/kube.js';
import { createNamespaces, helmRunning, operatorUnderTest, sleep, type OperatorUnderTest } from './support/harness.js';
import { HelmSampler, type HelmProcess } from './support/processes.js';
import { recordFault } from './support/report.js';
import { expectIdle, Fleet, specFor } from './support/verdict.js';

const NS = uniqueName('chaos-failover');
const COUNT = Number(process.env.CHAOS_FAILOVER_CRS ?? 40);
const LEASE = ['--leader-election-lease-duration', '6s', '--leader-election-renew-deadline', '4s', '--leader-election-retry-period', '1s'];

describe('leader failover under load', () => {
  const kc = testKubeConfig();
  const fleet = new Fleet(kc);
  let out: OperatorUnderTest;

  beforeAll(async () => {
    await createNamespaces(kc, [NS]);
    out = await operatorUnderTest(kc, [NS]);
  });
  afterAll(async () => {
    await killAll();
    await out.remove();
  });

  it(`a frozen leader under ${COUNT} installs and flapping specs hands over cleanly`, { timeout: 300_000 }, async () => {
    const args = ['--leader-elect', '--leader-election-id', 'chaos-failover', '--leader-election-namespace', NS, '--zap-log-level', 'debug', ...LEASE];
    const a = await out.start({ args });
    const b = await out.start({ args, ready: false });
    await b.waitForLog('b to stand by', (l) => l.msg === 'lease is held by another candidate; waiting');
    const helm = new HelmSampler(() => ({ a: a.pid, b: b.pid }));
    helm.start();

    const names = Array.from({ length: COUNT }, (_, i) => `fo-${String(i).padStart(2, '0')}`);
    await Promise.all(names.map((n) => fleet.create(NS, n, specFor(0))));
    const flapping = names.slice(0, 5);
    for (let rev = 1; rev <= 5; rev++) {
      await Promise.all(flapping.map((n) => fleet.setSpec(NS, n, specFor(rev))));
      await sleep(100);
    }
    await helmRunning(a.pid, 'install');
    process.kill(a.pid, 'SIGSTOP');
    const frozenAt = Date.now();
    let aExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    try {
      const took = await b.waitForLog('b to take the lease', (l) => l.msg === 'successfully acquired lease', 60_000);
      const leadAt = Date.parse(String(took.time));
      for (let rev = 6; rev <= 8; rev++) {
        await Promise.all(flapping.map((n) => fleet.setSpec(NS, n, specFor(rev))));
        await sleep(300);
      }
      process.kill(a.pid, 'SIGCONT');
      aExit = await Promise.race([a.exited, sleep(20_000).then(() => undefined)]);
      const ms = await fleet.converge(240_000, frozenAt);

      const runs = helm.stop();
      const of = (owner: string): HelmProcess[] => runs.filter((r) => r.owner === owner);
      const afterLoss = of('a').filter((r) => r.first > leadAt);
      // Sampled every 10 ms: two processes seen alive in overlapping windows ran at the same time.
      const overlaps = of('a').flatMap((x) =>
        of('b')
          .filter((y) => y.release === x.release && y.first <= x.last && x.first <= y.last)
          .map((y) => `${x.release}: a ${x.verb} and b ${y.verb}`),
      );
      expect(aExit, `the thawed leader exits\n${a.dump().slice(-3000)}`).toEqual({ code: 1, signal: null });
      expect(afterLoss.map((r) => `${r.release} ${r.verb}`), 'helm runs by the old leader after the new one led').toEqual([]);
      expect(overlaps, 'keys worked on by both replicas at once').toEqual([]);
      expect(of('b').length).toBeGreaterThan(0);
      recordFault('leader SIGSTOP under load (failover)', true, ms);
    } catch (err) {
      helm.stop();
      recordFault('leader SIGSTOP under load (failover)', false, null);
      if (aExit === undefined) process.kill(a.pid, 'SIGCONT');
      throw err;
    }
    await expectIdle(b.pid);
  });
});
