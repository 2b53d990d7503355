import { describe, expect, it } from 'vitest';
import { ancestors, cfsQuota, cgroupPathOf, cpusOfQuota, parseCpuMax, parseCpuStat, parseProcCgroup } from '../../../src/runtime/cpu-limit.js';

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
