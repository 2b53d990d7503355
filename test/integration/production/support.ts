/**
 * Runs the real `helm-operator run` as a separate process (the shipped bundle, support/operator-bundle.ts) against the
 * test cluster, and reads what a person or Prometheus would: JSON log lines, /metrics, /readyz.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { waitFor } from '../../support/kube.js';
import { operatorArgv } from '../../support/process.js';
import { ROOT } from '../../support/operator.js';
import { TEST_RUN_FLAGS } from '../../support/timings.js';

export { sample } from '../../support/prometheus.js';

export type LogLine = Record<string, unknown> & { msg?: string; level?: string };

export interface OperatorProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Parsed JSON log lines so far. */
  readonly lines: LogLine[];
  /** Non-JSON output (stack traces, `error: …`). */
  readonly other: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitForLog(description: string, match: (l: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** `http://host:port` of the metrics server, from its start-up log line. */
  metricsUrl(): Promise<string>;
  healthUrl(): Promise<string>;
  /** The leader election identity from the start-up line. */
  identity(): Promise<string>;
  /** SIGTERM, wait for exit (SIGKILL after `timeoutMs`). */
  stop(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything it logged, for failure messages. */
  dump(): string;
}

export interface SpawnOptions {
  readonly watchesFile: string;
  readonly namespace: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** Default: the test cluster's kubeconfig. */
  readonly kubeconfig?: string;
}

const running = new Set<OperatorProcess>();

/** Kills (SIGKILL) every operator process a test left running. */
export async function killAll(): Promise<void> {
  await Promise.all(
    [...running].map(async (p) => {
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await p.exited;
    }),
  );
}

export function spawnOperator(o: SpawnOptions): OperatorProcess {
  const args = operatorArgv([
    'run',
    '--watches-file',
    o.watchesFile,
    '--helm-binary',
    inject('helmBin'),
    '--metrics-bind-address',
    '127.0.0.1:0',
    '--health-probe-bind-address',
    '127.0.0.1:0',
    ...TEST_RUN_FLAGS,
    ...(o.args ?? []),
  ]);
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? os.tmpdir(),
      KUBECONFIG: o.kubeconfig ?? inject('kubeconfigPath'),
      WATCH_NAMESPACE: o.namespace,
      ...o.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  const other: string[] = [];
  const take = (chunk: Buffer, carry: { rest: string }): void => {
    const parts = (carry.rest + chunk.toString()).split('\n');
    carry.rest = parts.pop() ?? '';
    for (const p of parts) {
      if (p.trim() === '') continue;
      try {
        lines.push(JSON.parse(p) as LogLine);
      } catch {
        other.push(p);
      }
    }
  };
  const out = { rest: '' };
  const err = { rest: '' };
  child.stdout.on('data', (c: Buffer) => {
    take(c, out);
  });
  child.stderr.on('data', (c: Buffer) => {
    take(c, err);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
    });
  });
  const dump = (): string => [...lines.map((l) => JSON.stringify(l)), ...other].join('\n');
  const waitForLog = async (description: string, match: (l: LogLine) => boolean, timeoutMs = 60_000): Promise<LogLine> => {
    try {
      return await waitFor(
        description,
        () => {
          if (child.exitCode !== null) throw new Error(`operator exited with ${child.exitCode}`);
          return Promise.resolve(lines.find(match));
        },
        { timeoutMs, intervalMs: 50 },
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- operator output ---\n${dump()}`, { cause: e });
    }
  };
  const address = async (msg: string): Promise<string> => `http://${String((await waitForLog(msg, (l) => l.msg === msg)).address)}`;
  const proc: OperatorProcess = {
    child,
    pid: child.pid ?? -1,
    lines,
    other,
    exited,
    waitForLog,
    metricsUrl: () => address('Serving metrics server'),
    healthUrl: () => address('Serving health probe server'),
    identity: async () => String((await waitForLog('the start-up line', (l) => l.msg === 'Starting helm-operator')).identity),
    stop: async (timeoutMs = 60_000) => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
    dump,
  };
  running.add(proc);
  void exited.then(() => running.delete(proc));
  return proc;
}

/** A temp directory holding a watches.yaml; `remove()` deletes it. */
export async function watchesFile(
  text: string,
): Promise<{ dir: string; file: string; write: (t: string) => Promise<void>; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'operator-prod-'));
  const file = path.join(dir, 'watches.yaml');
  await writeFile(file, text);
  return {
    dir,
    file,
    write: (t) => writeFile(file, t),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

export const watchEntry = (kind: { group: string; version: string; kind: string }, chart: string, extra = ''): string =>
  `- group: ${kind.group}\n  version: ${kind.version}\n  kind: ${kind.kind}\n  chart: ${chart}\n${extra}`;

export async function scrape(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return res.text();
}

export async function probe(url: string, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url + path);
  return { status: res.status, body: await res.text() };
}
