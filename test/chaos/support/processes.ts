/**
 * Process-level faults on this machine, read straight from /proc: the test cluster's own
 * components (found by their pid files under the cluster directory, never by name), the operator's
 * process tree, and CPU time.
 */
import { spawn } from 'node:child_process';
import { openSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';

const CLOCK_TICKS_PER_SECOND = 100;

function readProc(pid: number, file: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return undefined;
  }
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces). */
function statFields(pid: number): string[] | undefined {
  const stat = readProc(pid, 'stat');
  if (stat === undefined) return undefined;
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

export function alive(pid: number): boolean {
  const f = statFields(pid);
  return f !== undefined && f[0] !== 'Z';
}

/** utime + stime of `pid` in seconds. */
export function cpuSeconds(pid: number): number {
  const f = statFields(pid);
  if (f === undefined) throw new Error(`process ${pid} is gone`);
  return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS_PER_SECOND;
}

/** When `pid` was forked, as epoch ms (to the 10 ms of the clock tick); undefined when it is gone. */
export function startedAt(pid: number): number | undefined {
  const f = statFields(pid);
  if (f === undefined) return undefined;
  const uptime = readFileSync('/proc/uptime', 'utf8');
  const bootedAt = Date.now() - Number(uptime.split(' ')[0]) * 1000;
  return Math.round(bootedAt + (Number(f[19]) * 1000) / CLOCK_TICKS_PER_SECOND);
}

/** Average CPU use of `pid` (1 = one full core) over `ms`. */
export async function cpuUse(pid: number, ms = 5_000): Promise<number> {
  const before = cpuSeconds(pid);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  return (cpuSeconds(pid) - before) / ((performance.now() - t0) / 1000);
}

export function cmdline(pid: number): string[] {
  return (readProc(pid, 'cmdline') ?? '').split('\0').filter((a) => a !== '');
}

/** Each live process's parent, read from /proc once. */
function parents(): Map<number, number> {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (f !== undefined) parentOf.set(Number(entry), Number(f[1]));
  }
  return parentOf;
}

/** Every live descendant of `pid` (children first-level before theirs). */
export function descendants(pid: number, parentOf = parents()): number[] {
  const out: number[] = [];
  let frontier = [pid];
  while (frontier.length > 0) {
    const next = [...parentOf].filter(([, ppid]) => frontier.includes(ppid)).map(([child]) => child);
    out.push(...next);
    frontier = next;
  }
  return out;
}

/**
 * helm processes the operator `pid` runs right now, with their verb (install, upgrade, …): its
 * children only (it spawns helm without a shell). A child of helm itself, forked and not yet
 * exec'd, shows helm's command line too, and is no helm run.
 */
export function helmChildren(pid: number, parentOf = parents()): { pid: number; verb: string; args: string[]; children: number }[] {
  const helm = inject('helmBin');
  return [...parentOf]
    .filter(([, ppid]) => ppid === pid)
    .map(([child]) => ({ pid: child, args: cmdline(child) }))
    .filter((p) => p.args[0] === helm || path.basename(p.args[0] ?? '') === 'helm')
    .map((p) => ({ ...p, verb: p.args[1] ?? '', children: [...parentOf.values()].filter((pp) => pp === p.pid).length }));
}

/** Sends `signal` to each of `pids`, skipping those already gone. */
export function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const p of pids) {
    try {
      process.kill(p, signal);
    } catch {
      // already gone
    }
  }
}

/** SIGKILL to `pid` and everything below it, as when the OOM killer or a node takes the container. */
export function killTree(pid: number): void {
  const tree = [pid, ...descendants(pid)];
  signalAll(tree, 'SIGSTOP'); // freeze first, so nothing reacts to a sibling's death
  signalAll(tree, 'SIGKILL');
}

export type Component = 'kube-apiserver' | 'etcd' | 'kube-controller-manager' | 'kube-scheduler';

export interface Restart {
  /** Starts the component again with the command line it had; returns the new pid. */
  start(): number;
}

/** One control-plane component of the chaos cluster, by its pid file. */
export class ClusterComponent {
  readonly #pidFile: string;
  readonly #logFile: string;

  constructor(readonly name: Component) {
    const dir = path.dirname(inject('kubeconfigPath'));
    this.#pidFile = path.join(dir, 'pids', `${name}.pid`);
    this.#logFile = path.join(dir, 'logs', `${name}.log`);
  }

  pid(): number {
    const pid = Number(readFileSync(this.#pidFile, 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) throw new Error(`${this.name}: no live process in ${this.#pidFile}`);
    return pid;
  }

  running(): boolean {
    try {
      this.pid();
      return true;
    } catch {
      return false;
    }
  }

  stop(): void {
    process.kill(this.pid(), 'SIGSTOP');
  }

  /**
   * How to start the component again: its own command line, working directory and environment,
   * read from /proc now (while it lives). `start` writes the new pid back to the pid file, so
   * `hack/cluster.sh down` still finds it.
   */
  snapshot(): Restart {
    const pid = this.pid();
    const argv = cmdline(pid);
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    const env = Object.fromEntries(
      (readProc(pid, 'environ') ?? '')
        .split('\0')
        .filter((e) => e.includes('='))
        .map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
    );
    return {
      start: () => {
        if (alive(pid)) throw new Error(`${this.name}: process ${pid} is still running`);
        const log = openSync(this.#logFile, 'a');
        const child = spawn(argv[0]!, argv.slice(1), { cwd, env, detached: true, stdio: ['ignore', log, log] });
        child.unref();
        if (child.pid === undefined) throw new Error(`${this.name}: could not restart ${argv[0]}`);
        writeFileSync(this.#pidFile, String(child.pid));
        return child.pid;
      },
    };
  }

  /** SIGKILLs the (possibly stopped) component; returns how to start it again. */
  kill(): Restart {
    const restart = this.snapshot();
    process.kill(this.pid(), 'SIGKILL');
    return restart;
  }
}

/** One helm process as seen from /proc: who ran it, on which release, first and last seen alive. */
export interface HelmProcess {
  readonly owner: string;
  readonly pid: number;
  readonly verb: string;
  readonly release: string;
  /** When it was forked (epoch ms, from /proc, to 10 ms): a child seen first after a thaw may have been forked before the freeze, exec'ing helm only once thawed. */
  readonly started: number;
  readonly first: number;
  last: number;
  /**
   * When it was seen without a child process: helm's only children are its post-renderer, so a
   * helm seen with one is parked in the operator's post-render (nothing stored or applied yet).
   */
  readonly unparked: number[];
  /**
   * Whether it was ever seen with a socket of its own (beyond stdio, which libuv makes of socket
   * pairs): helm opens one to the API server for its first request and keeps it. One never seen
   * with any made no request before it was gone.
   */
  connected: boolean;
}

/** Whether `pid` has a socket open on a descriptor above stdio. */
function hasOwnSocket(pid: number): boolean {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => Number(fd) > 2 && readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:'));
  } catch {
    return false; // gone meanwhile
  }
}

/**
 * Watches the helm children of some operator processes every few ms, so a test can tell when each
 * helm process really ran (an operator's own log says when it noticed the exit, which for a frozen
 * operator is much later).
 */
export class HelmSampler {
  readonly seen = new Map<number, HelmProcess>();
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly owners: () => Readonly<Record<string, number>>) {}

  start(intervalMs = 10): void {
    this.#timer = setInterval(() => {
      this.sample();
    }, intervalMs);
  }

  sample(): void {
    const now = Date.now();
    const parentOf = parents();
    for (const [owner, pid] of Object.entries(this.owners())) {
      if (!alive(pid)) continue;
      for (const h of helmChildren(pid, parentOf)) {
        if (h.verb === 'version') continue;
        const release = h.args[h.args.indexOf('--') + 1] ?? '';
        const known = this.seen.get(h.pid) ?? {
          owner,
          pid: h.pid,
          verb: h.verb,
          release,
          started: startedAt(h.pid) ?? now,
          first: now,
          last: now,
          unparked: [],
          connected: false,
        };
        this.seen.set(h.pid, known);
        known.last = now;
        if (h.children === 0) known.unparked.push(now);
        if (!known.connected) known.connected = hasOwnSocket(h.pid);
      }
    }
  }

  stop(): HelmProcess[] {
    clearInterval(this.#timer);
    return [...this.seen.values()];
  }
}
