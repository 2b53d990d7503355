/**
 * Side by side with operator-sdk's helm-operator (issue 15):
 *
 *   make bench-compare [BENCH_ARGS="--n 20 --idle-seconds 20"]
 *   npm run bench -- --compare [--n 100,1000] [--rounds 2] [--concurrency 2|auto] [--idle-seconds 90] [--tries 5]
 *                             [--out DIR] [--only ours|operator-sdk] [--service-cidr 10.0.0.0/16] [--keep-cluster]
 *                             [--cpu-limit 1 --memory-limit 512Mi]
 *
 * Builds (once, cached) operator-sdk's helm-operator at the version pinned in hack/versions.env,
 * starts one test cluster (CLUSTER_NAME, default helm-operator-bench; stopped at the end unless it
 * was already running or --keep-cluster), bundles ours, then runs both operators one at a time,
 * interleaved (round 1: ours then operator-sdk, round 2 the other way round …), each in a fresh
 * namespace, plus the `kubectl apply --server-side` lower bound once per round. Prints a table,
 * writes compare-N<n>.json, compare-N<n>.md and compare-N<n>.svg into --out
 * (default .cache/bench-compare), rewritten after every round, so a run cut short still leaves the
 * rounds it finished. OPERATOR_NODE_OPTIONS: extra node flags for our operator only (e.g.
 * "--cpu-prof --cpu-prof-dir=/tmp/prof"), after the image's (IMAGE_NODE_OPTIONS); OURS_DIST: an already built bundle directory
 * (`npm run bundle -- <dir>`) to run instead of bundling src/ (A/B runs of two revisions);
 * BENCH_HELM_BIN: the helm executable instead of the tool cache's (a wrapper that times each helm
 * process: hack/helm-timing-wrapper.sh, as ADR 0067 was measured). Ours runs
 * as the image runs it: the bundled executable (hack/bundle.ts) with the image's node flags.
 *
 * --n takes a comma-separated list (default 100,1000): each N is a run of its own, one after the
 * other on the same cluster, with its own files. Runs above ~200 CRs need a wider Service range
 * than the cluster's default /24: then the cluster starts with 10.0.0.0/16 unless --service-cidr
 * (or SERVICE_CIDR) says otherwise; a cluster already running keeps its own.
 *
 * --cpu-limit and --memory-limit (together; Kubernetes quantities): each operator runs as a pod with
 * those `resources.limits` would, in a cgroup of its own (cgroup.ts) that its helm children share,
 * the control plane outside it; the table adds the cgroup's CPU and throttled time per phase, and
 * the files are named compare-N<n>-limit-<cpu>cpu-<mem>mi.* (docs/adr/0058-limited-bench-mode.md).
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { controllersWatch } from './cluster.js';
import { parseCpus, parseMemory, type Limits } from './cgroup.js';
import { IMAGE_NODE_OPTIONS, startOperator, type OperatorName, type OperatorSetup } from './operators.js';
import { svgChart, table, type CompareResult } from './report.js';
import {
  createNamespace,
  deleteNamespace,
  lowerBound,
  podsNeeded,
  runScenarios,
  type LowerBound,
  type OperatorRound,
  type ScenarioSetup,
} from './scenarios.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

const say = (msg: string): void => {
  process.stderr.write(`[bench-compare ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

async function sh(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const { stdout } = await run(cmd, args, { cwd: ROOT, env, maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

export const positive = (name: string, v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${v}"`);
  return n;
};

export interface Options {
  /** Each N is a run of its own (rounds, table and files), on the same cluster. */
  readonly ns: readonly number[];
  readonly rounds: number;
  /** `auto`: neither gets --max-concurrent-reconciles (ours tunes itself, operator-sdk's default is 2). */
  readonly concurrency: number | 'auto';
  readonly idleSeconds: number;
  readonly tries: number;
  readonly out: string;
  readonly only: OperatorName | undefined;
  readonly serviceCidr: string;
  readonly keepCluster: boolean;
  /** Each operator in a cgroup with these limits; undefined: today's unlimited mode. */
  readonly limits?: Limits;
  /** The cluster's API server filters by KEP-5866 shardSelector (`hack/cluster.sh up --sharded`). */
  readonly sharded?: boolean;
}

/** Services the cluster's default /24 Service range holds, with room for the cluster's own. */
const SERVICES_IN_DEFAULT_RANGE = 200;
const WIDE_SERVICE_CIDR = '10.0.0.0/16';

function parseOptions(argv: readonly string[]): Options {
  const { values: a } = parseArgs({
    args: [...argv],
    options: {
      compare: { type: 'boolean' },
      n: { type: 'string', default: '100,1000' },
      rounds: { type: 'string', default: '2' },
      concurrency: { type: 'string', default: '2' },
      'idle-seconds': { type: 'string', default: '90' },
      tries: { type: 'string', default: '5' },
      out: { type: 'string', default: path.join(ROOT, '.cache/bench-compare') },
      only: { type: 'string' },
      'service-cidr': { type: 'string', default: process.env.SERVICE_CIDR ?? '' },
      'keep-cluster': { type: 'boolean', default: false },
      'cpu-limit': { type: 'string' },
      'memory-limit': { type: 'string' },
    },
    strict: true,
  });
  const o: Options = {
    ns: a.n.split(',').map((v) => positive('n', v.trim())),
    rounds: positive('rounds', a.rounds),
    concurrency: a.concurrency === 'auto' ? 'auto' : positive('concurrency', a.concurrency),
    idleSeconds: positive('idle-seconds', a['idle-seconds']),
    tries: positive('tries', a.tries),
    // Absolute: the operators run in work directories of their own below it.
    out: path.resolve(a.out),
    only: a.only === undefined ? undefined : parseOnly(a.only),
    serviceCidr: a['service-cidr'],
    keepCluster: a['keep-cluster'],
    ...limitsOption(a['cpu-limit'], a['memory-limit']),
  };
  if (2 * o.tries > Math.min(...o.ns))
    throw new Error(`--n must be at least 2 × --tries (${2 * o.tries}): each latency try uses its own CR`);
  // The cluster's default Service range (/24) holds ~250 Services: a larger N gets a /16 unless told otherwise.
  if (o.serviceCidr === '' && Math.max(...o.ns) > SERVICES_IN_DEFAULT_RANGE) return { ...o, serviceCidr: WIDE_SERVICE_CIDR };
  return o;
}

function limitsOption(cpu: string | undefined, memory: string | undefined): { limits?: Limits } {
  if (cpu === undefined && memory === undefined) return {};
  if (cpu === undefined || memory === undefined)
    throw new Error('--cpu-limit and --memory-limit go together (a pod has both limits), e.g. --cpu-limit 1 --memory-limit 512Mi');
  return { limits: { cpus: parseCpus('--cpu-limit', cpu), memoryBytes: parseMemory('--memory-limit', memory) } };
}

function parseOnly(v: string): OperatorName {
  if (v === 'ours' || v === 'operator-sdk') return v;
  throw new Error(`--only must be ours or operator-sdk, got "${v}"`);
}

export interface Prepared {
  readonly setup: OperatorSetup;
  readonly scenario: ScenarioSetup;
  readonly helmBin: string;
  /** Stops the cluster when this run started it. */
  readonly done: () => Promise<void>;
}

/**
 * `kubectl wait --for=condition=Established` fails at once ("conditions accessor error") when it
 * reads the CRD before the API server wrote any condition: read it again until it is established.
 */
async function crdEstablished(kubectl: string, kubeconfig: string, name: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const jsonPath = '{.status.conditions[?(@.type=="Established")].status}';
  while ((await sh(kubectl, ['--kubeconfig', kubeconfig, 'get', `crd/${name}`, '-o', `jsonpath=${jsonPath}`]).catch(() => '')) !== 'True') {
    if (Date.now() > deadline) throw new Error(`CRD ${name} was not established within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** BENCH_HELM_BIN (a timing wrapper, say), else the tool cache's helm. */
const helmBinary = (tools: ReadonlyMap<string, string>): string => process.env.BENCH_HELM_BIN ?? tools.get('HELM_BIN') ?? 'helm';

/**
 * Pure: a Node's `allocatable.pods`, a quantity: the API server writes 1000 as "1k" (and 2000 as
 * "2k"), which Number() reads as NaN. 0 for what is not a count.
 */
export function podCount(quantity: string): number {
  const m = /^(\d+)(k?)$/.exec(quantity.trim());
  if (m === null) return 0;
  return Number(m[1]) * (m[2] === 'k' ? 1000 : 1);
}

/** `hack/cluster.sh up`'s flags: --sharded for the KEP-5866 API server. */
const clusterFlags = (o: Options): string[] => (o.sharded === true ? ['--sharded'] : []);

/** Tools, cluster, CRD and our compiled operator (also the churn benchmark's, bench/churn.ts). */
export async function prepare(o: Options): Promise<Prepared> {
  say('tools: helm, kubectl and operator-sdk helm-operator (built once through the Go module proxy, then cached)');
  await sh('bash', ['hack/tools.sh', 'helm', 'kubectl', ...(o.only === 'ours' ? [] : ['operator-sdk-helm'])]);
  const tools = new Map(
    [...(await sh('bash', ['hack/tools.sh', 'env'])).matchAll(/^export (\w+)="([^"]*)"$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']),
  );
  const sdkBin = path.join(await sh('bash', ['hack/tools.sh', 'path', 'operator-sdk-helm']), 'helm-operator');

  const pods = podsNeeded(Math.max(...o.ns), o.tries);
  const clusterEnv = {
    ...process.env,
    CLUSTER_NAME: process.env.CLUSTER_NAME ?? 'helm-operator-bench',
    SERVICE_CIDR: o.serviceCidr,
    NODE_PODS: String(Math.max(250, pods)),
  };
  const wasRunning = await sh('bash', ['hack/cluster.sh', 'status'], clusterEnv).then(
    () => true,
    () => false,
  );
  say(`cluster ${clusterEnv.CLUSTER_NAME}: ${wasRunning ? 'already running' : 'starting'}`);
  const kubeconfig = (await sh('bash', ['hack/cluster.sh', 'up', ...clusterFlags(o)], clusterEnv)).split('\n').pop() ?? '';
  const kubectl = tools.get('KUBECTL_BIN') ?? 'kubectl';
  await sh(kubectl, ['--kubeconfig', kubeconfig, 'apply', '--server-side', '-f', 'config/crd/bases/example.com_nginxes.yaml']);
  await crdEstablished(kubectl, kubeconfig, 'nginxes.example.com');
  const waited = await controllersWatch(kubectl, kubeconfig, 'nginxes');
  say(
    waited === undefined
      ? 'the controller-manager does not watch nginxes after 120 s: the first run may count GETs of the CRs by its garbage collector'
      : `the controller-manager watches nginxes (waited ${Math.round(waited / 1000)} s)`,
  );
  const room = (await sh(kubectl, ['--kubeconfig', kubeconfig, 'get', 'nodes', '-o', 'jsonpath={.items[*].status.allocatable.pods}']))
    .split(/\s+/)
    .reduce((sum, v) => sum + podCount(v), 0);
  // Pods left Pending keep the scheduler and the garbage collector busy through every later phase.
  if (room < pods)
    throw new Error(
      `cluster ${clusterEnv.CLUSTER_NAME} takes ${room} Pods, N=${Math.max(...o.ns)} needs ${pods}: stop it (hack/cluster.sh down) and let the benchmark start it`,
    );

  const workDir = path.join(o.out, 'work');
  await mkdir(workDir, { recursive: true });
  const dist = process.env.OURS_DIST ?? path.join(ROOT, '.cache/bench-bundle');
  if (process.env.OURS_DIST === undefined) {
    say(`bundling our operator into ${dist}`);
    await sh('npx', ['tsx', 'hack/bundle.ts', dist]);
  }

  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const chart = path.join(ROOT, 'helm-charts/nginx');
  const helmBin = helmBinary(tools);
  return {
    setup: {
      kubeconfig,
      chart,
      concurrency: o.concurrency,
      workDir,
      oursMain: path.join(dist, 'helm-operator.js'),
      oursNodeOptions: [...IMAGE_NODE_OPTIONS, ...(process.env.OPERATOR_NODE_OPTIONS ?? '').split(/\s+/).filter((f) => f !== '')],
      helmBin,
      sdkBin,
      ...(o.limits === undefined ? {} : { limits: o.limits }),
    },
    // n: set per run by compare().
    scenario: { kc, kubeconfig, kubectl, helmBin, chart, n: 0, idleSeconds: o.idleSeconds, tries: o.tries, workDir },
    helmBin,
    done: async () => {
      if (wasRunning || o.keepCluster) return;
      say(`stopping cluster ${clusterEnv.CLUSTER_NAME}`);
      await sh('bash', ['hack/cluster.sh', 'down'], clusterEnv).catch(() => undefined);
    },
  };
}

async function oneOperator(p: Prepared, name: OperatorName, label: string): Promise<OperatorRound> {
  const ns = await createNamespace(p.scenario, name === 'ours' ? 'bench-ours' : 'bench-sdk');
  say(`${label}: ${name} in ${ns}, N=${p.scenario.n}`);
  const op = await startOperator(name, ns, p.setup);
  try {
    const result = await runScenarios(p.scenario, op, ns);
    say(
      `  converge ${result.converge.seconds.toFixed(1)} s, delete-all ${result.deleteAll.seconds.toFixed(1)} s, idle CPU ${result.idle.process.cpuSeconds.toFixed(1)} s`,
    );
    return result;
  } finally {
    await op.stop();
    await deleteNamespace(p.scenario, ns);
  }
}

/** Round r runs ours first when r is even, operator-sdk first when odd, then the lower bound. */
interface Measured {
  readonly ours: OperatorRound[];
  readonly sdk: OperatorRound[];
  readonly bounds: LowerBound[];
}

async function runRounds(o: Options, p: Prepared, afterRound: (m: Measured) => Promise<void>): Promise<void> {
  const out: Measured = { ours: [], sdk: [], bounds: [] };
  for (let r = 0; r < o.rounds; r++) {
    const label = `round ${r + 1}/${o.rounds}`;
    const order: OperatorName[] = r % 2 === 0 ? ['ours', 'operator-sdk'] : ['operator-sdk', 'ours'];
    for (const name of order.filter((n) => o.only === undefined || n === o.only)) {
      (name === 'ours' ? out.ours : out.sdk).push(await oneOperator(p, name, label));
    }
    const ns = await createNamespace(p.scenario, 'bench-lower');
    say(`${label}: lower bound (kubectl apply --server-side) in ${ns}`);
    out.bounds.push(await lowerBound(p.scenario, ns));
    await deleteNamespace(p.scenario, ns);
    await afterRound(out);
  }
}

export async function compare(argv: readonly string[]): Promise<void> {
  const o = parseOptions(argv);
  const uptimeBefore = await sh('uptime', []);
  say(`machine: ${os.cpus().length} CPUs; ${uptimeBefore}`);
  const p = await prepare(o);
  const versions = {
    node: process.version,
    operatorSdk: await sh('bash', ['-c', '. hack/versions.env && echo $OPERATOR_SDK_VERSION']),
    helm: await sh(p.helmBin, ['version', '--short']).catch(() => 'unknown'),
    ourCommit: await sh('git', ['rev-parse', '--short', 'HEAD']).catch(() => 'unknown'),
    ourNodeOptions: p.setup.oursNodeOptions.join(' '),
  };
  try {
    for (const n of o.ns) {
      const startedAt = new Date().toISOString();
      const write = async (m: Measured, final: boolean): Promise<void> => {
        await writeResults(
          o,
          {
            startedAt,
            n,
            concurrency: o.concurrency,
            rounds: m.bounds.length,
            idleSeconds: o.idleSeconds,
            tries: o.tries,
            machine: {
              cpus: os.cpus().length,
              memGiB: Math.round(os.totalmem() / 1024 ** 3),
              uptimeBefore,
              uptimeAfter: await sh('uptime', []),
            },
            versions,
            ours: m.ours,
            sdk: m.sdk,
            lowerBound: m.bounds,
            ...(o.limits === undefined ? {} : { limits: o.limits }),
          },
          final,
        );
      };
      let last: Measured | undefined;
      await runRounds(o, { ...p, scenario: { ...p.scenario, n } }, async (m) => {
        last = m;
        await write(m, false);
      });
      if (last !== undefined) await write(last, true);
    }
  } finally {
    await p.done();
  }
}

async function writeResults(o: Options, result: CompareResult, final: boolean): Promise<void> {
  const limit = result.limits === undefined ? '' : `-limit-${result.limits.cpus}cpu-${Math.round(result.limits.memoryBytes / 1024 ** 2)}mi`;
  const base = path.join(o.out, `compare-N${result.n}${limit}`);
  const text = `${table(result)}\n\nmachine before: ${result.machine.uptimeBefore}\nmachine after:  ${result.machine.uptimeAfter}\n`;
  await writeFile(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
  await writeFile(`${base}.md`, text);
  if (o.only === undefined) await writeFile(`${base}.svg`, svgChart(result));
  if (final) process.stdout.write(`\n${text}\nwrote ${base}.{json,md${o.only === undefined ? ',svg' : ''}}\n`);
  else say(`round ${result.rounds} written to ${base}.{json,md}`);
}
