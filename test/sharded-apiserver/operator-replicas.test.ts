/**
 * The production wiring on the sharded control plane (docs/adr/0103): two `helm-operator run
 * --leader-elect --sharding` processes probe the server at start, find that it filters
 * (`helm_operator_shard_watch_filter{mode="server"} 1`), and with their dependent informers asking
 * for their share, every CR in four namespaces still converges, each installed by the replica that
 * holds its namespace's fence.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../src/helm/storage.js';
import { SHARD_RELEASE_LABEL } from '../../src/operator/operator.js';
import { identityDigest } from '../../src/runtime/shard-coordinator.js';
import { createNamespace, testKubeConfig, uniqueName, waitFor } from '../support/kube.js';
import { CRs, ensureCrd, NGINX, NGINX_CHART } from '../support/operator.js';
import { killAll, sample, scrape, spawnOperator, watchEntry, watchesFile, type OperatorProcess } from '../integration/production/support.js';

describe('sharded replicas ask the API server for their share', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NGINX);
  const storage = new ReleaseStorage(kc);
  const group = uniqueName('kep-shards');
  let home: Awaited<ReturnType<typeof createNamespace>>;
  const tenants: Awaited<ReturnType<typeof createNamespace>>[] = [];
  let watches: Awaited<ReturnType<typeof watchesFile>>;
  let procs: OperatorProcess[] = [];

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    home = await createNamespace(kc, 'kep-home');
    for (let i = 0; i < 4; i++) tenants.push(await createNamespace(kc, `kep-t${i}`));
    watches = await watchesFile(watchEntry(NGINX, NGINX_CHART, '  watchDependentResources: true\n'));
  });
  afterAll(async () => {
    await killAll();
    await Promise.all([home, ...tenants].map((n) => n.remove()));
    await watches.remove();
  });

  it('probes server-side filtering and converges every CR with share-only informers', { timeout: 600_000 }, async () => {
    const args = ['--leader-elect', '--sharding', '--leader-election-id', group, '--leader-election-namespace', home.name];
    const env = { WATCH_NAMESPACE: tenants.map((t) => t.name).join(',') };
    procs = [0, 1].map(() => spawnOperator({ watchesFile: watches.file, namespace: home.name, args, env }));
    const dumps = (): string => procs.map((p, i) => `--- replica ${i} ---\n${p.dump().split('\n').slice(-15).join('\n')}`).join('\n');
    for (const p of procs) {
      const line = await p.waitForLog('the share probe', (l) => typeof l.msg === 'string' && l.msg.startsWith('Informers watch'), 240_000);
      expect(line.mode, `${String(line.reason)}\n${dumps()}`).toBe('server');
      const text = await scrape(await p.metricsUrl());
      expect(sample(text, 'helm_operator_shard_watch_filter', { mode: 'server' })).toBe(1);
      expect(sample(text, 'helm_operator_shard_watch_filter', { mode: 'client' })).toBe(0);
    }
    const identities = await Promise.all(procs.map((p) => p.identity()));
    for (const t of tenants) await crs.create(t.name, 'web', { replicaCount: 1 });
    for (const t of tenants) {
      await waitFor(
        `${t.name}/web deployed`,
        async () => (await crs.get(t.name, 'web'))?.status?.conditions?.find((c) => c.type === 'Deployed')?.status === 'True',
        { timeoutMs: 240_000, intervalMs: 1_000 },
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n${dumps()}`, { cause: err });
      });
      const [record] = await storage.records(t.name, 'web');
      const holder = record?.labels[SHARD_RELEASE_LABEL]?.split('-')[2];
      expect(identities.map((id) => identityDigest(id))).toContain(holder);
    }
  });
});
