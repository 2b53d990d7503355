/**
 * The private temp files through which values reach helm (never the command line), and the
 * removal of those a killed operator process left behind, secrets included.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../telemetry/logger.js';
import { instanceEnded, pidEnded, selfInstance, type InstanceId } from './instance.js';

/**
 * Values directories are named after the process start that made them (`helm-values-<pid>.<start>-XXXXXX`,
 * see instance.ts), so a stale one can be told apart even when the new process has the old pid.
 */
const VALUES_DIR_PREFIX = 'helm-values-';

/**
 * Who made the values directory `name`: an instance id, or for the pid-only names of earlier
 * versions (`helm-values-<pid>-XXXXXX`) a pid. Undefined for any other name.
 */
export function valuesDirOwner(name: string): { readonly instance: InstanceId } | { readonly pid: number } | undefined {
  const m = /^helm-values-(?:(\d+\.[0-9a-f]+)|(\d+))-[A-Za-z0-9]{6}$/.exec(name);
  if (m === null) return undefined;
  return m[1] !== undefined ? { instance: m[1] } : { pid: Number(m[2]) };
}

/** Whether the process that made a values directory has ended. */
function ownerEnded(owner: NonNullable<ReturnType<typeof valuesDirOwner>>): boolean {
  if ('instance' in owner) return instanceEnded(owner.instance);
  // Named by an earlier version: this process makes none such, so one with its pid is a predecessor's.
  return owner.pid === process.pid || pidEnded(owner.pid);
}

/**
 * Runs `fn` with the path of a fresh 0600 JSON file holding `values`, inside a private
 * (mkdtemp, 0700) directory under `tmpDir` that is removed however `fn` ends.
 */
export async function withValuesFile<T>(
  tmpDir: string,
  values: Readonly<Record<string, unknown>>,
  fn: (file: string) => Promise<T>,
): Promise<T> {
  const dir = await mkdtemp(path.join(tmpDir, `${VALUES_DIR_PREFIX}${selfInstance()}-`));
  try {
    const file = path.join(dir, 'values.json');
    await writeFile(file, JSON.stringify(values), { mode: 0o600, flag: 'wx' });
    return await fn(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Removes the values directories in `tmpDir` that processes which have since died left behind (a
 * SIGKILL during a helm call skips the cleanup in {@link withValuesFile}, leaving values, secrets
 * included, on disk), an earlier process with this one's pid included. Directories of live
 * processes, this one included, are kept. Resolves with the directories removed.
 */
export async function removeStaleValuesDirs(tmpDir: string, log: Logger): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(tmpDir);
  } catch {
    return [];
  }
  const stale = names.filter((name) => {
    const owner = valuesDirOwner(name);
    return owner !== undefined && ownerEnded(owner);
  });
  const removed: string[] = [];
  for (const name of stale) {
    const dir = path.join(tmpDir, name);
    await rm(dir, { recursive: true, force: true }).then(
      () => removed.push(dir),
      (err: unknown) => {
        log.warn({ dir, error: err }, 'Could not remove a stale helm values directory');
      },
    );
  }
  return removed;
}
