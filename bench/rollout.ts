/**
 * Shipping chart v2 to N CRs (issue 35, docs/rollouts.md): the default rollout policy against
 * operator-sdk's all at once (`rollout: {canary: 0, waveSize: 100%}`), in the same invocation.
 *
 *   npm run bench -- --rollout [--n 100] [--concurrency 2|auto] [--out DIR] [--keep-cluster]
 *
 * Per policy, in a fresh namespace: our operator (the bundled executable, as the image runs it) on
 * helm-charts/nginx (v1) installs N CRs of the sample spec; once every CR is Ready on v1 and every
 * Deployment has its Pods, the operator stops and starts again on v2, as a new operator image ships
 * a chart. v2 is a copy of the chart with a bumped version and one more Pod template annotation, so
 * every release changes and every Deployment rolls its Pods. Timed from that start until every CR
 * reports v2 in `status.deployedRelease.chartVersion` with `Ready=True`.
 *
 * The API server's request rate: its `apiserver_request_total` (every series summed) read once a
 * second through a `kubectl proxy`, less the one scrape each interval holds; the peak is the largest
 * per-second rate of an interval. Writes rollout-N<n>.json and rollout-N<n>.md into --out
 * (default .cache/bench-rollout).
 *
 * The operator's own requests, by resource, from the start on v2 until every CR is Ready on it: its
 * reads of the CRs and of their release records, its writes of their status and finalizers, and the
 * pause switch (ADR 0061). Waiting for a wave must cost next to nothing: the default policy's count
 * against all at once's is the figure (integration tests once bounded it; the bound held only on an
 * idle machine, so it is measured here).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { HttpMethod, type KubernetesObject } from '@kubernetes/client-node';
import { RawClient, resourcePath } from '../src/k8s/raw-client.js';
import { mapBounded } from '../src/runtime/bounded.js';
import { apiRequests, deploymentSettled, NamespaceWatch, NGINX } from './compare/cluster.js';
import { prepare, positive, type Prepared } from './compare/main.js';
import { startOperator, sumCounter } from './compare/operators.js';
import { createNamespace, crName, deleteNamespace, SPEC } from './compare/scenarios.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const BASELINE_MS = 5_000;

const say = (msg: string): void => {
  process.stderr.write(`[bench-rollout ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

export interface Policy {
  readonly name: string;
  /** The watches.yaml entry's `rollout:` key, or '' for the default. */
  readonly yaml: string;
}

/** The reference first: ratios are against it. */
export const POLICIES: readonly Policy[] = [
  { name: 'all at once (canary 0, waveSize 100%)', yaml: '  rollout: {canary: 0, waveSize: "100%"}\n' },
  { name: 'default (canary 1, waves of 25%, stable 10 s)', yaml: '' },
];

/** One reading of the API server's request counter, at `atMs` (performance.now()). */
export interface Sample {
  readonly atMs: number;
  readonly requests: number;
}

/**
 * Requests per second in each interval between consecutive samples, less the `ownPerInterval`
 * requests the sampler itself made there (each scrape is counted by the next one).
 */
export function rates(samples: readonly Sample[], ownPerInterval = 1): number[] {
  const out: number[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1];
    const b = samples[i];
    if (a === undefined || b === undefined || b.atMs <= a.atMs) continue;
    out.push(Math.max(0, b.requests - a.requests - ownPerInterval) / ((b.atMs - a.atMs) / 1000));
  }
  return out;
}

/** Requests from the first sample to the last, less the sampler's own scrapes (one per interval). */
export function requestsIn(samples: readonly Sample[]): number {
  const first = samples[0];
  const last = samples.at(-1);
  return first === undefined || last === undefined ? 0 : Math.max(0, last.requests - first.requests - (samples.length - 1));
}

/** {@link requestsIn} per second. */
export function meanRate(samples: readonly Sample[]): number {
  const seconds = ((samples.at(-1)?.atMs ?? 0) - (samples[0]?.atMs ?? 0)) / 1000;
  return seconds > 0 ? requestsIn(samples) / seconds : NaN;
}

/**
 * Pure: the operator's own per-CR requests between two `apiRequests` readings (`VERB resource[/sub]`
 * keys): GET and PATCH of the CRs (`plural`, any subresource), LIST of secrets (release records) and
 * GET of leases (the pause switch).
 */
export function ownRequests(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
  plural: string,
): { readonly total: number; readonly recordLists: number } {
  const isOwn = (verb: string, resource: string): boolean =>
    ((verb === 'GET' || verb === 'PATCH') && resource === plural) ||
    (verb === 'LIST' && resource === 'secrets') ||
    (verb === 'GET' && resource === 'leases');
  let total = 0;
  let recordLists = 0;
  for (const [key, value] of after) {
    const [verb = '', path = ''] = key.split(' ');
    const resource = path.split('/')[0] ?? '';
    if (!isOwn(verb, resource)) continue;
    const delta = value - (before.get(key) ?? 0);
    total += delta;
    if (verb === 'LIST') recordLists += delta;
  }
  return { total, recordLists };
}

/** Whether a CR runs `chartVersion` and its operator says it is Ready. */
export function onChart(cr: KubernetesObject, chartVersion: string): boolean {
  const status = (cr as { status?: { deployedRelease?: { chartVersion?: string }; conditions?: { type: string; status: string }[] } })
    .status;
  return (
    status?.deployedRelease?.chartVersion === chartVersion &&
    (status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

export interface PolicyResult {
  readonly policy: string;
  readonly namespace: string;
  /** From starting the operator on v2 until every CR is Ready on v2. */
  readonly seconds: number;
  /** Of which: until the new operator answered /readyz. */
  readonly startupSeconds: number;
  /** The API server with no operator running, just before. */
  readonly baselineRequestsPerSecond: number;
  readonly peakRequestsPerSecond: number;
  /** The peak once the new operator answered /readyz: the rollout without the start-up's lists. */
  readonly peakAfterStartupRequestsPerSecond: number;
  readonly meanRequestsPerSecond: number;
  readonly apiRequests: number;
  /** helm processes the v2 operator ran (its own metric). */
  readonly helmExecutions: number;
  /** The operator's own per-CR requests ({@link ownRequests}), and of them the LISTs of release records. */
  readonly ownRequests: number;
  readonly recordLists: number;
  /** Each interval's rate, from the start on v2. */
  readonly ratesPerSecond: readonly number[];
}

export interface RolloutResult {
  readonly startedAt: string;
  readonly command: string;
  readonly n: number;
  readonly concurrency: number | 'auto';
  readonly machine: { readonly cpus: number; readonly uptimeBefore: string; readonly uptimeAfter: string };
  readonly commit: string;
  readonly results: readonly PolicyResult[];
}

/** `kubectl proxy` on a free loopback port: scraping through it costs no process per sample. */
async function startProxy(kubectl: string, kubeconfig: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(kubectl, ['--kubeconfig', kubeconfig, 'proxy', '--port=0', '--address=127.0.0.1'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      reject(new Error(`kubectl proxy did not start within 30 s: ${out}`));
    }, 30_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /Starting to serve on ([\d.]+:\d+)/.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      resolve(`http://${m[1] ?? ''}`);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`kubectl proxy exited (${code}): ${out}`));
    });
  });
  return { url, child };
}

/** Reads the API server's request counter every second until stopped. */
class RequestSampler {
  readonly samples: Sample[] = [];
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(private readonly proxyUrl: string) {}

  async #scrape(): Promise<void> {
    const res = await fetch(`${this.proxyUrl}/metrics`, { signal: AbortSignal.timeout(5_000) });
    this.samples.push({ atMs: performance.now(), requests: sumCounter(await res.text(), 'apiserver_request_total') });
  }

  async start(): Promise<void> {
    await this.#scrape();
    const tick = (): void => {
      this.#timer = setTimeout(() => {
        void this.#scrape()
          .catch((err: unknown) => {
            say(`scrape failed: ${err instanceof Error ? err.message : String(err)}`);
          })
          .finally(() => {
            if (!this.#stopped) tick();
          });
      }, 1_000);
    };
    tick();
  }

  async stop(): Promise<readonly Sample[]> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#scrape();
    return this.samples;
  }
}

/** helm-charts/nginx with `version` bumped and one more Pod template annotation. */
async function chartV2(source: string, dir: string, version: string): Promise<string> {
  const target = path.join(dir, 'nginx-v2');
  await cp(source, target, { recursive: true });
  const edit = async (file: string, from: RegExp, to: string): Promise<void> => {
    const p = path.join(target, file);
    const text = await readFile(p, 'utf8');
    if (!from.test(text)) throw new Error(`bench: ${p} has no ${String(from)} to change; update bench/rollout.ts`);
    await writeFile(p, text.replace(from, to));
  };
  await edit('Chart.yaml', /^version: .*$/m, `version: ${version}`);
  await edit('templates/deployment.yaml', /^(\s+)(checksum\/config: .*)$/m, `$1$2\n$1bench.helm-operator/chart: v2`);
  return target;
}

async function chartVersion(chart: string): Promise<string> {
  const m = /^version: *"?([^"\s]+)"?\s*$/m.exec(await readFile(path.join(chart, 'Chart.yaml'), 'utf8'));
  if (m?.[1] === undefined) throw new Error(`bench: no version in ${chart}/Chart.yaml`);
  return m[1];
}

/** `1.2.3` → `1.3.0`: chart v2's version. */
export function nextMinor(version: string): string {
  const m = /^(\d+)\.(\d+)\.\d+/.exec(version);
  if (m === null) throw new Error(`bench: chart version ${version} is not semver`);
  return `${m[1] ?? ''}.${Number(m[2]) + 1}.0`;
}

interface Run {
  readonly p: Prepared;
  readonly n: number;
  readonly v1: { readonly path: string; readonly version: string };
  readonly v2: { readonly path: string; readonly version: string };
  readonly proxyUrl: string;
}

async function onePolicy(r: Run, policy: Policy): Promise<PolicyResult> {
  const { p, n, proxyUrl } = r;
  const charts = r;
  const s = p.scenario;
  const ns = await createNamespace(s, 'rollout');
  const setup = { ...p.setup, watchesExtra: policy.yaml };
  const raw = s.kc.makeApiClient(RawClient);
  const crs = resourcePath({ ...NGINX, namespace: ns });
  const watch = new NamespaceWatch(s.kc, ns);
  await watch.start();
  const timeoutMs = Math.max(900_000, n * 9_000);
  const all = (version: string) => (): boolean => {
    const list = watch.crs.list();
    return list.length === n && list.every((cr) => onChart(cr, version));
  };
  try {
    say(`${policy.name}: ${n} CRs on v1 in ${ns}`);
    const v1 = await startOperator('ours', ns, { ...setup, chart: charts.v1.path });
    try {
      await mapBounded(
        Array.from({ length: n }, (_, i) => crName(i + 1)),
        10,
        async (name) => {
          await raw.request(HttpMethod.POST, crs, {
            body: { apiVersion: `${NGINX.group}/${NGINX.version}`, kind: NGINX.kind, metadata: { name }, spec: SPEC },
          });
        },
      );
      await watch.until(`${n} CRs Ready on ${charts.v1.version}`, all(charts.v1.version), timeoutMs);
      await watch.until(
        `${n} Deployments with all their Pods available`,
        () => {
          const ds = watch.deployments.list();
          return ds.length === n && ds.every(deploymentSettled);
        },
        Math.max(300_000, n * 600),
      );
    } finally {
      await v1.stop();
    }
    say(`${policy.name}: v1 settled; the operator starts on v2`);
    const sampler = new RequestSampler(proxyUrl);
    await sampler.start();
    // The control plane's own rate with no operator running: what the peaks stand on.
    await new Promise((resolve) => setTimeout(resolve, BASELINE_MS));
    const baselineEnd = sampler.samples.length;
    const countsBefore = await apiRequests(s.kubectl, s.kubeconfig);
    const t0 = performance.now();
    const v2 = await startOperator('ours', ns, { ...setup, chart: charts.v2.path });
    try {
      const ready = performance.now();
      const done = await watch.until(`${n} CRs Ready on ${charts.v2.version}`, all(charts.v2.version), timeoutMs);
      const samples = await sampler.stop();
      const own = ownRequests(countsBefore, await apiRequests(s.kubectl, s.kubeconfig), NGINX.plural);
      const during = samples.slice(baselineEnd - 1);
      const rs = rates(during);
      const result: PolicyResult = {
        policy: policy.name,
        namespace: ns,
        seconds: (done - t0) / 1000,
        startupSeconds: (ready - t0) / 1000,
        baselineRequestsPerSecond: meanRate(samples.slice(0, baselineEnd)),
        peakRequestsPerSecond: Math.max(0, ...rs),
        peakAfterStartupRequestsPerSecond: Math.max(0, ...rates(during.filter((x) => x.atMs >= ready))),
        meanRequestsPerSecond: meanRate(during),
        apiRequests: requestsIn(during),
        helmExecutions: (await v2.helmExecutions()) ?? NaN,
        ownRequests: own.total,
        recordLists: own.recordLists,
        ratesPerSecond: rs.map((x) => Math.round(x)),
      };
      say(`${policy.name}: ${result.seconds.toFixed(1)} s, peak ${result.peakRequestsPerSecond.toFixed(0)} requests/s`);
      return result;
    } finally {
      await sampler.stop().catch(() => undefined);
      await v2.stop();
    }
  } finally {
    await watch.stop();
    await deleteNamespace(s, ns);
  }
}

export function table(r: RolloutResult): string {
  const ref = r.results[0];
  const ratio = (a: number, b: number | undefined): string => (b === undefined || b === 0 ? '—' : `${(a / b).toFixed(2)}×`);
  return [
    `N=${r.n} CRs, concurrency ${r.concurrency}, ${r.machine.cpus} CPUs, commit ${r.commit}; \`${r.command}\``,
    `load before: ${r.machine.uptimeBefore}`,
    `load after:  ${r.machine.uptimeAfter}`,
    '',
    "| policy | v2 start → every CR Ready on v2 | vs all at once | of which operator start-up | peak API requests/s | vs all at once | peak after start-up | mean requests/s | idle cluster requests/s | API requests | helm processes | operator's own per-CR requests | vs all at once | of which release-record LISTs |",
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...r.results.map(
      (x) =>
        `| ${x.policy} | ${x.seconds.toFixed(1)} s | ${ratio(x.seconds, ref?.seconds)} | ${x.startupSeconds.toFixed(1)} s | ${x.peakRequestsPerSecond.toFixed(0)} | ${ratio(x.peakRequestsPerSecond, ref?.peakRequestsPerSecond)} | ${x.peakAfterStartupRequestsPerSecond.toFixed(0)} | ${x.meanRequestsPerSecond.toFixed(1)} | ${x.baselineRequestsPerSecond.toFixed(1)} | ${x.apiRequests} | ${x.helmExecutions} | ${x.ownRequests} | ${ratio(x.ownRequests, ref?.ownRequests)} | ${x.recordLists} |`,
    ),
  ].join('\n');
}

export async function rollout(argv: readonly string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: [...argv],
    options: {
      rollout: { type: 'boolean' },
      n: { type: 'string', default: '100' },
      concurrency: { type: 'string', default: '2' },
      out: { type: 'string', default: path.join(ROOT, '.cache/bench-rollout') },
      'keep-cluster': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const n = positive('n', a.n);
  const uptime = async (): Promise<string> => (await run('uptime')).stdout.trim();
  const uptimeBefore = await uptime();
  const p = await prepare({
    ns: [n],
    rounds: 1,
    concurrency: a.concurrency === 'auto' ? 'auto' : positive('concurrency', a.concurrency),
    idleSeconds: 1,
    tries: 0,
    // The operator runs in its own directory: a relative --out would not reach its watches file.
    out: path.resolve(a.out),
    only: 'ours',
    serviceCidr: process.env.SERVICE_CIDR ?? (n > 200 ? '10.0.0.0/16' : ''),
    keepCluster: a['keep-cluster'],
  });
  const proxy = await startProxy(p.scenario.kubectl, p.scenario.kubeconfig);
  try {
    const v1 = { path: p.setup.chart, version: await chartVersion(p.setup.chart) };
    const v2version = nextMinor(v1.version);
    const r: Run = { p, n, v1, v2: { path: await chartV2(v1.path, p.setup.workDir, v2version), version: v2version }, proxyUrl: proxy.url };
    const results: PolicyResult[] = [];
    for (const policy of POLICIES) results.push(await onePolicy(r, policy));
    const result: RolloutResult = {
      startedAt: new Date().toISOString(),
      command: `npm run bench -- ${argv.join(' ')}`,
      n,
      concurrency: p.setup.concurrency,
      machine: { cpus: os.cpus().length, uptimeBefore, uptimeAfter: await uptime() },
      commit: (await run('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).catch(() => ({ stdout: 'unknown' }))).stdout.trim(),
      results,
    };
    const base = path.join(path.resolve(a.out), `rollout-N${n}`);
    await writeFile(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
    await writeFile(`${base}.md`, `${table(result)}\n`);
    process.stdout.write(`\n${table(result)}\n\nwrote ${base}.{json,md}\n`);
  } finally {
    proxy.child.kill('SIGTERM');
    await p.done();
  }
}
