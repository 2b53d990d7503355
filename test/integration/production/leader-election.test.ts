import { CoordinationV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, V1MicroTime } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStatus } from '../../../src/k8s/errors.js';
import { createNamespace, testKubeConfig, uniqueName, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, NGINX, NGINX_CHART } from '../../support/operator.js';
import { killAll, probe, sample, scrape, spawnOperator, watchEntry, watchesFile, type OperatorProcess } from './support.js';

const CONTROLLER = 'nginx-controller';

/** Reconciles counted by a process, whatever their result label. */
async function reconciles(p: OperatorProcess): Promise<number | undefined> {
  const text = await scrape(await p.metricsUrl());
  const results = ['success', 'error', 'requeue', 'requeue_after'].map((result) =>
    sample(text, 'controller_runtime_reconcile_total', { controller: CONTROLLER, result }),
  );
  return results.every((r) => r === undefined) ? undefined : results.reduce<number>((a, b) => a + (b ?? 0), 0);
}

describe('leader election between two operator processes', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NGINX);
  const leases = kc.makeApiClient(CoordinationV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let watches: Awaited<ReturnType<typeof watchesFile>>;
  const leaseName = uniqueName('helm-operator-le');

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'prod-leader');
    watches = await watchesFile(watchEntry(NGINX, NGINX_CHART));
  });
  afterAll(async () => {
    await killAll();
    await ns.remove();
    await watches.remove();
  });

  const holder = async () => (await leases.readNamespacedLease({ name: leaseName, namespace: ns.name })).spec;
  /** When the Lease was last renewed, in ms (the client hands a MicroTime over as a string). */
  const renewed = async (): Promise<number> => new Date((await holder())?.renewTime ?? 0).getTime();
  /** Waits until the Lease `name` names `p` its holder. */
  const leading = async (name: string, p: OperatorProcess): Promise<void> => {
    const identity = await p.identity();
    await waitFor(`${identity} to hold Lease ${name}`, async () => {
      try {
        return (await leases.readNamespacedLease({ name, namespace: ns.name })).spec?.holderIdentity === identity;
      } catch (err) {
        if (isStatus(err, 404)) return false;
        throw err;
      }
    });
  };
  /** Waits until `p` registered its controller (its reconcile counter is served), which it does only as leader. */
  const controllerStarted = (p: OperatorProcess): Promise<boolean> =>
    waitFor(`${p.pid} to start its controller`, async () => (await reconciles(p)) !== undefined);
  /**
   * A standby that has not won leaves no trace to observe: it never writes the Lease, and its
   * metrics read as before it looked. Its log line is the only sign it read the Lease.
   */
  const standingBy = (p: OperatorProcess, description: string): Promise<unknown> =>
    p.waitForLog(description, (l) => l.msg === 'lease is held by another candidate; waiting');

  it(
    'exactly one replica reconciles; after SIGKILL the standby takes over within the lease duration plus a few seconds',
    { timeout: 240_000 },
    async () => {
      const args = ['--leader-elect', '--leader-election-id', leaseName, '--leader-election-namespace', ns.name];
      const a = spawnOperator({ watchesFile: watches.file, namespace: ns.name, args });
      await leading(leaseName, a);
      await controllerStarted(a);
      const b = spawnOperator({ watchesFile: watches.file, namespace: ns.name, args });
      await standingBy(b, 'b to see the lease held');
      const [idA, idB] = [await a.identity(), await b.identity()];
      expect(idA).not.toBe(idB);
      expect((await holder())?.holderIdentity).toBe(idA);

      await crs.create(ns.name, 'first', { replicaCount: 1 });
      await crs.waitForCondition(ns.name, 'first', { type: 'Deployed', status: 'True' });
      // b polls the Lease every retry period (2 s): two renewals by a later it has looked at least once more.
      const renewedAt = await renewed();
      await waitFor('a to renew the Lease twice', async () => (await renewed()) >= renewedAt + 4_000, { timeoutMs: 20_000 });
      expect(await reconciles(a)).toBeGreaterThan(0);
      expect(await reconciles(b)).toBeUndefined(); // the standby never started a controller
      expect(sample(await scrape(await a.metricsUrl()), 'leader_election_master_status', { name: leaseName })).toBe(1);
      expect(sample(await scrape(await b.metricsUrl()), 'leader_election_master_status', { name: leaseName })).toBe(0);
      // A standby is ready (see docs/adr/0004): a rolling update must not wait for it to lead.
      expect((await probe(await b.healthUrl(), '/readyz')).status).toBe(200);
      expect((await probe(await a.healthUrl(), '/readyz')).status).toBe(200);

      const killedAt = Date.now();
      a.child.kill('SIGKILL');
      await a.exited;
      await crs.create(ns.name, 'second', { replicaCount: 1 });
      const leaseMs = 15_000;
      await crs.waitForCondition(ns.name, 'second', { type: 'Deployed', status: 'True' }, { timeoutMs: leaseMs + 20_000 });
      const tookOverMs = Date.now() - killedAt;
      // Worst case: lease 15 s + up to one renew period before the kill + two jittered retries (2–4.4 s)
      // of the standby + the install; the measured time is printed for the report.
      console.log(`standby converged a new CR ${tookOverMs} ms after the leader was killed`);
      expect(tookOverMs).toBeLessThan(leaseMs + 15_000);
      const lease = await holder();
      expect(lease?.holderIdentity).toBe(idB);
      expect(lease?.leaseTransitions).toBe(1);
      expect(await reconciles(b)).toBeGreaterThan(0);
      expect(sample(await scrape(await b.metricsUrl()), 'leader_election_master_status', { name: leaseName })).toBe(1);

      // Clean up through the operator (finalizers), then a graceful stop releases the lease.
      await crs.delete(ns.name, 'first');
      await crs.delete(ns.name, 'second');
      await crs.waitForGone(ns.name, 'first');
      await crs.waitForGone(ns.name, 'second');
      const exit = await b.stop();
      expect(exit).toEqual({ code: 0, signal: null });
      const released = await holder();
      expect(released?.holderIdentity ?? '').toBe('');
      expect(released?.leaseDurationSeconds).toBe(1);
    },
  );

  it('a standby stopped before it ever leads exits 0 without touching the lease', { timeout: 60_000 }, async () => {
    const name = uniqueName('helm-operator-le2');
    const args = ['--leader-elect', '--leader-election-id', name, '--leader-election-namespace', ns.name];
    const leader = spawnOperator({ watchesFile: watches.file, namespace: ns.name, args });
    await leading(name, leader);
    const standby = spawnOperator({ watchesFile: watches.file, namespace: ns.name, args });
    await standingBy(standby, 'the standby to wait');
    expect(await standby.stop()).toEqual({ code: 0, signal: null });
    const spec = (await leases.readNamespacedLease({ name, namespace: ns.name })).spec;
    expect(spec?.holderIdentity).toBe(await leader.identity());
    expect(await leader.stop()).toEqual({ code: 0, signal: null });
  });

  it('a leader that finds another holder in its Lease stops at once and exits 1', { timeout: 60_000 }, async () => {
    const name = uniqueName('helm-operator-le3');
    const p = spawnOperator({
      watchesFile: watches.file,
      namespace: ns.name,
      args: ['--leader-elect', '--leader-election-id', name, '--leader-election-namespace', ns.name],
    });
    await leading(name, p);
    await controllerStarted(p);
    // Someone else takes the Lease (a replica that misjudged it expired, or an operator by hand).
    const lease = await leases.readNamespacedLease({ name, namespace: ns.name });
    const now = new V1MicroTime();
    await leases.replaceNamespacedLease({
      name,
      namespace: ns.name,
      body: {
        metadata: { name, namespace: ns.name, resourceVersion: lease.metadata?.resourceVersion },
        spec: { holderIdentity: 'intruder', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 1 },
      },
    });
    const stolenAt = Date.now();
    const exit = await p.exited;
    expect(exit.code, p.dump()).toBe(1);
    expect(Date.now() - stolenAt).toBeLessThan(10_000); // the next renewal (every 2 s) sees it
    expect(p.other.join('\n')).toMatch(/error: leader election lost: .*held by intruder/);
    expect((await leases.readNamespacedLease({ name, namespace: ns.name })).spec?.holderIdentity).toBe('intruder');
  });

  it(
    "after taking the Lease, reconciles every CR once more: a release a previous leader's helm marked failed late is repaired",
    { timeout: 120_000 },
    async () => {
      const name = uniqueName('helm-operator-settle');
      const core = kc.makeApiClient(CoreV1Api);
      // Lease 4 s, renew deadline 3 s: the resync comes 2 x 7 s after this replica leads. The reconcile
      // period is far away, so nothing else would look at the release again within this test.
      const timing = [
        '--leader-election-lease-duration',
        '4s',
        '--leader-election-renew-deadline',
        '3s',
        '--leader-election-retry-period',
        '1s',
        '--reconcile-period',
        '10m',
      ];
      const p = spawnOperator({
        watchesFile: watches.file,
        namespace: ns.name,
        args: ['--leader-elect', '--leader-election-id', name, '--leader-election-namespace', ns.name, ...timing],
      });
      await leading(name, p);
      await crs.create(ns.name, 'late', { replicaCount: 1 });
      await crs.waitForCondition(ns.name, 'late', { type: 'Deployed', status: 'True' });
      const release = async () => (await core.listNamespacedSecret({ namespace: ns.name, labelSelector: 'owner=helm,name=late' })).items;
      const [stored] = await release();
      expect(stored?.metadata?.labels?.status).toBe('deployed');
      // What a thawed helm of the previous leader leaves when its operator cancels it after the takeover.
      await core.patchNamespacedSecret(
        { namespace: ns.name, name: stored?.metadata?.name ?? '', body: { metadata: { labels: { status: 'failed' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      const repaired = await waitFor(
        'the release deployed again',
        async () => {
          const now = await release();
          return now.length > 0 &&
            now.every((s) => s.metadata?.labels?.status !== 'failed') &&
            now.some((s) => s.metadata?.labels?.status === 'deployed')
            ? now
            : undefined;
        },
        { timeoutMs: 60_000 },
      );
      expect(repaired.map((s) => s.metadata?.labels?.status)).toEqual(['deployed']);
    },
  );

  it('out of cluster, --leader-elect without a namespace is a clear start-up error', { timeout: 60_000 }, async () => {
    const p = spawnOperator({ watchesFile: watches.file, namespace: ns.name, args: ['--leader-elect', '--leader-election-id', 'x'] });
    const exit = await p.exited;
    expect(exit.code).toBe(1);
    expect(p.other.join('\n')).toMatch(/--leader-election-namespace is required with --leader-elect when not running in a cluster/);
  });
});
