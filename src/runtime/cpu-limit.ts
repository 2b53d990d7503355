/**
 * How many CPUs this process may use: the CFS quota of its own cgroup (v1 `cpu.cfs_quota_us` /
 * `cpu.cfs_period_us`, v2 `cpu.max`), else `os.availableParallelism()`. A pod's CPU limit is such a
 * quota, and helm's child processes count against it, so the concurrency tuner starts from it
 * rather than from the host's core count (docs/adr/0059-self-tuning-concurrency.md).
 *
 * The parsers are pure; `cpuLimit` is the thin read of /proc and /sys. The benchmark's cgroups
 * (bench/compare/cgroup.ts) parse /proc/self/cgroup and do the quota arithmetic with the same functions.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** One line of /proc/<pid>/cgroup: `id:controllers:path`. v2's single line has id 0 and no controllers. */
export interface CgroupMembership {
  readonly id: number;
  readonly controllers: readonly string[];
  readonly path: string;
}

export function parseProcCgroup(text: string): CgroupMembership[] {
  const out: CgroupMembership[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (m === null) continue;
    out.push({ id: Number(m[1]), controllers: (m[2] ?? '').split(',').filter((c) => c !== ''), path: m[3] ?? '/' });
  }
  return out;
}

/** The cgroup path of `controller` (v1), or of the unified hierarchy when `controller` is undefined (v2). */
export function cgroupPathOf(memberships: readonly CgroupMembership[], controller?: string): string | undefined {
  if (controller === undefined) return memberships.find((m) => m.id === 0 && m.controllers.length === 0)?.path;
  return memberships.find((m) => m.controllers.includes(controller))?.path;
}

/** Default CFS period (100 ms), the kernel's and the kubelet's. */
export const CFS_PERIOD_US = 100_000;

/** The quota that gives `cpus` CPUs per `periodUs`: what the kubelet writes for a pod's `limits.cpu`. */
export function cfsQuota(cpus: number, periodUs = CFS_PERIOD_US): { quotaUs: number; periodUs: number } {
  if (!(cpus > 0) || !Number.isFinite(cpus)) throw new RangeError(`a CPU limit must be a positive number, got ${cpus}`);
  // The kernel refuses quotas under 1 ms.
  return { quotaUs: Math.max(1_000, Math.round(cpus * periodUs)), periodUs };
}

/** CPUs a quota allows; undefined for no quota (`-1` in v1, `max` in v2). */
export function cpusOfQuota(quotaUs: number, periodUs: number): number | undefined {
  if (!(quotaUs > 0) || !(periodUs > 0)) return undefined;
  return quotaUs / periodUs;
}

/** v2 `cpu.max`: `<quota|max> <period>`. */
export function parseCpuMax(text: string): number | undefined {
  const [quota, period] = text.trim().split(/\s+/);
  if (quota === undefined || quota === 'max') return undefined;
  return cpusOfQuota(Number(quota), Number(period ?? CFS_PERIOD_US));
}

/** The CFS counters of a `cpu.stat` file, v1 (`throttled_time`, ns) or v2 (`throttled_usec`). */
export interface CpuStat {
  readonly periods: number;
  readonly throttledPeriods: number;
  readonly throttledSeconds: number;
}

export function parseCpuStat(text: string): CpuStat {
  const fields = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key !== undefined && key !== '' && value !== undefined) fields.set(key, Number(value));
  }
  const throttledSeconds = fields.has('throttled_usec') ? (fields.get('throttled_usec') ?? 0) / 1e6 : (fields.get('throttled_time') ?? 0) / 1e9;
  return { periods: fields.get('nr_periods') ?? 0, throttledPeriods: fields.get('nr_throttled') ?? 0, throttledSeconds };
}

export interface CpuLimit {
  readonly cpus: number;
  /** Where the figure comes from. */
  readonly source: 'cgroup-v1' | 'cgroup-v2' | 'host';
}

const readText = (file: string): Promise<string | undefined> => readFile(file, 'utf8').then((t) => t, () => undefined);

/**
 * The CPU limit of this process's cgroup, walking up to the root (a quota on a parent limits the
 * children too; the smallest wins). Any file that cannot be read counts as no quota there.
 */
export async function cpuLimit(root = '/sys/fs/cgroup'): Promise<CpuLimit> {
  const host: CpuLimit = { cpus: os.availableParallelism(), source: 'host' };
  const memberships = parseProcCgroup((await readText('/proc/self/cgroup')) ?? '');
  const v1 = cgroupPathOf(memberships, 'cpu');
  const v2 = cgroupPathOf(memberships);
  const quotas: number[] = [];
  if (v1 !== undefined) {
    for (const dir of ancestors(v1)) {
      const [quota, period] = await Promise.all([readText(path.join(root, 'cpu', dir, 'cpu.cfs_quota_us')), readText(path.join(root, 'cpu', dir, 'cpu.cfs_period_us'))]);
      const cpus = cpusOfQuota(Number(quota), Number(period));
      if (cpus !== undefined) quotas.push(cpus);
    }
    if (quotas.length > 0) return { cpus: Math.min(host.cpus, ...quotas), source: 'cgroup-v1' };
  }
  if (v2 !== undefined) {
    for (const dir of ancestors(v2)) {
      const cpus = parseCpuMax((await readText(path.join(root, dir, 'cpu.max'))) ?? 'max');
      if (cpus !== undefined) quotas.push(cpus);
    }
    if (quotas.length > 0) return { cpus: Math.min(host.cpus, ...quotas), source: 'cgroup-v2' };
  }
  return host;
}

/** `/a/b` → `/a/b`, `/a`, `/`. */
export function ancestors(cgroupPath: string): string[] {
  const parts = cgroupPath.split('/').filter((p) => p !== '');
  return Array.from({ length: parts.length + 1 }, (_, i) => `/${parts.slice(0, parts.length - i).join('/')}`);
}
