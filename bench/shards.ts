/**
 * Replicas sharing the work (issue 46, docs/adr/0085): N CRs spread over many namespaces, converged
 * by 1, 2 and 4 sharded replicas of our operator, each a pod's worth of CPU and memory (a cgroup of
 * its own that its helm children share, bench/compare/cgroup.ts), and by operator-sdk's single
 * helm-operator under the same per-pod limit, one after the other on the same cluster.
 *
 *   npm run bench -- --shards [--n 1000] [--namespaces 40] [--replicas 1,2,4] [--cpu-limit 250m]
 *                             [--memory-limit 512Mi] [--concurrency 2|auto] [--only ours]
 *                             [--out DIR] [--keep-cluster] [--hold SECONDS] [--sharded]
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
 * Memory (--hold SECONDS): after the converge the fleet is held steady that long, each replica's
 * RSS and V8 heap in use sampled every 5 s (medians reported), then the objects each informer cache
 * holds read from helm_operator_informer_objects and the watch filter from
 * helm_operator_shard_watch_filter; the timed delete is left out (the namespaces go at the end).
 * --sharded runs it on the KEP-5866 control plane (hack/cluster.sh up --sharded), where the API
 * server filters each replica's share; without it the replicas filter on the client (docs/adr/0103).
 *
 * The ratios asked of this (issue 46): converge with 4 replicas at most 0.35× one replica's, and at
 * most 0.5× operator-sdk's. Writes shards-N<n>.json and .md into --out (default .cache/bench-shards).
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { parseCpus, parseMemory, usageBetween, type CgroupReading } from './compare/cgroup.js';
import { isDeployed } from './compare/cluster.js';
import { prepare, positive, type Prepared } from './compare/main.js';
import { seriesOf, type OperatorName, type RunningOperator } from './compare/operators.js';
import { SPEC } from './compare/scenarios.js';
import { spread, startFleet } from './fleet.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const MiB = 1024 * 1024;

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
  /** With --hold: the replica's memory held steady after the converge. */
  readonly memory?: MemoryFigures;
}

/** One replica's memory after the converge, the fleet held steady. */
export interface MemoryFigures {
  /** Medians over the hold's samples. */
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  /** `cache/kind` → objects its informers hold at the end of the hold (helm_operator_informer_objects). */
  readonly objects: Readonly<Record<string, number>>;
  /** server or client (helm_operator_shard_watch_filter), undefined when unknown. */
  readonly watchFilter: string | undefined;
}

/** Pure: the middle value (the mean of the two middle ones); NaN for none. */
export function median(xs: readonly number[]): number {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 === 1 ? (v[mid] ?? NaN) : ((v[mid - 1] ?? NaN) + (v[mid] ?? NaN)) / 2;
}

/** Pure: a replica's memory figures from the hold's samples and its last /metrics exposition. */
export function memoryFigures(
  samples: readonly { rssBytes: number; heapUsedBytes: number }[],
  exposition: string | undefined,
): MemoryFigures {
  const objects: Record<string, number> = {};
  for (const { labels, value } of seriesOf(exposition ?? '', 'helm_operator_informer_objects')) {
    const key = `${labels.cache ?? '?'}/${labels.kind ?? '?'}`;
    objects[key] = (objects[key] ?? 0) + value;
  }
  const filter = seriesOf(exposition ?? '', 'helm_operator_shard_watch_filter').find((s) => s.value === 1);
  return {
    rssBytes: median(samples.map((s) => s.rssBytes)),
    heapUsedBytes: median(samples.map((s) => s.heapUsedBytes)),
    objects,
    watchFilter: filter?.labels.mode,
  };
}

/** Pure: the objects of one cache (`cr`, `dependent`, `values-source`) a replica holds, every kind summed. */
export function cached(m: MemoryFigures, cache: string): number {
  return Object.entries(m.objects)
    .filter(([k]) => k.startsWith(`${cache}/`))
    .reduce((n, [, v]) => n + v, 0);
}

/**
 * Pure: the memory table, one row per configuration, each cell one figure per replica ("a / b").
 * Dependents by kind in the last column, summed over the replicas (the whole fleet's once).
 */
export function memoryTable(configs: readonly ConfigResult[]): string {
  const mib = (b: number): string => (Number.isFinite(b) ? (b / MiB).toFixed(0) : '–');
  const rows = configs.flatMap((c) => {
    const mem = c.perReplica.map((r) => r.memory);
    if (mem.some((m) => m === undefined)) return [];
    const ms = mem as MemoryFigures[];
    const kinds = [...new Set(ms.flatMap((m) => Object.keys(m.objects)))].filter((k) => k.startsWith('dependent/')).sort();
    const byKind = kinds.map((k) => `${k.slice('dependent/'.length)} ${sum(ms.map((m) => m.objects[k] ?? 0))}`).join(', ');
    const filters = [...new Set(ms.map((m) => m.watchFilter ?? '?'))].join('/');
    return [
      `| ${configName(c)} | ${filters} | ${ms.map((m) => mib(m.rssBytes)).join(' / ')} | ${ms.map((m) => mib(m.heapUsedBytes)).join(' / ')} | ${ms
        .map((m) => cached(m, 'dependent'))
        .join(' / ')} | ${ms.map((m) => cached(m, 'cr')).join(' / ')} | ${byKind} |`,
    ];
  });
  return [
    '| configuration | watch filter | RSS per replica, MiB | V8 heap used per replica, MiB | dependents cached per replica | CRs cached per replica | dependents by kind (all replicas) |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
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
    } | ${rep.map((r) => mib(r.rssEndBytes)).join(' / ')} | ${mib(max(rep.map((r) => r.memoryPeakBytes)))} | ${Number.isFinite(c.deleteSeconds) ? c.deleteSeconds.toFixed(1) : '–'} |`;
  });
  return [
    '| configuration | converge s | ÷ ours × 1 | ÷ operator-sdk | CPU-s (all replicas) | throttled s | helm processes per replica | RSS per replica, MiB | memory peak, MiB (max) | delete-all s |',
    '|---|---:|---:|---:|---:|---:|---|---|---:|---:|',
    ...rows,
  ].join('\n');
}

function parseReplicas(v: string): number[] {
  const list = v.split(',').map((s) => positive('replicas', s.trim()));
  if (new Set(list).size !== list.length) throw new Error(`--replicas must not repeat a count, got "${v}"`);
  return list;
}

/** What a replica's counters say at one moment. */
interface Reading {
  readonly cgroup: CgroupReading | undefined;
  readonly helm: number | undefined;
  readonly rssBytes: number;
}

async function reading(op: RunningOperator): Promise<Reading> {
  return { cgroup: op.cgroup?.read(), helm: await op.helmExecutions(), rssBytes: (await op.sampler.sample())?.rootRssBytes ?? NaN };
}

/** Pure: a replica's share of the converge, between two readings. */
export function replicaFigures(before: Reading | undefined, after: Reading): ReplicaFigures {
  const usage =
    before?.cgroup === undefined || after.cgroup === undefined
      ? { cpuSeconds: NaN, throttledSeconds: NaN }
      : usageBetween(before.cgroup, after.cgroup);
  return {
    cpuSeconds: usage.cpuSeconds,
    throttledSeconds: usage.throttledSeconds,
    helmExecutions: after.helm === undefined || before?.helm === undefined ? undefined : after.helm - before.helm,
    rssEndBytes: after.rssBytes,
    memoryPeakBytes: after.cgroup?.memoryPeakBytes ?? NaN,
  };
}

const HOLD_SAMPLE_MS = 5_000;

/** The fleet held steady for `seconds`: each replica's RSS and heap every 5 s, then its informer caches. */
async function hold(ops: readonly RunningOperator[], seconds: number): Promise<MemoryFigures[]> {
  const samples: { rssBytes: number; heapUsedBytes: number }[][] = ops.map(() => []);
  const end = Date.now() + seconds * 1000;
  for (;;) {
    await Promise.all(
      ops.map(async (op, i) => {
        const exposition = await op.metrics();
        const heap = seriesOf(exposition ?? '', 'nodejs_heap_size_used_bytes')[0]?.value ?? NaN;
        samples[i]?.push({ rssBytes: (await op.sampler.sample())?.rootRssBytes ?? NaN, heapUsedBytes: heap });
      }),
    );
    if (Date.now() >= end) break;
    await new Promise((r) => setTimeout(r, Math.min(HOLD_SAMPLE_MS, end - Date.now())));
  }
  return Promise.all(ops.map(async (op, i) => memoryFigures(samples[i] ?? [], await op.metrics())));
}

async function oneConfig(
  p: Prepared,
  o: { n: number; namespaces: number; holdSeconds: number | undefined },
  operator: OperatorName,
  replicas: number,
): Promise<ConfigResult> {
  say(`${operator} × ${replicas}: ${o.n} CRs in ${o.namespaces} namespaces`);
  const fleet = await startFleet(p.scenario, p.setup, {
    tag: operator === 'ours' ? `bs-o${replicas}` : 'bs-sdk',
    namespaces: o.namespaces,
    operator,
    replicas,
  });
  const crs = spread(o.n, fleet.tenants);
  const timeoutMs = Math.max(1_800_000, o.n * 9_000);
  try {
    const before = await Promise.all(fleet.operators.map(reading));
    const t0 = performance.now();
    await fleet.create(crs, SPEC);
    await fleet.watch.until(`${o.n} CRs Deployed=True`, () => fleet.watch.crs().filter(isDeployed).length === o.n, timeoutMs);
    const convergeSeconds = (performance.now() - t0) / 1000;
    const after = await Promise.all(fleet.operators.map(reading));
    let perReplica = after.map((a, i) => replicaFigures(before[i], a));
    say(`  converge ${convergeSeconds.toFixed(1)} s`);
    if (o.holdSeconds !== undefined && operator === 'ours') {
      say(`  holding ${o.holdSeconds} s: RSS, heap and informer caches per replica`);
      const memory = await hold(fleet.operators, o.holdSeconds);
      perReplica = perReplica.map((r, i) => (memory[i] === undefined ? r : { ...r, memory: memory[i] }));
      say(
        `  RSS ${memory.map((m) => (m.rssBytes / MiB).toFixed(0)).join(' / ')} MiB, dependents ${memory.map((m) => cached(m, 'dependent')).join(' / ')}`,
      );
      return { operator, replicas, convergeSeconds, deleteSeconds: NaN, perReplica };
    }

    const t1 = performance.now();
    await fleet.delete(crs);
    await fleet.watch.until('every CR gone (its release uninstalled)', () => fleet.watch.crs().length === 0, timeoutMs);
    const deleteSeconds = (performance.now() - t1) / 1000;
    return { operator, replicas, convergeSeconds, deleteSeconds, perReplica };
  } finally {
    await fleet.remove();
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
      hold: { type: 'string' },
      sharded: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (a.only !== undefined && a.only !== 'ours') throw new Error(`--only takes ours (leave out operator-sdk), got "${a.only}"`);
  const n = positive('n', a.n);
  const namespaces = positive('namespaces', a.namespaces);
  const replicas = parseReplicas(a.replicas);
  const holdSeconds = a.hold === undefined ? undefined : positive('hold', a.hold);
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
    sharded: a.sharded,
  });
  const configs: ConfigResult[] = [];
  const base = path.join(out, `shards-N${n}${a.sharded ? '-server' : ''}`);
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
      ...(holdSeconds === undefined
        ? []
        : [`memory after the converge, held ${holdSeconds} s (medians of 5-s samples):`, '', memoryTable(configs), '']),
      `machine: ${os.cpus().length} CPUs; before: ${uptimeBefore}; after: ${result.uptimeAfter}`,
    ].join('\n');
    await writeFile(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
    await writeFile(`${base}.md`, `${text}\n`);
    if (final) process.stdout.write(`\n${text}\n\nwrote ${base}.{json,md}\n`);
  };
  try {
    for (const r of replicas) {
      configs.push(await oneConfig(p, { n, namespaces, holdSeconds }, 'ours', r));
      await write(false);
    }
    if (a.only === undefined) configs.push(await oneConfig(p, { n, namespaces, holdSeconds }, 'operator-sdk', 1));
    await write(true);
  } finally {
    await p.done();
  }
}
