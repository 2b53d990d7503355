import { readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, NGINX, NGINX_CHART } from '../../support/operator.js';
import { killAll, probe, sample, scrape, spawnOperator, watchEntry, watchesFile, type OperatorProcess } from './support.js';

/**
 * A TCP proxy to the apiserver that holds every connection until `release()`: the operator process
 * is up (servers listening) but cannot list anything yet, deterministically. TLS passes through
 * untouched, so the apiserver's certificate and the client certificate work as before.
 */
async function holdingProxy(target: URL): Promise<{ port: number; release: () => void; close: () => Promise<void> }> {
  const held: net.Socket[] = [];
  const sockets = new Set<net.Socket>();
  let open = false;
  const pipe = (client: net.Socket): void => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  };
  const server = net.createServer((client) => {
    sockets.add(client);
    if (open) pipe(client);
    else held.push(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    release: () => {
      open = true;
      for (const c of held.splice(0)) pipe(c);
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describe('metrics and health endpoints of a running operator', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NGINX);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let watches: Awaited<ReturnType<typeof watchesFile>>;
  let proxy: Awaited<ReturnType<typeof holdingProxy>>;
  let op: OperatorProcess;

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'prod-metrics');
    watches = await watchesFile(watchEntry(NGINX, NGINX_CHART));
    const original = parse(await readFile(inject('kubeconfigPath'), 'utf8')) as { clusters: { cluster: { server: string } }[] };
    const cluster = original.clusters[0]!.cluster;
    proxy = await holdingProxy(new URL(cluster.server));
    cluster.server = `https://127.0.0.1:${proxy.port}`;
    const kubeconfig = path.join(watches.dir, 'kubeconfig.yaml');
    await writeFile(kubeconfig, stringify(original), { mode: 0o600 });
    op = spawnOperator({ watchesFile: watches.file, namespace: ns.name, kubeconfig, args: ['--max-concurrent-reconciles', '3'] });
  });
  afterAll(async () => {
    await killAll();
    await proxy.close();
    await ns.remove();
    await watches.remove();
  });

  it('/healthz answers at once; /readyz fails until the informers have synced, then passes', { timeout: 90_000 }, async () => {
    const health = await op.healthUrl();
    // The apiserver is unreachable through the held proxy: nothing can sync.
    for (let i = 0; i < 3; i++) {
      expect(await probe(health, '/healthz')).toEqual({ status: 200, body: 'ok' });
      const ready = await probe(health, '/readyz');
      expect(ready.status).toBe(500);
      expect(ready.body).toContain('[-]informers failed: reason withheld');
      expect(ready.body).toContain('[+]ping ok');
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(op.lines.some((l) => l.msg === 'All controllers started and synced')).toBe(false);
    proxy.release();
    await op.waitForLog('the controllers to sync', (l) => l.msg === 'All controllers started and synced');
    expect(await probe(health, '/readyz')).toEqual({ status: 200, body: 'ok' });
    expect((await probe(health, '/readyz?verbose')).body).toBe('[+]informers ok\n[+]ping ok\nhealthz check passed\n');
  });

  it('/metrics counts reconciles and helm executions', { timeout: 120_000 }, async () => {
    const url = await op.metricsUrl();
    const before = await scrape(url);
    const c = { controller: 'nginx-controller' };
    for (const result of ['success', 'error', 'requeue', 'requeue_after']) {
      expect(sample(before, 'controller_runtime_reconcile_total', { ...c, result })).toBe(0);
    }
    expect(sample(before, 'controller_runtime_max_concurrent_reconciles', c)).toBe(3);
    expect(sample(before, 'helm_operator_helm_executions_total', { verb: 'version', outcome: 'success' })).toBe(1);
    expect(sample(before, 'helm_operator_build_info')).toBe(1);
    expect(before).toContain('process_resident_memory_bytes');

    await crs.create(ns.name, 'web', { replicaCount: 1 });
    await crs.waitForCondition(ns.name, 'web', { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
    const installed = await waitFor('the install reconcile to be counted', async () => {
      const text = await scrape(url);
      return (sample(text, 'controller_runtime_reconcile_total', { ...c, result: 'requeue_after' }) ?? 0) >= 1 ? text : undefined;
    });
    // A reconcile that installs returns "requeue after the reconcile period": controller-runtime's requeue_after.
    expect(sample(installed, 'helm_operator_helm_executions_total', { verb: 'install', outcome: 'success' })).toBe(1);
    expect(sample(installed, 'helm_operator_helm_execution_duration_seconds_count', { verb: 'install' })).toBe(1);
    expect(sample(installed, 'controller_runtime_reconcile_errors_total', c)).toBe(0);
    expect(sample(installed, 'controller_runtime_reconcile_time_seconds_count', c)).toBeGreaterThanOrEqual(1);
    expect(sample(installed, 'workqueue_adds_total', { name: 'nginx-controller', controller: 'nginx-controller' })).toBeGreaterThanOrEqual(
      1,
    );
    expect(sample(installed, 'workqueue_work_duration_seconds_count', { name: 'nginx-controller' })).toBeGreaterThanOrEqual(1);
    expect(sample(installed, 'workqueue_unfinished_work_seconds', { name: 'nginx-controller' })).toBeGreaterThanOrEqual(0);

    await crs.delete(ns.name, 'web');
    await crs.waitForGone(ns.name, 'web');
    // The reconcile that finds the CR gone returns no requeue: success.
    const deleted = await waitFor('a success reconcile to be counted', async () => {
      const text = await scrape(url);
      return (sample(text, 'controller_runtime_reconcile_total', { ...c, result: 'success' }) ?? 0) >= 1 ? text : undefined;
    });
    // No delete hook, and the release read by this process: the operator made helm's deletes itself (ADR 0066).
    expect(sample(deleted, 'helm_operator_releases_uninstalled_total', { ...c, by: 'operator' })).toBe(1);
    expect(sample(deleted, 'helm_operator_helm_executions_total', { verb: 'uninstall', outcome: 'success' }) ?? 0).toBe(0);
    expect(await op.stop()).toEqual({ code: 0, signal: null });
  });
});
