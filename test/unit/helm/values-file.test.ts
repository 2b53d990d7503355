import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { selfInstance, startTime } from '../../../src/helm/instance.js';
import { removeStaleValuesDirs, valuesDirOwner, withValuesFile } from '../../../src/helm/values-file.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { workDirPerTest } from './helpers.js';

let work = '';
workDirPerTest('helm-values-test-', (dir) => (work = dir));

/** The values directories left in `tmp`. */
async function valuesDirs(tmp: string): Promise<string[]> {
  return (await readdir(tmp)).filter((n) => n.startsWith('helm-values-'));
}

describe('stale values directories', () => {
  it('removes those of ended processes only, never a live one', async () => {
    // A pid that cannot be alive (above the kernel's pid_max), and two that are: ours and our parent's.
    const dead = path.join(work, 'helm-values-99999999.123-AbC123');
    const ours = path.join(work, `helm-values-${selfInstance()}-XyZ789`);
    const parent = path.join(work, `helm-values-${process.ppid}.${startTime(process.ppid) ?? ''}-Qwe456`);
    const unrelated = path.join(work, 'helm-values-notapid');
    for (const dir of [dead, ours, parent, unrelated]) await mkdir(dir);
    await writeFile(path.join(dead, 'values.json'), '{"password":"s3cret"}');
    const removed = await removeStaleValuesDirs(work, silentLogger());
    expect(removed).toEqual([dead]);
    expect((await valuesDirs(work)).sort()).toEqual([path.basename(ours), path.basename(parent), path.basename(unrelated)].sort());
  });

  it("removes those of an earlier process that had this process's pid (node is PID 1 at every container start)", async () => {
    const predecessor = path.join(work, `helm-values-${process.pid}.1-AbC123`);
    // Named by a version that keyed directories by pid alone: this process makes none such.
    const legacy = path.join(work, `helm-values-${process.pid}-DeF456`);
    const legacyDead = path.join(work, 'helm-values-99999999-GhI789');
    const legacyLive = path.join(work, `helm-values-${process.ppid}-JkL012`);
    for (const dir of [predecessor, legacy, legacyDead, legacyLive]) await mkdir(dir);
    const removed = await removeStaleValuesDirs(work, silentLogger());
    expect(removed.sort()).toEqual([predecessor, legacy, legacyDead].sort());
    expect(await valuesDirs(work)).toEqual([path.basename(legacyLive)]);
  });

  it('names its own values directories after its process start, so another process can tell whether they are stale', async () => {
    expect(valuesDirOwner(`helm-values-${selfInstance()}-a1B2c3`)).toEqual({ instance: selfInstance() });
    expect(valuesDirOwner(`helm-values-${process.pid}-a1B2c3`)).toEqual({ pid: process.pid });
    expect(valuesDirOwner('helm-values-a1B2c3')).toBeUndefined();
    expect(selfInstance()).toBe(`${process.pid}.${startTime(process.pid) ?? ''}`);
    const dirs = await withValuesFile(work, {}, () => valuesDirs(work));
    expect(await valuesDirs(work)).toEqual([]);
    expect(dirs.map((n) => valuesDirOwner(n))).toEqual([{ instance: selfInstance() }]);
  });
});
