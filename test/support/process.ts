/** The operator as a separate OS process (its own process group), for crash and CLI tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { inject } from 'vitest';
import { waitFor } from './kube.js';

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

export function startOperatorProcess(args: readonly string[], env: NodeJS.ProcessEnv = {}): OperatorProcess {
  const argv = args[0] === 'run' && !args.some((a) => a.startsWith('--metrics-bind-address')) ? [...args, ...NO_SERVERS] : args;
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli/main.ts'), ...argv], {
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
