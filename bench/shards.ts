/**
 * Replicas sharing the work (issue 46, docs/adr/0085): N CRs spread over many namespaces, converged
 * by 1, 2 and 4 sharded replicas of our operator, each a pod's worth of CPU and memory (a cgroup of
 * its own that its helm children share, bench/compare/cgroup.ts), and by operator-sdk's single
 * helm-operator under the same per-pod limit, one after the other on the same cluster.
 *
 *   npm run bench -- --shards [--n 1000] [--namespaces 40] [--replicas 1,2,4] [--cpu-limit 250m]
 *                             [--memory-limit 512Mi] [--concurrency 2|auto] [--only ours]
 *                             [--out DIR] [--keep-cluster]
 *
 * Each configuration gets fresh namespaces (and, for ours, a home namespace for its Leases). Ours
 * runs `--leader-elect --sharding` at every replica count, so the one-replica row is the same code
 * path with one owner of every bucket, and the rows differ only in the number of replicas. Before
 * any CR is created the group has settled (one live peer per replica, no handoff under way, read
 * from its Leases as `helm-operator shards` reads them), so start-up and the first handoffs are not
 * timed. Then, timed: the N CRs created round-robin over the namespaces (10 requests in flight)
 * until every one is `Deployed=True`; after that the CRs deleted until every one is gone (its
 * release uninstalled). Per replica: the CPU its cgroup used and was throttled for, its helm
 * processes, its RSS at the end of the converge and its cgroup's memory peak.
 *
 * The ratios asked of this (issue 46): converge with 4 replicas at most 0.35× one replica's, and at
 * most 0.5× operator-sdk's. Writes shards-N<n>.json and .md into --out (default .cache/bench-shards).
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { HttpMethod, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { RawClient, resourcePath } from '../src/k8s/raw-client.js';
import { mapBounded } from '../src/runtime/bounded.js';
import { Informer } from '../src/runtime/informer.js';
import { KubeShardLeaseStore } from '../src/runtime/shard-lease-store.js';
import { liveByRecord, shardGroupView } from '../src/runtime/shard-view.js';
import { parseCpus, parseMemory, usageBetween } from './compare/cgroup.js';
import { isDeployed, NGINX } from './compare/cluster.js';
import { prepare, positive, type Prepared } from './compare/main.js';
import { startOperator, type OperatorName, type RunningOperator } from './compare/operators.js';
import { createNamespace, deleteNamespace, SPEC } from './compare/scenarios.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const MiB = 1024 * 1024;
/** The replicas' --leader-election-id: their shard group. */
const GROUP = 'bench-shards';

const say = (msg: string): void => {
  process.stderr.write(`[bench-shards ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

/** One replica's share of a configuration's converge. */
export interface ReplicaFigures {
  readonly cpuSeconds: number;
  readonly throttledSeconds: number;
  readonly helmExecutions: number | undefined;
  readonly rssEndBytes: number;
  readonly memoryPeakBytes: number;
}

export interface ConfigResult {
  readonly operator: OperatorName;
  readonly replicas: number;
  readonly convergeSeconds: number;
  readonly deleteSeconds: number;
  readonly perReplica: readonly ReplicaFigures[];
}

export interface ShardsResult {
  readonly n: number;
  readonly namespaces: number;
  readonly cpus: number;
  readonly memoryBytes: number;
  readonly command: string;
  readonly configs: readonly ConfigResult[];
  readonly uptimeBefore: string;
  readonly uptimeAfter: string;
}

export const configName = (c: Pick<ConfigResult, 'operator' | 'replicas'>): string =>
  c.operator === 'ours' ? `ours × ${c.replicas}` : 'operator-sdk × 1';

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
const max = (xs: readonly number[]): number => (xs.length === 0 ? NaN : Math.max(...xs));

/**
 * Pure: the table. Ratios are against ours with one replica and against operator-sdk, when those
 * ran; "–" when they did not.
 */
export function table(configs: readonly ConfigResult[]): string {
  const one = configs.find((c) => c.operator === 'ours' && c.replicas === 1);
  const sdk = configs.find((c) => c.operator === 'operator-sdk');
  const ratio = (x: number, ref: ConfigResult | undefined): string =>
    ref === undefined ? '–' : `${(x / ref.convergeSeconds).toFixed(2)}×`;
  const mib = (b: number): string => (Number.isFinite(b) ? (b / MiB).toFixed(0) : '–');
  const rows = configs.map((c) => {
    const rep = c.perReplica;
    const helm = rep.map((r) => r.helmExecutions);
    return `| ${configName(c)} | ${c.convergeSeconds.toFixed(1)} | ${ratio(c.convergeSeconds, one)} | ${ratio(c.convergeSeconds, sdk)} | ${sum(
      rep.map((r) => r.cpuSeconds),
    ).toFixed(1)} | ${sum(rep.map((r) => r.throttledSeconds)).toFixed(1)} | ${
      helm.some((h) => h === undefined) ? '–' : helm.join(' / ')
    } | ${rep.map((r) => mib(r.rssEndBytes)).join(' / ')} | ${mib(max(rep.map((r) => r.memoryPeakBytes)))} | ${c.deleteSeconds.toFixed(1)} |`;
  });
  return [
    '| configuration | converge s | ÷ ours × 1 | ÷ operator-sdk | CPU-s (all replicas) | throttled s | helm processes per replica | RSS per replica, MiB | memory peak, MiB (max) | delete-all s |',
    '|---|---:|---:|---:|---:|---:|---|---|---:|---:|',
    ...rows,
  ].join('\n');
}

/** Pure: N CR names, each with its namespace, round-robin over the namespaces. */
export function spread(n: number, namespaces: readonly string[]): { readonly name: string; readonly namespace: string }[] {
  if (namespaces.length === 0) throw new Error('spread: no namespaces');
  return Array.from({ length: n }, (_, i) => ({ name: `s-${i + 1}`, namespace: namespaces[i % namespaces.length] ?? '' }));
}

function parseReplicas(v: string): number[] {
  const list = v.split(',').map((s) => positive('replicas', s.trim()));
  if (new Set(list).size !== list.length) throw new Error(`--replicas must not repeat a count, got "${v}"`);
  return list;
}

/** Every CR of the run's namespaces, through one cluster-wide watch (no polling requests). */
class FleetWatch {
  readonly #informer: Informer;
  readonly #namespaces: ReadonlySet<string>;
  readonly #waiters = new Set<() => void>();

  constructor(kc: KubeConfig, namespaces: readonly string[]) {
    this.#namespaces = new Set(namespaces);
    this.#informer = new Informer(kc, { resource: { ...NGINX } });
    const wake = (): void => {
      for (const w of this.#waiters) w();
    };
    this.#informer.onAdd(wake);
    this.#informer.onUpdate(wake);
    this.#informer.onDelete(wake);
  }

  start = (): Promise<void> => this.#informer.start();
  stop = (): Promise<void> => this.#informer.stop();

  crs(): readonly KubernetesObject[] {
    return this.#informer.list().filter((cr) => this.#namespaces.has(cr.metadata?.namespace ?? ''));
  }

  until(what: string, holds: () => boolean, timeoutMs: number): Promise<void> {
    if (holds()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (!holds()) return;
        done();
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
    });
  }
}

/** Until the group's Leases show `replicas` live peers and no handoff under way. */
async function groupSettled(kc: KubeConfig, home: string, replicas: number, timeoutMs = 300_000): Promise<void> {
  const store = new KubeShardLeaseStore(kc, home, GROUP);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = shardGroupView({ group: GROUP, leases: await store.list(), live: liveByRecord(Date.now()) });
    const live = view.peers.filter((p) => p.state === 'live').length;
    if (live === replicas && view.handoffs.length === 0) return;
    if (Date.now() > deadline)
      throw new Error(
        `shard group ${GROUP} in ${home}: ${live} of ${replicas} replicas live, ${view.handoffs.length} handoffs after ${timeoutMs / 1000} s`,
      );
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function oneConfig(
  p: Prepared,
  o: { n: number; namespaces: number },
  operator: OperatorName,
  replicas: number,
): Promise<ConfigResult> {
  const s = p.scenario;
  const tag = operator === 'ours' ? `bs-o${replicas}` : 'bs-sdk';
  const home = await createNamespace(s, `${tag}-home`);
  const tenants: string[] = [];
  for (let i = 0; i < o.namespaces; i++) tenants.push(await createNamespace(s, `${tag}-${i}`));
  say(`${operator} × ${replicas}: ${o.n} CRs in ${o.namespaces} namespaces`);
  const ops: RunningOperator[] = [];
  const watch = new FleetWatch(s.kc, tenants);
  const raw = s.kc.makeApiClient(RawClient);
  const crs = spread(o.n, tenants);
  const timeoutMs = Math.max(1_800_000, o.n * 9_000);
  try {
    const sharding = ['--leader-elect', '--sharding', '--leader-election-id', GROUP, '--leader-election-namespace', home];
    for (let r = 0; r < replicas; r++)
      ops.push(
        await startOperator(operator, tenants.join(','), p.setup, {
          id: `${tag}-${r}`,
          ...(operator === 'ours' ? { args: sharding } : {}),
        }),
      );
    if (operator === 'ours') await groupSettled(s.kc, home, replicas);
    await watch.start();

    const before = await Promise.all(ops.map(async (op) => ({ cgroup: op.cgroup?.read(), helm: await op.helmExecutions() })));
    const t0 = performance.now();
    await mapBounded(crs, 10, async ({ name, namespace }) => {
      await raw.request(HttpMethod.POST, resourcePath({ ...NGINX, namespace }), {
        body: { apiVersion: `${NGINX.group}/${NGINX.version}`, kind: NGINX.kind, metadata: { name }, spec: SPEC },
      });
    });
    await watch.until(`${o.n} CRs Deployed=True`, () => watch.crs().filter(isDeployed).length === o.n, timeoutMs);
    const convergeSeconds = (performance.now() - t0) / 1000;
    const perReplica = await Promise.all(
      ops.map(async (op, i): Promise<ReplicaFigures> => {
        const after = op.cgroup?.read();
        const was = before[i];
        const usage = was?.cgroup === undefined || after === undefined ? undefined : usageBetween(was.cgroup, after);
        const helm = await op.helmExecutions();
        const sample = await op.sampler.sample();
        return {
          cpuSeconds: usage?.cpuSeconds ?? NaN,
          throttledSeconds: usage?.throttledSeconds ?? NaN,
          helmExecutions: helm === undefined || was?.helm === undefined ? undefined : helm - was.helm,
          rssEndBytes: sample?.rootRssBytes ?? NaN,
          memoryPeakBytes: after?.memoryPeakBytes ?? NaN,
        };
      }),
    );
    say(`  converge ${convergeSeconds.toFixed(1)} s`);

    const t1 = performance.now();
    await mapBounded(crs, 10, async ({ name, namespace }) => {
      await raw.request(HttpMethod.DELETE, `${resourcePath({ ...NGINX, namespace })}/${name}`);
    });
    await watch.until('every CR gone (its release uninstalled)', () => watch.crs().length === 0, timeoutMs);
    const deleteSeconds = (performance.now() - t1) / 1000;
    return { operator, replicas, convergeSeconds, deleteSeconds, perReplica };
  } finally {
    await watch.stop();
    await Promise.all(ops.map((op) => op.stop()));
    await Promise.all([home, ...tenants].map((ns) => deleteNamespace(s, ns)));
  }
}

export async function shards(argv: readonly string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: [...argv],
    options: {
      shards: { type: 'boolean' },
      n: { type: 'string', default: '1000' },
      namespaces: { type: 'string', default: '40' },
      replicas: { type: 'string', default: '1,2,4' },
      'cpu-limit': { type: 'string', default: '250m' },
      'memory-limit': { type: 'string', default: '512Mi' },
      concurrency: { type: 'string', default: '2' },
      only: { type: 'string' },
      out: { type: 'string', default: path.join(ROOT, '.cache/bench-shards') },
      'keep-cluster': { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (a.only !== undefined && a.only !== 'ours') throw new Error(`--only takes ours (leave out operator-sdk), got "${a.only}"`);
  const n = positive('n', a.n);
  const namespaces = positive('namespaces', a.namespaces);
  const replicas = parseReplicas(a.replicas);
  const limits = { cpus: parseCpus('--cpu-limit', a['cpu-limit']), memoryBytes: parseMemory('--memory-limit', a['memory-limit']) };
  const out = path.resolve(a.out);
  await mkdir(out, { recursive: true });
  const uptime = async (): Promise<string> => (await run('uptime')).stdout.trim();
  const uptimeBefore = await uptime();
  const p = await prepare({
    ns: [n],
    rounds: 1,
    concurrency: a.concurrency === 'auto' ? 'auto' : positive('concurrency', a.concurrency),
    idleSeconds: 1,
    tries: 0,
    out,
    only: a.only === 'ours' ? 'ours' : undefined,
    serviceCidr: process.env.SERVICE_CIDR ?? (n > 200 ? '10.0.0.0/16' : ''),
    keepCluster: a['keep-cluster'],
    limits,
  });
  const configs: ConfigResult[] = [];
  const base = path.join(out, `shards-N${n}`);
  const write = async (final: boolean): Promise<void> => {
    const result: ShardsResult = {
      n,
      namespaces,
      cpus: limits.cpus,
      memoryBytes: limits.memoryBytes,
      command: `npm run bench -- ${argv.join(' ')}`,
      configs,
      uptimeBefore,
      uptimeAfter: await uptime(),
    };
    const text = [
      `N=${n} CRs in ${namespaces} namespaces; each replica limited to ${limits.cpus} CPU and ${Math.round(limits.memoryBytes / MiB)} MiB; command: ${result.command}`,
      '',
      table(configs),
      '',
      `machine: ${os.cpus().length} CPUs; before: ${uptimeBefore}; after: ${result.uptimeAfter}`,
    ].join('\n');
    await writeFile(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
    await writeFile(`${base}.md`, `${text}\n`);
    if (final) process.stdout.write(`\n${text}\n\nwrote ${base}.{json,md}\n`);
  };
  try {
    for (const r of replicas) {
      configs.push(await oneConfig(p, { n, namespaces }, 'ours', r));
      await write(false);
    }
    if (a.only === undefined) configs.push(await oneConfig(p, { n, namespaces }, 'operator-sdk', 1));
    await write(true);
  } finally {
    await p.done();
  }
}
