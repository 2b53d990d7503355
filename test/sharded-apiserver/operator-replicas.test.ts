/**
 * The production wiring on the sharded control plane (docs/adr/0103): two `helm-operator run
 * --leader-elect --sharding` processes (every namespace watched) probe the server at start, find
 * that it filters (`helm_operator_shard_watch_filter{mode="server"} 1`), and with their dependent
 * informers asking the server for their share, a CR in each of four namespaces, two per replica,
 * converges, installed by the replica that owns its namespace.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { ReleaseStorage } from '../../src/helm/storage.js';
import { SHARD_RELEASE_LABEL } from '../../src/operator/operator.js';
import { namespaceBucket, bucketOwner, SHARD_BUCKETS } from '../../src/runtime/shard-assignment.js';
import { fenceBucket, identityDigest } from '../../src/runtime/shard-coordinator.js';
import { SHARD_LABELS } from '../../src/runtime/shard-lease-store.js';
import { createNamespace, testKubeConfig, uniqueName, waitFor } from '../support/kube.js';
import { CRs, ensureCrd, NGINX, NGINX_CHART } from '../support/operator.js';
import {
  killAll,
  sample,
  scrape,
  spawnOperator,
  watchEntry,
  watchesFile,
  type OperatorProcess,
} from '../integration/production/support.js';

describe('sharded replicas ask the API server for their share', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NGINX);
  const storage = new ReleaseStorage(kc);
  const leases = kc.makeApiClient(CoordinationV1Api);
  const group = uniqueName('kep-shards');
  let home: Awaited<ReturnType<typeof createNamespace>>;
  const tenants: Awaited<ReturnType<typeof createNamespace>>[] = [];
  let watches: Awaited<ReturnType<typeof watchesFile>>;
  let procs: OperatorProcess[] = [];

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    home = await createNamespace(kc, 'kep-home');
    watches = await watchesFile(watchEntry(NGINX, NGINX_CHART, '  watchDependentResources: true\n'));
  });
  afterAll(async () => {
    await killAll();
    await Promise.all([home, ...tenants].map((n) => n.remove()));
    await watches.remove();
  });

  const dumps = (): string => procs.map((p, i) => `--- replica ${i} ---\n${p.dump().split('\n').slice(-15).join('\n')}`).join('\n');
  const withLogs = async <T>(wait: Promise<T>): Promise<T> =>
    wait.catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${dumps()}`, { cause: err });
    });

  it("probes server-side filtering and converges each replica's CRs with share-only informers", { timeout: 600_000 }, async () => {
    const args = ['--leader-elect', '--sharding', '--leader-election-id', group, '--leader-election-namespace', home.name];
    // Every namespace: the CR and dependent informers are cluster-wide, cut by the share alone.
    procs = [0, 1].map(() => spawnOperator({ watchesFile: watches.file, namespace: home.name, args, env: { WATCH_NAMESPACE: '' } }));
    for (const p of procs) {
      const line = await p.waitForLog('the share probe', (l) => typeof l.msg === 'string' && l.msg.startsWith('Informers watch'), 240_000);
      expect(line.mode, `${String(line.reason)}\n${dumps()}`).toBe('server');
      const text = await scrape(await p.metricsUrl());
      expect(sample(text, 'helm_operator_shard_watch_filter', { mode: 'server' })).toBe(1);
      expect(sample(text, 'helm_operator_shard_watch_filter', { mode: 'client' })).toBe(0);
    }
    const identities = await Promise.all(procs.map((p) => p.identity()));
    // Settled: every fence held by its rendezvous owner among both replicas.
    await withLogs(
      waitFor(
        'every fence held by its rendezvous owner',
        async () => {
          const list = await leases.listNamespacedLease({
            namespace: home.name,
            labelSelector: `${SHARD_LABELS.group}=${group},${SHARD_LABELS.role}=fence`,
          });
          const held = new Map(list.items.map((l) => [fenceBucket(group, l.metadata?.name ?? ''), l.spec?.holderIdentity]));
          for (let b = 0; b < SHARD_BUCKETS; b++) if (held.get(b) !== bucketOwner(b, identities)) return false;
          return true;
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      ),
    );
    for (const id of identities) {
      for (let i = 0; i < 2; i++) {
        tenants.push(await createNamespace(kc, 'kep-t', (n) => bucketOwner(namespaceBucket(n), identities) === id));
      }
    }
    for (const t of tenants) await crs.create(t.name, 'web', { replicaCount: 1 });
    const holders = new Set<string>();
    for (const t of tenants) {
      await withLogs(
        waitFor(
          `${t.name}/web deployed`,
          async () => (await crs.get(t.name, 'web'))?.status?.conditions?.find((c) => c.type === 'Deployed')?.status === 'True',
          { timeoutMs: 240_000, intervalMs: 1_000 },
        ),
      );
      const [record] = await storage.records(t.name, 'web');
      const holder = record?.labels[SHARD_RELEASE_LABEL]?.split('-')[2] ?? '';
      const owner = bucketOwner(namespaceBucket(t.name), identities) ?? '';
      expect(holder, `${t.name}/web installed by its namespace's owner`).toBe(identityDigest(owner));
      holders.add(holder);
    }
    expect(holders.size).toBe(2);
    // Each replica's dependents cache holds its own releases' Deployments, which the server sent
    // because the selector names the namespaces its CR informer saw (ADR 0110), and no one else's.
    for (const [i, p] of procs.entries()) {
      const mine = tenants.filter((t) => bucketOwner(namespaceBucket(t.name), identities) === identities[i]).length;
      await withLogs(
        waitFor(
          `replica ${i}'s dependents cache to hold its ${mine} Deployments`,
          async () =>
            sample(await scrape(await p.metricsUrl()), 'helm_operator_informer_objects', { cache: 'dependent', kind: 'Deployment' }) ===
            mine,
          { timeoutMs: 60_000, intervalMs: 1_000 },
        ),
      );
    }
  });
});
