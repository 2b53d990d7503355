/** The operator (and other long-running commands) as separate OS processes in their own process groups. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { inject } from 'vitest';
import { waitFor } from './kube.js';
import { TEST_RUN_FLAGS } from './timings.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface OperatorProcess {
  readonly child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal) once the process ends. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL to the whole group: the operator and the helm it runs die together, as in a node crash. */
  crash(): void;
}

/** `run` listens on :8080/:8081 by default (operator-sdk's); tests must not depend on those being free. */
const NO_SERVERS = ['--metrics-bind-address=0', '--health-probe-bind-address=0'];

/** `run` with the tests' timings (timings.ts) before the test's flags, and no servers unless it asks for them. */
function runArgs(args: readonly string[]): readonly string[] {
  if (args[0] !== 'run') return args;
  const servers = args.some((a) => a.startsWith('--metrics-bind-address')) ? [] : NO_SERVERS;
  return ['run', ...TEST_RUN_FLAGS, ...args.slice(1), ...servers];
}

/**
 * node's arguments for `helm-operator <args>`: the shipped bundle, built once per run by the global
 * setup (operator-bundle.ts), not the sources through tsx.
 */
export function operatorArgv(args: readonly string[]): string[] {
  return [inject('operatorBundle'), ...args];
}

export function startOperatorProcess(args: readonly string[], env: NodeJS.ProcessEnv = {}): OperatorProcess {
  const child = spawn(process.execPath, operatorArgv(runArgs(args)), {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, KUBECONFIG: inject('kubeconfigPath'), ...env },
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      resolve({ code, signal });
    });
  });
  return {
    child,
    output: () => out,
    exited,
    crash: () => {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    },
  };
}

/** Waits for the process to end within `timeoutMs`, killing it if it does not. */
export async function waitForExit(p: OperatorProcess, timeoutMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let done = false;
  void p.exited.then(() => (done = true));
  try {
    await waitFor('the operator process to exit', () => Promise.resolve(done), { timeoutMs });
  } catch (err) {
    p.crash();
    throw err;
  }
  return p.exited;
}

/** Whether a process of group `pgid` still runs (Linux /proc; zombies, which nothing may reap here, do not count). */
async function groupRunning(pgid: number): Promise<boolean> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so read after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') return true;
  }
  return false;
}

/** Waits until every process of `p`'s group (the helm it ran too) has ended: nothing of it can write any more. */
export async function waitForGroupGone(p: OperatorProcess, timeoutMs = 30_000): Promise<void> {
  const pgid = p.child.pid;
  if (pgid === undefined) return;
  await waitFor(`process group ${pgid} to end`, async () => !(await groupRunning(pgid)), { timeoutMs, intervalMs: 50 });
}

export interface Child {
  readonly pid: number | undefined;
  output(): string;
  stop(): Promise<void>;
}

/** A long-running command in its own process group (make → bash → node → helm all stop together). */
export function startChild(file: string, args: readonly string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Child {
  const child: ChildProcess = spawn(file, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      resolve();
    }),
  );
  return {
    pid: child.pid,
    output: () => out,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
      process.kill(-child.pid, 'SIGTERM');
      const timer = setTimeout(() => {
        if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
      }, 45_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A TCP port free on 127.0.0.1 right now (for servers the tests start). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() => {
        resolve(typeof addr === 'object' && addr !== null ? addr.port : 0);
      });
    });
  });
}
