import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { SHARD_RELEASE_LABEL } from '../../../src/operator/operator.js';
import { namespaceBucket, bucketOwner, SHARD_BUCKETS } from '../../../src/runtime/shard-assignment.js';
import { fenceBucket, identityDigest } from '../../../src/runtime/shard-coordinator.js';
import { weightsInUse } from '../../../src/runtime/shard-balance.js';
import { KubeShardLeaseStore } from '../../../src/runtime/shard-lease-store.js';
import { createNamespace, testKubeConfig, uniqueName, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, NGINX, NGINX_CHART } from '../../support/operator.js';
import { killAll, spawnOperator, watchEntry, watchesFile, type OperatorProcess } from './support.js';

/**
 * The default timings (15 s / 10 s / 2 s): with a 4 s renew deadline, a replica on this loaded
 * 2-core machine (load ~20) missed its renewals while starting and, rightly, left the group.
 */
const LEASE: string[] = [];
/**
 * This test names the fence every revision was made under from two snapshots, before and after
 * the kill: it turns off balancing by CRs, whose handoffs would add epochs between them. The chaos
 * tier, which judges revisions against the whole Lease timeline, runs with it on (docs/adr/0113).
 */
const BY_BUCKET_COUNT = ['--shard-rebalance-period', '0'];
/** CRs per namespace: 20 in 6 namespaces. */
const PER_NAMESPACE = [4, 4, 3, 3, 3, 3];

interface Fence {
  readonly holder: string;
  readonly epoch: number;
}

describe('sharding: three operator processes share the namespaces (docs/adr/0085)', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NGINX);
  const storage = new ReleaseStorage(kc);
  const group = uniqueName('shards');
  let home: Awaited<ReturnType<typeof createNamespace>>;
  const tenants: Awaited<ReturnType<typeof createNamespace>>[] = [];
  let watches: Awaited<ReturnType<typeof watchesFile>>;

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    home = await createNamespace(kc, 'shard-home');
    for (let i = 0; i < PER_NAMESPACE.length; i++) tenants.push(await createNamespace(kc, `shard-t${i}`));
    watches = await watchesFile(watchEntry(NGINX, NGINX_CHART));
  });
  afterAll(async () => {
    await killAll();
    await Promise.all([home, ...tenants].map((n) => n.remove()));
    await watches.remove();
  });

  /** The group's fence Leases by bucket, and the weights the group assigns by (docs/adr/0113). */
  const fences = async (identities: readonly string[]): Promise<{ by: Map<number, Fence>; weights: readonly number[] | undefined }> => {
    const all = await new KubeShardLeaseStore(kc, home.name, group).list();
    const by = new Map<number, Fence>();
    for (const l of all) {
      const b = l.role === 'fence' ? fenceBucket(group, l.name) : undefined;
      if (b !== undefined) by.set(b, { holder: l.record.holderIdentity, epoch: l.record.leaseTransitions });
    }
    return { by, weights: weightsInUse(all, new Set(identities)) };
  };
  let procs: OperatorProcess[] = [];
  /** A failed wait says what the replicas logged last. */
  const withLogs = async <T>(wait: Promise<T>): Promise<T> => {
    try {
      return await wait;
    } catch (err) {
      const tails = procs.map(
        (p, i) => `--- replica ${i} (exit ${String(p.child.exitCode)}) ---\n${p.dump().split('\n').slice(-15).join('\n')}`,
      );
      throw new Error(`${(err as Error).message}\n${tails.join('\n')}`, { cause: err });
    }
  };
  /** Waits until every bucket's fence is held by its rendezvous owner among `identities`: the group is settled. */
  const settled = (identities: readonly string[]): Promise<Map<number, Fence>> =>
    withLogs(
      waitFor(
        `every fence held by its rendezvous owner among ${identities.length} replicas`,
        async () => {
          const { by, weights } = await fences(identities);
          for (let b = 0; b < SHARD_BUCKETS; b++)
            if (by.get(b)?.holder !== bucketOwner(b, identities, SHARD_BUCKETS, weights)) return undefined;
          return by;
        },
        { timeoutMs: 90_000, intervalMs: 500 },
      ),
    );
  const label = (f: Fence, bucket: number): string => `b${bucket}-e${f.epoch}-${identityDigest(f.holder)}`;
  /** Every CR's release revisions, with the share each was made under. */
  const revisions = async (): Promise<
    { namespace: string; release: string; revision: number; status: string; shard: string | undefined }[]
  > => {
    const all = await Promise.all(
      tenants.flatMap((ns, i) =>
        names(i).map(async (name) =>
          (await storage.records(ns.name, name)).map((r) => ({
            namespace: ns.name,
            release: name,
            revision: r.revision,
            status: r.status,
            shard: r.labels[SHARD_RELEASE_LABEL],
          })),
        ),
      ),
    );
    return all.flat();
  };
  /** Runs `fn` on every CR, one after the other. */
  const eachCr = async (fn: (namespace: string, name: string) => Promise<unknown>): Promise<void> => {
    for (const [i, ns] of tenants.entries()) for (const name of names(i)) await fn(ns.name, name);
  };
  const names = (i: number): string[] => Array.from({ length: PER_NAMESPACE[i] ?? 0 }, (_, j) => `web-${j}`);
  /** Waits until every CR's release has `revision` deployed and its status reports the CR's generation. */
  const converged = (revision: number): Promise<unknown> =>
    Promise.all(
      tenants.flatMap((ns, i) =>
        names(i).map((name) =>
          waitFor(
            `${ns.name}/${name} at revision ${revision}`,
            async () => {
              const cr = await crs.get(ns.name, name);
              const deployed = cr?.status?.conditions?.find((c) => c.type === 'Deployed')?.status === 'True';
              const records = await storage.records(ns.name, name);
              return (
                deployed &&
                cr.status?.observedGeneration === cr.metadata.generation &&
                records.some((r) => r.revision === revision && r.status === 'deployed')
              );
            },
            { timeoutMs: 240_000, intervalMs: 1_000 },
          ),
        ),
      ),
    );

  /** After the kill: revision 2 everywhere by the current fence holder, none by the victim, every revision under a fence that was held. */
  const madeUnderFences = async (
    before: Map<number, Fence>,
    after: Map<number, Fence>,
    victimId: string,
    survivors: readonly string[],
  ): Promise<void> => {
    const all = await revisions();
    const second = all.filter((r) => r.revision === 2);
    expect(second).toHaveLength(20);
    for (const r of second) {
      const bucket = namespaceBucket(r.namespace);
      const fence = after.get(bucket);
      if (fence !== undefined) expect(r.shard, `${r.namespace}/${r.release} revision 2`).toBe(label(fence, bucket));
      expect(r.shard).not.toContain(identityDigest(victimId));
    }
    // Every revision was made under a fence some replica held then: the one before the kill or the one after.
    const held = new Set([...before, ...after].map(([b, f]) => label(f, b)));
    for (const r of all) expect(held.has(r.shard ?? 'none'), `${r.namespace}/${r.release} revision ${r.revision}: ${r.shard}`).toBe(true);
    // The victim's buckets moved: a new epoch, by a survivor.
    for (const [b, f] of before) {
      if (f.holder !== victimId) continue;
      expect(after.get(b)?.epoch).toBeGreaterThan(f.epoch);
      expect(survivors).toContain(after.get(b)?.holder);
    }
  };

  /** Exactly one replica per namespace, and it is the holder of the namespace's fence. */
  const installedByFenceHolders = async (before: Map<number, Fence>): Promise<void> => {
    const first = await revisions();
    expect(first).toHaveLength(20);
    for (const r of first) {
      const bucket = namespaceBucket(r.namespace);
      const fence = before.get(bucket);
      expect(fence, `fence of bucket ${bucket}`).toBeDefined();
      if (fence !== undefined) expect(r.shard, `${r.namespace}/${r.release} revision ${r.revision}`).toBe(label(fence, bucket));
    }
    const holders = new Set(first.map((r) => r.shard?.split('-')[2]));
    console.log(`20 CRs in 6 namespaces installed by ${holders.size} of 3 replicas`);
  };

  it(
    'each namespace is reconciled by the one replica holding its share; after SIGKILL the survivors take it over, and no revision is made outside a fence',
    { timeout: 600_000 },
    async () => {
      const args = [
        '--leader-elect',
        '--sharding',
        '--leader-election-id',
        group,
        '--leader-election-namespace',
        home.name,
        ...LEASE,
        ...BY_BUCKET_COUNT,
      ];
      const env = { WATCH_NAMESPACE: tenants.map((t) => t.name).join(',') };
      procs = [0, 1, 2].map(() => spawnOperator({ watchesFile: watches.file, namespace: home.name, args, env }));
      // Three processes compiling the operator at once on a busy machine: give the start-up line time.
      const identities = await Promise.all(
        procs.map(async (p) =>
          String((await p.waitForLog('the start-up line', (l) => l.msg === 'Starting helm-operator', 240_000)).identity),
        ),
      );
      expect(new Set(identities).size).toBe(3);
      const before = await settled(identities);

      await eachCr((ns, name) => crs.create(ns, name, { replicaCount: 1 }));
      await withLogs(converged(1));

      await installedByFenceHolders(before);

      // Kill the replica holding the first namespace's share, then change every CR.
      const victimIndex = identities.indexOf(before.get(namespaceBucket(tenants[0]?.name ?? ''))?.holder ?? '');
      expect(victimIndex).toBeGreaterThanOrEqual(0);
      const victim = procs[victimIndex];
      const victimId = identities[victimIndex] ?? '';
      victim?.child.kill('SIGKILL');
      await victim?.exited;
      await eachCr((ns, name) => crs.patch(ns, name, { spec: { replicaCount: 2 } }));
      const survivors = identities.filter((id) => id !== victimId);
      const after = await settled(survivors);
      await withLogs(converged(2));

      await madeUnderFences(before, after, victimId, survivors);

      // Clean up through the survivors (finalizers), then a graceful stop releases their Leases.
      await eachCr((ns, name) => crs.delete(ns, name));
      await eachCr((ns, name) => crs.waitForGone(ns, name, { timeoutMs: 120_000 }));
      for (const p of procs) if (p !== victim) expect(await p.stop()).toEqual({ code: 0, signal: null });
      const released = await fences(identities);
      for (const [b, f] of released.by) expect(f.holder, `bucket ${b}`).toBe('');
    },
  );
});
