/**
 * Long-lived processes the OLM commands leave running on this machine for a cluster without a
 * kubelet (the local control plane: kwok fakes every pod): OLM's two operators and a catalog
 * server per `run bundle`. Each is a detached child with a pid file and a log under a state
 * directory per cluster, so a later command (status, cleanup, uninstall) finds and stops it.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface ProcessSpec {
  readonly name: string;
  readonly bin: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
}

/** `$HELM_OPERATOR_CACHE_DIR/olm/<digest of the API server URL>`: one per cluster. */
export function clusterStateDir(server: string): string {
  const cache =
    process.env.HELM_OPERATOR_CACHE_DIR ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'helm-operator-ts');
  return path.join(cache, 'olm', createHash('sha256').update(server).digest('hex').slice(0, 16));
}

const pidFile = (dir: string, name: string): string => path.join(dir, `${name}.pid`);
export const logFile = (dir: string, name: string): string => path.join(dir, `${name}.log`);

/** The pid in `<name>.pid` when that process still runs `bin` (a reused pid is not ours). */
export async function runningPid(dir: string, name: string): Promise<number | undefined> {
  const text = await readFile(pidFile(dir, name), 'utf8').catch(() => '');
  const [pidText, bin] = text.split('\n');
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || bin === undefined) return undefined;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return cmdline[0] === bin ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Starts the process detached (it outlives this command), output appended to `<name>.log`. */
export async function startDetached(dir: string, spec: ProcessSpec): Promise<number> {
  await mkdir(dir, { recursive: true });
  const log = openSync(logFile(dir, spec.name), 'a');
  try {
    const child = spawn(spec.bin, [...spec.args], { detached: true, stdio: ['ignore', log, log], env: spec.env, cwd: dir });
    const pid = child.pid;
    if (pid === undefined) throw new Error(`cannot start ${spec.bin}`);
    child.unref();
    await writeFile(pidFile(dir, spec.name), `${pid}\n${spec.bin}\n`);
    return pid;
  } finally {
    closeSync(log);
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopProcess(dir: string, name: string, graceMs = 10_000): Promise<boolean> {
  const pid = await runningPid(dir, name);
  await rm(pidFile(dir, name), { force: true });
  if (pid === undefined) return false;
  const gone = (): boolean => {
    try {
      process.kill(pid, 0);
      return readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2] === 'Z';
    } catch {
      return true;
    }
  };
  process.kill(pid, 'SIGTERM');
  for (const [signal, limit] of [
    ['SIGTERM', graceMs],
    ['SIGKILL', 5_000],
  ] as const) {
    if (signal === 'SIGKILL' && !gone()) process.kill(pid, 'SIGKILL');
    const until = Date.now() + limit;
    while (!gone() && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    if (gone()) return true;
  }
  return gone();
}

/** The last lines of a process's log, for an error message. */
export function logTail(dir: string, name: string, lines = 15): string {
  try {
    return readFileSync(logFile(dir, name), 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
