import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultIdentity, LeaderElectionConfigError, leaderElectionNamespace } from '../../../src/runtime/pod-identity.js';

describe('identity and namespace', () => {
  it('identity is the hostname plus a random suffix, unique per process start', () => {
    const a = defaultIdentity();
    expect(a.startsWith(`${os.hostname()}_`)).toBe(true);
    expect(defaultIdentity()).not.toBe(a);
  });

  it('uses the flag, else the pod namespace file, else fails with a clear error', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'leader-ns-'));
    try {
      const file = path.join(dir, 'namespace');
      expect(await leaderElectionNamespace('flag-ns', file)).toBe('flag-ns');
      await expect(leaderElectionNamespace(undefined, file)).rejects.toThrow(LeaderElectionConfigError);
      await expect(leaderElectionNamespace('', file)).rejects.toThrow(
        /--leader-election-namespace is required .* not running in a cluster/,
      );
      await writeFile(file, 'operators\n');
      expect(await leaderElectionNamespace(undefined, file)).toBe('operators');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
