import { describe, expect, it } from 'vitest';
import { cgroupDirs, parseCpus, parseMemory, usageBetween, type CgroupReading } from '../../../bench/compare/cgroup.js';
import { parseProcCgroup } from '../../../src/runtime/cpu-limit.js';

describe('bench cgroup limits', () => {
  it('reads CPU quantities as Kubernetes writes them', () => {
    expect(parseCpus('--cpu-limit', '1')).toBe(1);
    expect(parseCpus('--cpu-limit', '0.5')).toBe(0.5);
    expect(parseCpus('--cpu-limit', '1500m')).toBe(1.5);
    expect(() => parseCpus('--cpu-limit', '0')).toThrow(/--cpu-limit must be a CPU quantity .* got "0"/);
    expect(() => parseCpus('--cpu-limit', 'one')).toThrow(/e\.g\. 1, 0\.5, 1500m/);
  });

  it('reads memory quantities, binary and decimal', () => {
    expect(parseMemory('--memory-limit', '512Mi')).toBe(512 * 1024 * 1024);
    expect(parseMemory('--memory-limit', '1Gi')).toBe(1024 ** 3);
    expect(parseMemory('--memory-limit', '800M')).toBe(800e6);
    expect(parseMemory('--memory-limit', '1073741824')).toBe(1073741824);
    expect(() => parseMemory('--memory-limit', '512MB')).toThrow(/--memory-limit must be a memory quantity .* got "512MB"/);
    // Below what any operator starts in: a typo, not a limit.
    expect(() => parseMemory('--memory-limit', '512')).toThrow(/at least 16Mi/);
  });

  it("puts each cgroup under the benchmark's own cgroup of each hierarchy", () => {
    const own = parseProcCgroup('4:memory:/process_api/abc\n2:cpuacct:/\n1:cpu:/\n0::/\n');
    expect(cgroupDirs('/sys/fs/cgroup', own, 'bench-1-ours')).toEqual({
      cpu: '/sys/fs/cgroup/cpu/bench-1-ours',
      cpuacct: '/sys/fs/cgroup/cpuacct/bench-1-ours',
      memory: '/sys/fs/cgroup/memory/process_api/abc/bench-1-ours',
    });
    // A cgroup v2-only host has no v1 hierarchies: a clear error, not a half-made cgroup.
    expect(() => cgroupDirs('/sys/fs/cgroup', parseProcCgroup('0::/user.slice\n'), 'x')).toThrow(/needs cgroup v1 with the cpu controller/);
  });

  it('reports what a phase used as the difference of two readings', () => {
    const at = (cpu: number, throttled: number, periods: number): CgroupReading => ({
      cpuSeconds: cpu,
      throttledPeriods: throttled,
      throttledSeconds: throttled / 10,
      periods,
      memoryPeakBytes: 1,
      memoryLimitHits: 0,
    });
    expect(usageBetween(at(2, 10, 100), at(5.5, 30, 150))).toEqual({
      cpuSeconds: 3.5,
      throttledPeriods: 20,
      throttledSeconds: 2,
      periods: 50,
    });
  });
});
