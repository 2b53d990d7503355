/**
 * Starting and stopping the two operators the comparison runs, the same way: one process each,
 * limited to one namespace (WATCH_NAMESPACE), the same watches.yaml entry, chart and concurrency,
 * metrics and health probes on free loopback ports, logs to a file. Ready = `/readyz` answers 200
 * (both have controller-runtime's probes), so start-up time is not counted in any scenario.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { LimitCgroup, type CgroupReading, type Limits } from './cgroup.js';
import { TreeSampler } from './procs.js';

/**
 * The node flags of the operator image (Dockerfile NODE_OPTIONS, then the ENTRYPOINT's own node
 * flags): ours runs with them, then OPERATOR_NODE_OPTIONS.
 */
export const IMAGE_NODE_OPTIONS: readonly string[] = ['--max-semi-space-size=2', '--heap-growing-percent=30'];

export type OperatorName = 'ours' | 'operator-sdk';

export interface OperatorSetup {
  readonly kubeconfig: string;
  readonly chart: string;
  /** More keys of the watches.yaml entry, indented by two spaces (e.g. `  rollout: {...}\n`). */
  readonly watchesExtra?: string;
  /** `auto`: no --max-concurrent-reconciles, so ours tunes itself and operator-sdk runs its default (2). */
  readonly concurrency: number | 'auto';
  /** Where logs, watches files and (ours) CPU profiles go. */
  readonly workDir: string;
  /** ours: the bundled CLI (hack/bundle.ts, as in the image) and node flags; the helm binary it runs. */
  readonly oursMain: string;
  readonly oursNodeOptions: readonly string[];
  readonly helmBin: string;
  /** operator-sdk's helm-operator binary. */
  readonly sdkBin: string;
  /** Each operator in a cgroup of its own with these limits (cgroup.ts); undefined: no limit. */
  readonly limits?: Limits;
}

export interface RunningOperator {
  readonly name: OperatorName;
  readonly pid: number;
  readonly sampler: TreeSampler;
  /** helm processes our operator ran so far (its own metric); undefined for operator-sdk (in-process helm). */
  helmExecutions(): Promise<number | undefined>;
  /** Its cgroup's counters, when it runs under `limits`. */
  readonly cgroup?: { read(): CgroupReading };
  /** Our operator's /metrics exposition (undefined for operator-sdk, or when it does not answer). */
  metrics(): Promise<string | undefined>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address === null || typeof address === 'string') reject(new Error('no port'));
        else resolve(address.port);
      });
    });
  });
}

async function get(url: string): Promise<{ status: number; text: string } | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return { status: res.status, text: await res.text() };
  } catch {
    return undefined;
  }
}

/** The sum of every series of a Prometheus counter in a text exposition. */
export function sumCounter(exposition: string, metric: string): number {
  return seriesOf(exposition, metric).reduce((sum, s) => sum + s.value, 0);
}

/** Every series of one metric in a text exposition, each with its labels and value. */
export function seriesOf(exposition: string, metric: string): { readonly labels: Record<string, string>; readonly value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(metric)) continue;
    const rest = line.slice(metric.length);
    if (rest[0] !== '{' && rest[0] !== ' ') continue;
    const labels: Record<string, string> = {};
    const close = rest[0] === '{' ? rest.indexOf('}') : -1;
    for (const m of rest.slice(1, Math.max(close, 1)).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[m[1] ?? ''] = m[2] ?? '';
    out.push({ labels, value: Number(line.slice(line.lastIndexOf(' ') + 1)) });
  }
  return out;
}

/** Spawns the operator (inside its cgroup under `limits`), its output into operator.log. */
function launch(
  name: OperatorName,
  setup: OperatorSetup,
  run: { readonly args: readonly string[]; readonly env: NodeJS.ProcessEnv; readonly dir: string; readonly instance: string },
): { child: ChildProcess; cgroup: LimitCgroup | undefined } {
  const { env, dir } = run;
  const [command, args] =
    name === 'ours'
      ? [process.execPath, [...setup.oursNodeOptions, setup.oursMain, 'run', ...run.args, '--helm-binary', setup.helmBin]]
      : [setup.sdkBin, ['run', ...run.args, '--leader-elect=false']];
  const cgroup =
    setup.limits === undefined ? undefined : LimitCgroup.create(`helm-operator-bench-${process.pid}-${run.instance}`, setup.limits);
  const inCgroup = cgroup?.wrap(command, args) ?? { command, args };
  const child = spawn(inCgroup.command, inCgroup.args, { env, cwd: dir });
  const log = createWriteStream(path.join(dir, 'operator.log'));
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  return { child, cgroup };
}

/** Until `/readyz` answers 200; throws if the process exits first or after 2 min. */
async function untilReady(child: ChildProcess, healthPort: number, failure: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while ((await get(`http://127.0.0.1:${healthPort}/readyz`))?.status !== 200) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${failure} (exit code ${child.exitCode})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** More than one operator of a kind at once (sharded replicas): a name of its own, and its own flags. */
export interface Instance {
  /** Names its work directory and cgroup; default `<name>-<namespace>`. */
  readonly id?: string;
  /** Flags after the common ones (ours: e.g. `--leader-elect --sharding …`). */
  readonly args?: readonly string[];
}

/** `namespace`: WATCH_NAMESPACE, one namespace or a comma-separated list. */
export async function startOperator(
  name: OperatorName,
  namespace: string,
  setup: OperatorSetup,
  instance: Instance = {},
): Promise<RunningOperator> {
  const id = instance.id ?? `${name}-${namespace}`;
  const dir = path.join(setup.workDir, id);
  await mkdir(dir, { recursive: true });
  const watches = path.join(dir, 'watches.yaml');
  await writeFile(
    watches,
    `- group: example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: ${setup.chart}\n${setup.watchesExtra ?? ''}`,
  );
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  const common = [
    '--watches-file',
    watches,
    '--metrics-bind-address',
    `127.0.0.1:${metricsPort}`,
    '--health-probe-bind-address',
    `127.0.0.1:${healthPort}`,
    ...(setup.concurrency === 'auto' ? [] : ['--max-concurrent-reconciles', String(setup.concurrency)]),
    '--zap-log-level',
    'error',
    ...(instance.args ?? []),
  ];
  const env = operatorEnv(name, { kubeconfig: setup.kubeconfig, namespace, dir });
  const { child, cgroup } = launch(name, setup, { args: common, env, dir, instance: id });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      resolve();
    }),
  );
  const pid = child.pid;
  try {
    if (pid === undefined) throw new Error(`${name}: could not start (see ${dir}/operator.log)`);
    await untilReady(child, healthPort, `${name} did not become ready; see ${dir}/operator.log`);
  } catch (err) {
    child.kill('SIGKILL');
    cgroup?.remove();
    throw err;
  }
  const sampler = new TreeSampler(pid, 250);
  sampler.start();
  return {
    name,
    pid,
    sampler,
    ...(cgroup === undefined ? {} : { cgroup }),
    metrics: async () => (name === 'ours' ? (await get(`http://127.0.0.1:${metricsPort}/metrics`))?.text : undefined),
    helmExecutions: async () => {
      if (name !== 'ours') return undefined;
      const res = await get(`http://127.0.0.1:${metricsPort}/metrics`);
      return res === undefined ? NaN : sumCounter(res.text, 'helm_operator_helm_executions_total');
    },
    stop: async () => {
      sampler.stop();
      child.kill('SIGTERM');
      const killer = setTimeout(() => {
        child.kill('SIGKILL');
      }, 40_000);
      await exited;
      clearTimeout(killer);
      cgroup?.remove();
    },
  };
}

/**
 * Both keep helm's caches and config under HOME: a fresh one each, so neither starts warm. Ours
 * runs with `BENCH_OPERATOR_NODE_OPTIONS` when set (a profile: `--cpu-prof --cpu-prof-dir=DIR`).
 */
function operatorEnv(
  name: OperatorName,
  o: { readonly kubeconfig: string; readonly namespace: string; readonly dir: string },
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, KUBECONFIG: o.kubeconfig, WATCH_NAMESPACE: o.namespace, HOME: o.dir };
  delete env.NODE_OPTIONS;
  const profile = process.env.BENCH_OPERATOR_NODE_OPTIONS;
  if (name === 'ours' && profile !== undefined && profile !== '') env.NODE_OPTIONS = profile;
  return env;
}
