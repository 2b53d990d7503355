/**
 * Steady state at scale (issue 46): N CRs of a light chart (one ConfigMap each) over many
 * namespaces, converged, then left alone, with our sharded replicas and then operator-sdk's single
 * helm-operator over the same N, one after the other on the same cluster, without limits.
 *
 *   make bench-scale [BENCH_ARGS="--n 2000"]
 *   npm run bench -- --scale [--n 10000] [--namespaces 100] [--replicas 1] [--settle-seconds 60]
 *                            [--idle-minutes 5] [--baseline-seconds 60] [--only ours] [--out DIR] [--keep-cluster]
 *
 * First, with no operator running, `--baseline-seconds` of the cluster alone: the API requests
 * every later row contains. Then per operator: fresh namespaces, the operators (ours as
 * `--replicas` replicas with `--sharding`, settled before the first CR, bench/fleet.ts), N CRs
 * created until every one is `Deployed=True` (its seconds reported, not the point), `--settle-seconds`
 * of quiet, then the measured window of `--idle-minutes`: CPU per minute of each replica's process
 * tree (helm children included), the API server's requests per minute (all clients: the baseline
 * says how much is not the operator's), watch event bytes per minute, helm processes, and RSS per
 * replica at the end. What the control plane holds at the end: release Secrets and their bytes,
 * the API server's storage size. The namespaces are then deleted with the operator stopped (the
 * CRs' finalizers removed), which is not measured: uninstalling 10,000 releases is not the question.
 *
 * Targets (issue 46): ours at most 0.02× operator-sdk's CPU and 0.1× its API requests, at most
 * 300 MiB RSS per replica. Writes scale-N<n>.json and .md into --out (default .cache/bench-scale).
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { HttpMethod, type KubeConfig } from '@kubernetes/client-node';
import { RawClient } from '../src/k8s/raw-client.js';
import { apiRequests, apiServerMetrics as apiServerMetricsText, delta, isDeployed, total } from './compare/cluster.js';
import { prepare, positive, type Prepared } from './compare/main.js';
import type { OperatorName } from './compare/operators.js';
import { spread, startFleet } from './fleet.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const MiB = 1024 * 1024;

const say = (msg: string): void => {
  process.stderr.write(`[bench-scale ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

/** One value per CR, so that each release differs, and nothing for the API server to default. */
const LIGHT_CHART = {
  'Chart.yaml': 'apiVersion: v2\nname: light\nversion: 0.1.0\ndescription: one ConfigMap per release (bench/scale.ts)\n',
  'values.yaml': 'message: hello\n',
  'templates/configmap.yaml':
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-light\ndata:\n  message: {{ .Values.message | quote }}\n',
};

/** What one operator configuration cost in the measured window, and what the cluster held. */
export interface ScaleResult {
  readonly operator: OperatorName;
  readonly replicas: number;
  readonly convergeSeconds: number;
  readonly windowMinutes: number;
  /** Per replica: CPU-seconds per minute of its process tree. */
  readonly cpuPerMinute: readonly number[];
  readonly rssBytes: readonly number[];
  readonly apiRequestsPerMinute: number;
  readonly apiRequestsByVerb: Readonly<Record<string, number>>;
  readonly watchBytesPerMinute: number;
  /** Our helm processes in the window (all replicas); undefined for operator-sdk. */
  readonly helmExecutions: number | undefined;
  readonly releaseSecrets: number;
  readonly releaseSecretBytes: number;
  readonly storageBytes: number;
}

export interface Baseline {
  readonly apiRequestsPerMinute: number;
  readonly watchBytesPerMinute: number;
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

/** Pure: the table; the ratio column is ours (all replicas together) against operator-sdk. */
export function table(baseline: Baseline, results: readonly ScaleResult[]): string {
  const sdk = results.find((r) => r.operator === 'operator-sdk');
  const mib = (b: number): string => (b / MiB).toFixed(0);
  const ratio = (x: number, ref: number | undefined): string => (ref === undefined || ref === 0 ? '–' : `${(x / ref).toFixed(3)}×`);
  const name = (r: ScaleResult): string => (r.operator === 'ours' ? `ours × ${r.replicas}` : 'operator-sdk × 1');
  const rows = results.map((r) => {
    const cpu = sum(r.cpuPerMinute);
    return `| ${name(r)} | ${cpu.toFixed(2)} (${r.cpuPerMinute.map((c) => c.toFixed(2)).join(' / ')}) | ${ratio(
      cpu,
      sdk === undefined ? undefined : sum(sdk.cpuPerMinute),
    )} | ${r.apiRequestsPerMinute.toFixed(0)} | ${ratio(r.apiRequestsPerMinute, sdk?.apiRequestsPerMinute)} | ${(
      r.watchBytesPerMinute / MiB
    ).toFixed(
      2,
    )} | ${r.rssBytes.map(mib).join(' / ')} | ${r.helmExecutions ?? '–'} | ${r.releaseSecrets} (${mib(r.releaseSecretBytes)} MiB) | ${mib(
      r.storageBytes,
    )} | ${r.convergeSeconds.toFixed(0)} |`;
  });
  return [
    '| configuration | CPU-s per minute (per replica) | ÷ operator-sdk | API requests per minute | ÷ operator-sdk | watch MiB per minute | RSS per replica, MiB | helm processes | release Secrets | storage MiB | converge s |',
    '|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|',
    `| no operator (baseline) | – | – | ${baseline.apiRequestsPerMinute.toFixed(0)} | – | ${(baseline.watchBytesPerMinute / MiB).toFixed(2)} | – | – | – | – | – |`,
    ...rows,
  ].join('\n');
}

/** Pure: the sum of every sample of `metric` in a /metrics text (`_sum` of a histogram, a gauge). */
export function metricSum(metricsText: string, metric: string): number {
  let out = 0;
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith(metric)) continue;
    const rest = line.slice(metric.length);
    if (rest[0] !== '{' && rest[0] !== ' ') continue;
    out += Number(line.slice(line.lastIndexOf(' ') + 1)) || 0;
  }
  return out;
}

async function apiServerMetrics(p: Prepared): Promise<string> {
  return apiServerMetricsText(p.scenario.kubectl, p.scenario.kubeconfig);
}

/** The cluster's helm release Secrets (helm's storage labels), counted with their bytes, page by page. */
async function releaseSecrets(kc: KubeConfig): Promise<{ count: number; bytes: number }> {
  const raw = kc.makeApiClient(RawClient);
  let count = 0;
  let bytes = 0;
  let next: string | undefined;
  do {
    const page = (await raw.request(HttpMethod.GET, '/api/v1/secrets', {
      query: { labelSelector: 'owner=helm', limit: '500', ...(next === undefined ? {} : { continue: next }) },
    })) as { items?: { data?: Record<string, string> }[]; metadata?: { continue?: string } };
    for (const s of page.items ?? []) {
      count++;
      bytes += sum(Object.values(s.data ?? {}).map((v) => v.length));
    }
    next = page.metadata?.continue === '' ? undefined : page.metadata?.continue;
  } while (next !== undefined);
  return { count, bytes };
}

/** Requests and watch bytes per minute over `ms`, from two scrapes of the API server. */
async function window(p: Prepared, ms: number): Promise<{ requests: Record<string, number>; watchBytes: number; minutes: number }> {
  const { kubectl, kubeconfig } = p.scenario;
  const requestsBefore = await apiRequests(kubectl, kubeconfig);
  const watchBefore = metricSum(await apiServerMetrics(p), 'apiserver_watch_events_sizes_sum');
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  const minutes = (performance.now() - t0) / 60_000;
  const requests = delta(requestsBefore, await apiRequests(kubectl, kubeconfig));
  const watchBytes = metricSum(await apiServerMetrics(p), 'apiserver_watch_events_sizes_sum') - watchBefore;
  return { requests, watchBytes, minutes };
}

async function oneConfig(
  p: Prepared,
  o: { n: number; namespaces: number; settleSeconds: number; idleMinutes: number },
  operator: OperatorName,
  replicas: number,
): Promise<ScaleResult> {
  say(`${operator} × ${replicas}: ${o.n} CRs in ${o.namespaces} namespaces`);
  const fleet = await startFleet(p.scenario, p.setup, {
    tag: operator === 'ours' ? `sc-o${replicas}` : 'sc-sdk',
    namespaces: o.namespaces,
    operator,
    replicas,
  });
  try {
    const crs = spread(o.n, fleet.tenants);
    const t0 = performance.now();
    await fleet.create(crs, { message: 'hello' });
    await fleet.watch.until(
      `${o.n} CRs Deployed=True`,
      () => fleet.watch.crs().filter(isDeployed).length === o.n,
      Math.max(3_600_000, o.n * 2_000),
    );
    const convergeSeconds = (performance.now() - t0) / 1000;
    say(`  converged in ${convergeSeconds.toFixed(0)} s; ${o.settleSeconds} s of quiet, then ${o.idleMinutes} min measured`);
    await new Promise((r) => setTimeout(r, o.settleSeconds * 1000));

    const marks = await Promise.all(fleet.operators.map((op) => op.sampler.mark()));
    const helmBefore = await Promise.all(fleet.operators.map((op) => op.helmExecutions()));
    const w = await window(p, o.idleMinutes * 60_000);
    const helmAfter = await Promise.all(fleet.operators.map((op) => op.helmExecutions()));
    const windows = await Promise.all(fleet.operators.map(async (op, i) => op.sampler.window(marks[i] ?? 0, await op.sampler.mark())));
    const helm = helmAfter.some((h) => h === undefined) ? undefined : sum(helmAfter.map((h, i) => (h ?? 0) - (helmBefore[i] ?? 0)));
    const secrets = await releaseSecrets(p.scenario.kc);
    return {
      operator,
      replicas,
      convergeSeconds,
      windowMinutes: w.minutes,
      cpuPerMinute: windows.map((x) => x.cpuSeconds / w.minutes),
      rssBytes: windows.map((x) => x.rootRssEndBytes),
      apiRequestsPerMinute: total(w.requests) / w.minutes,
      apiRequestsByVerb: w.requests,
      watchBytesPerMinute: w.watchBytes / w.minutes,
      helmExecutions: helm,
      releaseSecrets: secrets.count,
      releaseSecretBytes: secrets.bytes,
      storageBytes: metricSum(await apiServerMetrics(p), 'apiserver_storage_size_bytes'),
    };
  } finally {
    // The operators stop first: the namespaces' CRs lose their finalizers and go with them.
    await fleet.remove();
  }
}

export async function scale(argv: readonly string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: [...argv],
    options: {
      scale: { type: 'boolean' },
      n: { type: 'string', default: '10000' },
      namespaces: { type: 'string', default: '100' },
      replicas: { type: 'string', default: '1' },
      'settle-seconds': { type: 'string', default: '60' },
      'idle-minutes': { type: 'string', default: '5' },
      'baseline-seconds': { type: 'string', default: '60' },
      only: { type: 'string' },
      out: { type: 'string', default: path.join(ROOT, '.cache/bench-scale') },
      'keep-cluster': { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (a.only !== undefined && a.only !== 'ours') throw new Error(`--only takes ours (leave out operator-sdk), got "${a.only}"`);
  const o = {
    n: positive('n', a.n),
    namespaces: positive('namespaces', a.namespaces),
    settleSeconds: positive('settle-seconds', a['settle-seconds']),
    idleMinutes: positive('idle-minutes', a['idle-minutes']),
  };
  const replicas = positive('replicas', a.replicas);
  const out = path.resolve(a.out);
  await mkdir(path.join(out, 'light', 'templates'), { recursive: true });
  for (const [file, text] of Object.entries(LIGHT_CHART)) await writeFile(path.join(out, 'light', file), text);
  const uptime = async (): Promise<string> => (await run('uptime')).stdout.trim();
  const uptimeBefore = await uptime();
  const p = await prepare({
    ns: [1],
    rounds: 1,
    concurrency: 2,
    idleSeconds: 1,
    tries: 0,
    out,
    only: a.only === 'ours' ? 'ours' : undefined,
    serviceCidr: process.env.SERVICE_CIDR ?? '',
    keepCluster: a['keep-cluster'],
  });
  const setup = { ...p.setup, chart: path.join(out, 'light') };
  const results: ScaleResult[] = [];
  try {
    say(`baseline: ${a['baseline-seconds']} s with no operator`);
    const b = await window(p, positive('baseline-seconds', a['baseline-seconds']) * 1000);
    const baseline: Baseline = { apiRequestsPerMinute: total(b.requests) / b.minutes, watchBytesPerMinute: b.watchBytes / b.minutes };
    const base = path.join(out, `scale-N${o.n}`);
    const write = async (final: boolean): Promise<void> => {
      const command = `npm run bench -- ${argv.join(' ')}`;
      const text = [
        `N=${o.n} CRs of a one-ConfigMap chart in ${o.namespaces} namespaces, ${o.idleMinutes} min measured after ${o.settleSeconds} s of quiet; command: ${command}`,
        '',
        table(baseline, results),
        '',
        `machine: ${os.cpus().length} CPUs, ${Math.round(os.totalmem() / 1024 ** 3)} GiB; before: ${uptimeBefore}; after: ${await uptime()}`,
      ].join('\n');
      await writeFile(`${base}.json`, `${JSON.stringify({ ...o, replicas, command, baseline, results }, null, 2)}\n`);
      await writeFile(`${base}.md`, `${text}\n`);
      if (final) process.stdout.write(`\n${text}\n\nwrote ${base}.{json,md}\n`);
    };
    results.push(await oneConfig({ ...p, setup }, o, 'ours', replicas));
    await write(false);
    if (a.only === undefined) results.push(await oneConfig({ ...p, setup }, o, 'operator-sdk', 1));
    await write(true);
  } finally {
    await p.done();
  }
}
