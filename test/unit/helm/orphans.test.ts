import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HelmClient } from '../../../src/helm/client.js';
import { INSTANCE_ENV } from '../../../src/helm/environment.js';
import { selfInstance, startTime } from '../../../src/helm/instance.js';
import { workDirPerTest } from './helpers.js';

let work = '';
workDirPerTest('helm-orphans-test-', (dir) => (work = dir));

describe.runIf(process.platform === 'linux')('helm processes left by a killed operator process', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
  });

  /** A stand-in for a helm process marked with `instance`, with the helm homes under `tmp`; `stubborn` ignores SIGTERM. */
  const marked = async (instance: string, tmp: string, stubborn = false): Promise<ChildProcess> => {
    const script = stubborn ? "trap '' TERM; echo up; while :; do sleep 0.1; done" : 'echo up; exec sleep 30';
    const child = spawn('sh', ['-c', script], {
      env: { PATH: process.env.PATH, [INSTANCE_ENV]: instance, HELM_DATA_HOME: path.join(tmp, 'helm', 'data') },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    children.push(child);
    await new Promise((resolve) => child.stdout.once('data', resolve));
    return child;
  };
  const running = (c: ChildProcess): boolean => c.pid !== undefined && startTime(c.pid) !== undefined;

  it('stops those of an ended operator process with the same helm homes, and no other', async () => {
    const ended = '99999999.1';
    const orphan = await marked(ended, work);
    const stubborn = await marked(`${process.pid}.1`, work, true);
    const ours = await marked(selfInstance(), work);
    const otherHomes = await marked(ended, path.join(work, 'elsewhere'));
    const stopped = await new HelmClient({ binary: 'helm', tmpDir: work }).stopOrphans(500);
    // The stubborn shell's own `sleep` carries the mark too, as helm's plugins and post-renderers would.
    expect(stopped).toEqual(expect.arrayContaining([orphan.pid, stubborn.pid]));
    expect(stopped).not.toContain(ours.pid);
    expect(stopped).not.toContain(otherHomes.pid);
    // The stubborn one got SIGKILL after the grace period.
    await vi.waitFor(() => {
      expect([running(orphan), running(stubborn)]).toEqual([false, false]);
    });
    expect([running(ours), running(otherHomes)]).toEqual([true, true]);
  });

  it("finds nothing to stop with the user's helm homes (the scaffolding CLI)", async () => {
    const orphan = await marked('99999999.1', work);
    expect(await new HelmClient({ binary: 'helm', tmpDir: work, userHelmHome: true }).stopOrphans(500)).toEqual([]);
    expect(running(orphan)).toBe(true);
  });
});
