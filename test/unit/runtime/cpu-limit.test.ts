import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tunerBounds } from '../../../src/runtime/concurrency-tuner.js';
import {
  ancestors,
  cfsQuota,
  cgroupDirs,
  cgroupPathOf,
  cpuLimit,
  cpusOfQuota,
  parseCgroupMounts,
  parseCpuMax,
  parseCpuStat,
  parseProcCgroup,
} from '../../../src/runtime/cpu-limit.js';

describe('cpu limit of a cgroup', () => {
  it('parses /proc/self/cgroup of a v1 (hybrid) and a v2 host', () => {
    const v1 = parseProcCgroup('9:name=systemd:/\n4:memory:/process_api/abc\n2:cpuacct:/\n1:cpu,cpuacct:/kubepods/pod1/c1\n0::/\n');
    expect(cgroupPathOf(v1, 'cpu')).toBe('/kubepods/pod1/c1');
    expect(cgroupPathOf(v1, 'memory')).toBe('/process_api/abc');
    expect(cgroupPathOf(v1, 'pids')).toBeUndefined();
    const v2 = parseProcCgroup('0::/kubepods.slice/pod1\n');
    expect(cgroupPathOf(v2)).toBe('/kubepods.slice/pod1');
    expect(cgroupPathOf(v2, 'cpu')).toBeUndefined();
  });

  it('turns CPUs into a CFS quota per 100 ms period, as the kubelet does', () => {
    expect(cfsQuota(1)).toEqual({ quotaUs: 100_000, periodUs: 100_000 });
    expect(cfsQuota(0.25)).toEqual({ quotaUs: 25_000, periodUs: 100_000 });
    expect(cfsQuota(2, 50_000)).toEqual({ quotaUs: 100_000, periodUs: 50_000 });
    // The kernel refuses quotas under 1 ms.
    expect(cfsQuota(0.001)).toEqual({ quotaUs: 1_000, periodUs: 100_000 });
    expect(() => cfsQuota(0)).toThrow(RangeError);
  });

  it('reads a quota back as CPUs, and no quota as none', () => {
    expect(cpusOfQuota(150_000, 100_000)).toBe(1.5);
    expect(cpusOfQuota(-1, 100_000)).toBeUndefined();
    expect(parseCpuMax('50000 100000\n')).toBe(0.5);
    expect(parseCpuMax('max 100000\n')).toBeUndefined();
  });

  it('parses cpu.stat of v1 (ns) and v2 (µs) into the same seconds', () => {
    expect(parseCpuStat('nr_periods 11\nnr_throttled 10\nthrottled_time 487448857\nnr_bursts 0\nburst_time 0\n')).toEqual({
      periods: 11,
      throttledPeriods: 10,
      throttledSeconds: 0.487448857,
    });
    expect(parseCpuStat('usage_usec 900\nuser_usec 1\nsystem_usec 2\nnr_periods 4\nnr_throttled 3\nthrottled_usec 250000\n')).toEqual({
      periods: 4,
      throttledPeriods: 3,
      throttledSeconds: 0.25,
    });
    expect(parseCpuStat('')).toEqual({ periods: 0, throttledPeriods: 0, throttledSeconds: 0 });
  });

  it('walks a cgroup path up to the root, where a parent quota also applies', () => {
    expect(ancestors('/a/b')).toEqual(['/a/b', '/a', '/']);
    expect(ancestors('/')).toEqual(['/']);
  });
});

/** A container's view, as the kubelet and containerd lay it out: /proc/self files and the mounted cgroup files. */
async function podTree(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cpu-limit-'));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), text);
  }
  return dir;
}

const POD_V1 = '/kubepods/burstable/pod0f3c/4c1a9e';
const POD_V2 = '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f3c.slice/cri-containerd-4c1a9e.scope';

describe('cpu limit in a pod', () => {
  let dir = '';
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads the mounts of a container: v1 shows its own cgroup at the mount point, v2 too', () => {
    const mounts = parseCgroupMounts(
      [
        `1066 1057 0:30 ${POD_V1} /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct`,
        `1067 1057 0:31 ${POD_V1} /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory`,
        '1068 1057 0:32 / /sys/fs/cgroup/systemd ro - cgroup cgroup rw,xattr,name=systemd',
        '1069 1057 0:26 / /sys/fs/cgroup\\040x ro,nosuid master:9 - cgroup2 cgroup rw,nsdelegate',
        '1070 1057 0:5 / /proc rw - proc proc rw',
      ].join('\n'),
    );
    expect(mounts).toEqual([
      { root: POD_V1, mountPoint: '/sys/fs/cgroup/cpu,cpuacct', version: 1, controllers: ['cpu', 'cpuacct'] },
      { root: POD_V1, mountPoint: '/sys/fs/cgroup/memory', version: 1, controllers: ['memory'] },
      { root: '/', mountPoint: '/sys/fs/cgroup/systemd', version: 1, controllers: ['xattr'] },
      { root: '/', mountPoint: '/sys/fs/cgroup x', version: 2, controllers: [] },
    ]);
    const v1 = mounts[0];
    if (v1 === undefined) throw new Error('no v1 mount');
    // The container's cgroup is the mount point itself: nothing of the host's tree above it is there.
    expect(cgroupDirs(POD_V1, v1)).toEqual(['/sys/fs/cgroup/cpu,cpuacct']);
    expect(cgroupDirs(`${POD_V1}/sub`, v1)).toEqual(['/sys/fs/cgroup/cpu,cpuacct/sub', '/sys/fs/cgroup/cpu,cpuacct']);
    expect(cgroupDirs('/elsewhere', v1)).toEqual(['/sys/fs/cgroup/cpu,cpuacct']);
    // A host mount (root /): the whole path, walked up to the mount point.
    expect(cgroupDirs('/a/b', { root: '/', mountPoint: '/sys/fs/cgroup', version: 2, controllers: [] })).toEqual([
      '/sys/fs/cgroup/a/b',
      '/sys/fs/cgroup/a',
      '/sys/fs/cgroup',
    ]);
  });

  it("finds a v1 pod's limit (limits.cpu 2500m) at the mount point, and the tuner's ceiling follows it", async () => {
    dir = await podTree({
      'proc/cgroup': `12:pids:${POD_V1}\n4:cpu,cpuacct:${POD_V1}\n1:name=systemd:${POD_V1}\n`,
      'sys/cpu,cpuacct/cpu.cfs_quota_us': '250000\n',
      'sys/cpu,cpuacct/cpu.cfs_period_us': '100000\n',
    });
    await writeFile(
      path.join(dir, 'proc/mountinfo'),
      `1066 1057 0:30 ${POD_V1} ${path.join(dir, 'sys/cpu,cpuacct')} ro,nosuid - cgroup cgroup rw,cpu,cpuacct\n`,
    );
    const limit = await cpuLimit({ procCgroup: path.join(dir, 'proc/cgroup'), mountinfo: path.join(dir, 'proc/mountinfo') });
    expect(limit).toEqual({ cpus: Math.min(2.5, os.availableParallelism()), source: 'cgroup-v1' });
    // 2.5 CPUs: start at two runs per whole CPU, at most four (the host's cores may be fewer).
    const whole = Math.ceil(Math.min(2.5, os.availableParallelism()));
    expect(tunerBounds(limit.cpus)).toEqual({ initial: 2 * whole, min: 1, max: Math.max(6, 4 * whole) });
  });

  it("finds a v2 pod's limit (limits.cpu 500m) in cpu.max, with or without a cgroup namespace", async () => {
    dir = await podTree({
      'proc/cgroup-ns': '0::/\n',
      'proc/cgroup-host': `0::${POD_V2}\n`,
      'sys/cpu.max': '50000 100000\n',
    });
    const mountinfo = `1069 1057 0:26 ROOT ${path.join(dir, 'sys')} ro,nosuid - cgroup2 cgroup rw,nsdelegate\n`;
    await writeFile(path.join(dir, 'proc/mountinfo-ns'), mountinfo.replace('ROOT', '/'));
    await writeFile(path.join(dir, 'proc/mountinfo-host'), mountinfo.replace('ROOT', POD_V2));
    for (const view of ['ns', 'host']) {
      const limit = await cpuLimit({
        procCgroup: path.join(dir, `proc/cgroup-${view}`),
        mountinfo: path.join(dir, `proc/mountinfo-${view}`),
      });
      expect(limit).toEqual({ cpus: 0.5, source: 'cgroup-v2' });
      expect(tunerBounds(limit.cpus)).toEqual({ initial: 2, min: 1, max: 6 });
    }
  });

  it("is the host's cores with no quota anywhere", async () => {
    dir = await podTree({ 'proc/cgroup': '0::/\n', 'sys/cpu.max': 'max 100000\n' });
    await writeFile(path.join(dir, 'proc/mountinfo'), `30 1 0:26 / ${path.join(dir, 'sys')} rw - cgroup2 cgroup2 rw\n`);
    expect(await cpuLimit({ procCgroup: path.join(dir, 'proc/cgroup'), mountinfo: path.join(dir, 'proc/mountinfo') })).toEqual({
      cpus: os.availableParallelism(),
      source: 'host',
    });
  });
});
