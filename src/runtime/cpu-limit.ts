/**
 * How many CPUs this process may use: the CFS quota of its own cgroup (v1 `cpu.cfs_quota_us` /
 * `cpu.cfs_period_us`, v2 `cpu.max`), else `os.availableParallelism()`. A pod's CPU limit is such a
 * quota, and helm's child processes count against it, so the concurrency tuner starts from it
 * rather than from the host's core count (docs/adr/0059-self-tuning-concurrency.md).
 *
 * The cgroup directories come from /proc/self/mountinfo, as a container sees them (in a pod the
 * mount point shows the container's own cgroup, not the host's tree). The parsers are pure;
 * `cpuLimit` is the thin read of /proc and /sys. The benchmark's cgroups
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
  const throttledSeconds = fields.has('throttled_usec')
    ? (fields.get('throttled_usec') ?? 0) / 1e6
    : (fields.get('throttled_time') ?? 0) / 1e9;
  return { periods: fields.get('nr_periods') ?? 0, throttledPeriods: fields.get('nr_throttled') ?? 0, throttledSeconds };
}

export interface CpuLimit {
  readonly cpus: number;
  /** Where the figure comes from. */
  readonly source: 'cgroup-v1' | 'cgroup-v2' | 'host';
}

const readText = (file: string): Promise<string | undefined> =>
  readFile(file, 'utf8').then(
    (t) => t,
    () => undefined,
  );

/** A cgroup filesystem mounted in this process's mount namespace (one line of /proc/self/mountinfo). */
export interface CgroupMount {
  /** The cgroup directory this mount shows at its mount point (`/` unless a container's view). */
  readonly root: string;
  readonly mountPoint: string;
  readonly version: 1 | 2;
  /** v1: the controllers of the hierarchy (`cpu`, `cpuacct`, …); v2: none. */
  readonly controllers: readonly string[];
}

/** mountinfo escapes space, tab, newline and backslash as octal (`\040`). */
const unescapeMountPath = (p: string): string => p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** The cgroup (v1) and cgroup2 mounts of a /proc/<pid>/mountinfo. */
export function parseCgroupMounts(text: string): CgroupMount[] {
  const out: CgroupMount[] = [];
  for (const line of text.split('\n')) {
    const [before, after] = line.split(' - ');
    if (before === undefined || after === undefined) continue;
    const fields = before.trim().split(' ');
    const [fsType, , superOptions] = after.trim().split(' ');
    const root = fields[3];
    const mountPoint = fields[4];
    if (root === undefined || mountPoint === undefined) continue;
    if (fsType === 'cgroup2')
      out.push({ root: unescapeMountPath(root), mountPoint: unescapeMountPath(mountPoint), version: 2, controllers: [] });
    if (fsType === 'cgroup') {
      const controllers = (superOptions ?? '').split(',').filter((o) => o !== 'rw' && o !== 'ro' && !o.includes('='));
      out.push({ root: unescapeMountPath(root), mountPoint: unescapeMountPath(mountPoint), version: 1, controllers });
    }
  }
  return out;
}

/** Where the cgroup filesystems are when /proc/self/mountinfo cannot be read: the host's usual mounts. */
const DEFAULT_MOUNTS: readonly CgroupMount[] = [
  { root: '/', mountPoint: '/sys/fs/cgroup/cpu', version: 1, controllers: ['cpu'] },
  { root: '/', mountPoint: '/sys/fs/cgroup', version: 2, controllers: [] },
];

/**
 * The directories whose quota limits a process in `cgroupPath`, from its own up to the mount point.
 * In a pod the mount shows the container's own cgroup at the mount point (its `root` is the
 * container's cgroup path, or `/` with a cgroup namespace), so the path is taken relative to the
 * mount's root: joining the full path onto the mount point names a directory that does not exist
 * there, and the pod's limit would go unseen. A path outside the mount's root (another namespace's
 * view) is the mount point itself, the only cgroup the container can see.
 */
export function cgroupDirs(cgroupPath: string, mount: CgroupMount): string[] {
  const root = mount.root === '/' ? '' : mount.root.replace(/\/$/, '');
  const inside =
    root === '' ? cgroupPath : cgroupPath === root ? '/' : cgroupPath.startsWith(`${root}/`) ? cgroupPath.slice(root.length) : '/';
  return ancestors(inside).map((dir) => (dir === '/' ? mount.mountPoint : path.join(mount.mountPoint, dir)));
}

/** Files the limit is read from; tests point them at a pod-like tree. */
export interface CpuLimitSources {
  readonly procCgroup: string;
  readonly mountinfo: string;
}

const PROC_SELF: CpuLimitSources = { procCgroup: '/proc/self/cgroup', mountinfo: '/proc/self/mountinfo' };

/**
 * The CPU limit of this process's cgroup, walking up to the top of what is mounted (a quota on a
 * parent limits the children too; the smallest wins). v1's `cpu` controller is read first (on a
 * hybrid host v2 has no cpu controller). Any file that cannot be read counts as no quota there.
 */
export async function cpuLimit(sources: CpuLimitSources = PROC_SELF): Promise<CpuLimit> {
  const host: CpuLimit = { cpus: os.availableParallelism(), source: 'host' };
  const memberships = parseProcCgroup((await readText(sources.procCgroup)) ?? '');
  const mountinfo = await readText(sources.mountinfo);
  const mounts = mountinfo === undefined ? DEFAULT_MOUNTS : parseCgroupMounts(mountinfo);
  const v1 = await smallestQuota(
    cgroupPathOf(memberships, 'cpu'),
    mounts.find((m) => m.version === 1 && m.controllers.includes('cpu')),
    readV1Quota,
  );
  if (v1 !== undefined) return { cpus: Math.min(host.cpus, v1), source: 'cgroup-v1' };
  const v2 = await smallestQuota(
    cgroupPathOf(memberships),
    mounts.find((m) => m.version === 2),
    readV2Quota,
  );
  if (v2 !== undefined) return { cpus: Math.min(host.cpus, v2), source: 'cgroup-v2' };
  return host;
}

async function readV1Quota(dir: string): Promise<number | undefined> {
  const [quota, period] = await Promise.all([readText(path.join(dir, 'cpu.cfs_quota_us')), readText(path.join(dir, 'cpu.cfs_period_us'))]);
  return cpusOfQuota(Number(quota), Number(period));
}

async function readV2Quota(dir: string): Promise<number | undefined> {
  return parseCpuMax((await readText(path.join(dir, 'cpu.max'))) ?? 'max');
}

/** The smallest quota from the process's cgroup up to the mount point; undefined when none has one. */
async function smallestQuota(
  cgroupPath: string | undefined,
  mount: CgroupMount | undefined,
  read: (dir: string) => Promise<number | undefined>,
): Promise<number | undefined> {
  if (cgroupPath === undefined || mount === undefined) return undefined;
  const quotas = (await Promise.all(cgroupDirs(cgroupPath, mount).map(read))).filter((q): q is number => q !== undefined);
  return quotas.length === 0 ? undefined : Math.min(...quotas);
}

/** `/a/b` → `/a/b`, `/a`, `/`. */
export function ancestors(cgroupPath: string): string[] {
  const parts = cgroupPath.split('/').filter((p) => p !== '');
  return Array.from({ length: parts.length + 1 }, (_, i) => `/${parts.slice(0, parts.length - i).join('/')}`);
}
