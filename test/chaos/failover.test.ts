/**
 * Scenario 4: leader failover under load. Two replicas with leader election; the leader is frozen
 * in the middle of a burst of installs and spec changes until the standby takes the Lease, then
 * thawed: the operator process alone (SIGSTOP: a long GC pause, its helm children run on), or its
 * whole tree with the helm it runs (a cgroup freeze, a VM stall). The thawed replica must
 * stop without running helm again, no key may be worked on by both replicas at once, and the new
 * leader converges everything with no pending release.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { killAll } from '../integration/production/support.js';
import { testKubeConfig, uniqueName } from '../support/kube.js';
import { createNamespaces, helmRunning, operatorUnderTest, sleep, type OperatorUnderTest } from './support/harness.js';
import { descendants, HelmSampler, signalAll, type HelmProcess } from './support/processes.js';
import { recordFault } from './support/report.js';
import { expectIdle, Fleet, specFor } from './support/verdict.js';

const COUNT = Number(process.env.CHAOS_FAILOVER_CRS ?? 40);
/** A parked helm of the thawed leader exits this soon: its post-render is refused at once, or the abort grace (3 s) kills it. */
const PARKED_EXIT_MS = 5_000;
const LEASE = ['--leader-election-lease-duration', '6s', '--leader-election-renew-deadline', '4s', '--leader-election-retry-period', '1s'];

/** What each replica logged about the releases named in `problems`: a failure is explained where it is reported. */
function storyOf(problems: string, replicas: Record<string, { lines: readonly Record<string, unknown>[] }>): string {
  const names = new Set([...problems.matchAll(/\/(fo-\d+)/g)].map((m) => m[1]));
  return Object.entries(replicas)
    .flatMap(([who, r]) => [
      `--- ${who} on ${[...names].join(', ')} ---`,
      ...r.lines
        .filter((l) => names.has(typeof l.name === 'string' ? l.name : typeof l.release === 'string' ? l.release : ''))
        .slice(-60)
        .map((l) => JSON.stringify(l)),
    ])
    .join('\n');
}

describe('leader failover under load', () => {
  const kc = testKubeConfig();
  const outs: OperatorUnderTest[] = [];

  afterAll(async () => {
    await killAll();
    await Promise.all(outs.map(async (o) => o.remove()));
  });

  it.each(['operator', 'tree'] as const)(
    `a frozen leader (%s) under ${COUNT} installs and flapping specs hands over cleanly`,
    { timeout: 300_000 },
    async (frozen) => {
      const NS = uniqueName(`chaos-failover-${frozen}`);
      const kind = `leader frozen (${frozen === 'operator' ? 'SIGSTOP operator' : 'SIGSTOP operator + helm'}) under load`;
      await createNamespaces(kc, [NS]);
      const out = await operatorUnderTest(kc, [NS]);
      outs.push(out);
      const fleet = new Fleet(kc);
      const args = [
        '--leader-elect',
        '--leader-election-id',
        'chaos-failover',
        '--leader-election-namespace',
        NS,
        '--zap-log-level',
        'debug',
        ...LEASE,
      ];
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
      const tree = frozen === 'operator' ? [a.pid] : [a.pid, ...descendants(a.pid)];
      signalAll(tree, 'SIGSTOP');
      const frozenAt = Date.now();
      let aExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
      try {
        const took = await b.waitForLog('b to take the lease', (l) => l.msg === 'successfully acquired lease', 60_000);
        const leadAt = Date.parse(String(took.time));
        for (let rev = 6; rev <= 8; rev++) {
          await Promise.all(flapping.map((n) => fleet.setSpec(NS, n, specFor(rev))));
          await sleep(300);
        }
        signalAll(tree, 'SIGCONT');
        const thawedAt = Date.now();
        aExit = await Promise.race([a.exited, sleep(20_000).then(() => undefined)]);
        const ms = await fleet.converge(240_000, frozenAt).catch((err: unknown) => {
          throw new Error(`${(err as Error).message}\n${storyOf(String(err), { a, b })}`, { cause: err });
        });

        const runs = helm.stop();
        const of = (owner: string): HelmProcess[] => runs.filter((r) => r.owner === owner);
        // By fork time: a child forked just before the freeze execs helm only after the thaw.
        const forkedAfterLoss = of('a').filter((r) => r.started > leadAt);
        // Except one killed before its first request: paused between the fence's check and the fork,
        // the old leader resumes, forks, asks the fence again and kills it (runner.ts). helm starts
        // for 150 ms or more before it connects, longer on a machine busy with all that thawed.
        const killedAtFork = (r: HelmProcess): boolean => !r.connected && r.last <= thawedAt + PARKED_EXIT_MS;
        const afterLoss = forkedAfterLoss.filter((r) => !killedAtFork(r));
        if (forkedAfterLoss.length > afterLoss.length)
          console.log(
            `helm forked by the old leader after the loss and killed before its first request: ${forkedAfterLoss
              .filter(killedAtFork)
              .map((r) => `${r.release} ${r.verb}, seen ${r.first - r.started}-${r.last - r.started} ms after its fork`)
              .join('; ')}`,
          );
        // Sampled every 10 ms: two processes seen alive in overlapping windows ran at the same time,
        // unless the old leader's was parked in its post-render all along (helm has stored and
        // applied nothing before it; the operator, frozen, could not answer) and was gone soon after
        // the thaw (the thawed operator refuses the post-render: its lease is lost).
        const parked = (x: HelmProcess, from: number): boolean =>
          x.unparked.every((t) => t < from || t > thawedAt) && x.last <= thawedAt + PARKED_EXIT_MS;
        const overlaps = of('a').flatMap((x) =>
          of('b')
            .filter((y) => y.release === x.release && y.first <= x.last && x.first <= y.last && !parked(x, Math.max(x.first, y.first)))
            .map((y) => `${x.release}: a ${x.verb} and b ${y.verb}`),
        );
        expect(aExit, `the thawed leader exits\n${a.dump().slice(-3000)}`).toEqual({ code: 1, signal: null });
        const late = afterLoss.map((r) => `${r.release} ${r.verb}`);
        expect(
          late,
          `helm runs by the old leader after the new one led (at ${leadAt}; thawed at ${thawedAt}): ${afterLoss.map((r) => `${r.release} forked at ${r.started}, seen ${r.first}-${r.last}${r.connected ? ', connected' : ''}`).join('; ')}\n${storyOf(late.map((l) => `/${l}`).join(' '), { a })}`,
        ).toEqual([]);
        if (frozen === 'operator') expect(overlaps, 'keys worked on by both replicas at once').toEqual([]);
        // A frozen helm process is a writer no lease can fence: helm's release storage has no owner
        // check, so the new leader unlocks (rolls back / removes) a pending release while the frozen
        // helm still exists. Convergence afterwards is asserted; the overlap is reported, not failed
        // (docs/chaos.md, open findings).
        else if (overlaps.length > 0) console.log(`frozen helm processes overlapping the new leader's work: ${overlaps.join('; ')}`);
        expect(of('b').length).toBeGreaterThan(0);
        // The sampler sees helm's connection at all (else killedAtFork would excuse anything).
        expect(of('b').filter((r) => r.connected).length, 'helm runs of the new leader seen connected').toBeGreaterThan(0);
        recordFault(kind, true, ms);
      } catch (err) {
        helm.stop();
        recordFault(kind, false, null);
        if (aExit === undefined) signalAll(tree, 'SIGCONT');
        throw err;
      }
      await expectIdle(b.pid);
    },
  );
});
