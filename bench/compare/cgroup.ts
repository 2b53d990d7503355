/**
 * A cgroup (v1) per operator for `--cpu-limit` / `--memory-limit`: the limit a pod's `resources.limits`
 * puts on an operator, with helm's child processes inside it and the control plane outside it
 * (docs/adr/0058-limited-bench-mode.md).
 *
 * The cgroups are made under the benchmark's own cgroup of each hierarchy (`cpu`, `cpuacct`,
 * `memory`), so they stay inside whatever limits the benchmark itself runs under. The operator is
 * started through `sh -c 'echo $$ > …/cgroup.procs; exec …'`, so it is in the cgroup before its
 * first instruction and every child inherits it. The host is restored however the run ends: every
 * cgroup made is removed on `remove()`, on exit, and on SIGINT/SIGTERM (its processes are moved back
 * to the parent first, since a cgroup with processes cannot be removed).
 *
 * Needs root (writing cgroupfs); not CAP_SYS_RESOURCE. cgroup v2 is not supported here: the
 * benchmark's own cgroup would need its controllers delegated, which this machine cannot show.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cfsQuota, cgroupPathOf, parseCpuStat, parseProcCgroup, type CgroupMembership } from '../../src/runtime/cpu-limit.js';

export interface Limits {
  /** CPUs (e.g. 1, 0.5); the quota per 100 ms period. */
  readonly cpus: number;
  readonly memoryBytes: number;
}

const MEMORY_UNITS: Readonly<Record<string, number>> = { '': 1, k: 1e3, M: 1e6, G: 1e9, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };

/** A Kubernetes memory quantity: `512Mi`, `1Gi`, `800M`, `1073741824`. */
export function parseMemory(flag: string, v: string): number {
  const m = /^(\d+(?:\.\d+)?)(|k|M|G|Ki|Mi|Gi)$/.exec(v.trim());
  const bytes = m === null ? NaN : Number(m[1]) * (MEMORY_UNITS[m[2] ?? ''] ?? NaN);
  if (!(bytes >= 16 * 1024 ** 2)) throw new Error(`${flag} must be a memory quantity of at least 16Mi (e.g. 512Mi, 1Gi), got "${v}"`);
  return Math.round(bytes);
}

/** A Kubernetes CPU quantity: `1`, `0.5`, `1500m`. */
export function parseCpus(flag: string, v: string): number {
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(v.trim());
  const cpus = m === null ? NaN : Number(m[1]) / (m[2] === 'm' ? 1000 : 1);
  if (!(cpus >= 0.01)) throw new Error(`${flag} must be a CPU quantity of at least 10m (e.g. 1, 0.5, 1500m), got "${v}"`);
  return cpus;
}

/** What the cgroup counted between two readings. */
export interface CgroupUsage {
  /** CPU the cgroup's processes used (cpuacct.usage), seconds. */
  readonly cpuSeconds: number;
  /** CFS periods in which the quota ran out, and the time its processes waited for the next. */
  readonly throttledPeriods: number;
  readonly throttledSeconds: number;
  readonly periods: number;
}

export interface CgroupReading extends CgroupUsage {
  /** memory.max_usage_in_bytes: the peak since the cgroup was made (page cache included). */
  readonly memoryPeakBytes: number;
  /** memory.failcnt: times the limit was hit (reclaim, or OOM). */
  readonly memoryLimitHits: number;
}

/** Pure: the usage between two readings. */
export function usageBetween(before: CgroupReading, after: CgroupReading): CgroupUsage {
  return {
    cpuSeconds: after.cpuSeconds - before.cpuSeconds,
    throttledPeriods: after.throttledPeriods - before.throttledPeriods,
    throttledSeconds: after.throttledSeconds - before.throttledSeconds,
    periods: after.periods - before.periods,
  };
}

type Hierarchy = 'cpu' | 'cpuacct' | 'memory';

/** Pure: the directory of the cgroup `name` in each hierarchy, under the benchmark's own cgroup there. */
export function cgroupDirs(root: string, own: readonly CgroupMembership[], name: string): Record<Hierarchy, string> {
  const dir = (h: Hierarchy): string => {
    const parent = cgroupPathOf(own, h);
    if (parent === undefined)
      throw new Error(`--cpu-limit needs cgroup v1 with the ${h} controller (see /proc/self/cgroup); this host has none`);
    return path.join(root, h, parent, name);
  };
  return { cpu: dir('cpu'), cpuacct: dir('cpuacct'), memory: dir('memory') };
}

const live = new Set<LimitCgroup>();
let hooked = false;

/** Removes every cgroup still there; synchronous, so it also runs from an exit handler. */
function removeAll(): void {
  for (const c of live) c.remove();
}

function hookCleanup(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', removeAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      removeAll();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  }
}

export class LimitCgroup {
  readonly dirs: Record<Hierarchy, string>;
  #removed = false;

  private constructor(dirs: Record<Hierarchy, string>) {
    this.dirs = dirs;
  }

  /** Makes the cgroup `name` with `limits`; a leftover of that name (an earlier run killed hard) is removed first. */
  static create(name: string, limits: Limits, root = '/sys/fs/cgroup'): LimitCgroup {
    const own = parseProcCgroup(readFileSync('/proc/self/cgroup', 'utf8'));
    const c = new LimitCgroup(cgroupDirs(root, own, name));
    c.remove();
    c.#removed = false;
    hookCleanup();
    live.add(c);
    try {
      for (const dir of Object.values(c.dirs)) mkdirSync(dir);
      const { quotaUs, periodUs } = cfsQuota(limits.cpus);
      writeFileSync(path.join(c.dirs.cpu, 'cpu.cfs_period_us'), String(periodUs));
      writeFileSync(path.join(c.dirs.cpu, 'cpu.cfs_quota_us'), String(quotaUs));
      writeFileSync(path.join(c.dirs.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    } catch (err) {
      c.remove();
      throw new Error(
        `could not make the cgroup ${name} (run the benchmark as root on a cgroup v1 host): ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
    return c;
  }

  /** `sh -c` arguments that join this cgroup, then exec `command args…`. */
  wrap(command: string, args: readonly string[]): { command: string; args: string[] } {
    const join = Object.values(this.dirs)
      .map((d) => `echo $$ > '${path.join(d, 'cgroup.procs')}'`)
      .join(' && ');
    return { command: '/bin/sh', args: ['-c', `${join} && exec "$@"`, 'sh', command, ...args] };
  }

  read(): CgroupReading {
    const text = (dir: string, file: string): string => readFileSync(path.join(dir, file), 'utf8');
    const stat = parseCpuStat(text(this.dirs.cpu, 'cpu.stat'));
    return {
      cpuSeconds: Number(text(this.dirs.cpuacct, 'cpuacct.usage')) / 1e9,
      throttledPeriods: stat.throttledPeriods,
      throttledSeconds: stat.throttledSeconds,
      periods: stat.periods,
      memoryPeakBytes: Number(text(this.dirs.memory, 'memory.max_usage_in_bytes')),
      memoryLimitHits: Number(text(this.dirs.memory, 'memory.failcnt')),
    };
  }

  /** Moves any process left back to the parent cgroup, then removes the cgroup. Idempotent; never throws. */
  remove(): void {
    if (this.#removed) return;
    this.#removed = true;
    live.delete(this);
    for (const dir of Object.values(this.dirs)) {
      if (!existsSync(dir)) continue;
      try {
        emptyInto(dir, path.dirname(dir));
        rmdirSync(dir);
      } catch (err) {
        process.stderr.write(`[bench-compare] could not remove the cgroup ${dir}: ${err instanceof Error ? err.message : String(err)}\n`);
      }
    }
  }
}

/** Moves every process of the cgroup `dir` into `parent` (a cgroup with processes cannot be removed). */
function emptyInto(dir: string, parent: string): void {
  const pids = readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')
    .split('\n')
    .filter((p) => p !== '');
  for (const pid of pids) {
    try {
      writeFileSync(path.join(parent, 'cgroup.procs'), pid);
    } catch {
      // It exited meanwhile.
    }
  }
}
