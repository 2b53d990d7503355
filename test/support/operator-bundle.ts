/**
 * The shipped executable (`npm run bundle`, hack/bundle.ts) for every test that starts the operator
 * or its CLI as a process: built once for each content of its inputs into the tool cache and reused
 * until one of them changes, so a warm run builds nothing and a changed source is never run stale
 * (docs/adr/0095-tests-run-the-shipped-bundle.md). Through tsx, each start transpiled ~230 modules.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, rmdir, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundle } from '../../hack/bundle.js';
import { toolCacheDir } from './tool-cache.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** What the bundle is made of: its sources, how it is built, and the dependencies' versions. */
const INPUTS = ['src', 'hack/bundle.ts', 'package.json', 'package-lock.json', 'tsconfig.json'];

/** An entry unused this long is removed (other checkouts share the cache: never one still in use). */
const UNUSED_MS = 7 * 24 * 3600_000;
/** A lock older than this was left by a build that died. */
const STALE_LOCK_MS = 5 * 60_000;

export interface OperatorBundle {
  /** `node <entry> run …` starts the operator. */
  readonly entry: string;
  /** The directory of the entry and its chunks. */
  readonly dir: string;
  /** esbuild's metafile of this build (JSON). */
  readonly metafile: string;
}

function cacheRoot(): string {
  return path.join(toolCacheDir(), 'test-bundle');
}

async function inputFiles(root: string): Promise<string[]> {
  const files: string[] = [];
  for (const input of INPUTS) {
    const abs = path.join(root, input);
    if (!(await stat(abs)).isDirectory()) {
      files.push(input);
      continue;
    }
    for (const e of await readdir(abs, { recursive: true, withFileTypes: true }))
      if (e.isFile()) files.push(path.relative(root, path.join(e.parentPath, e.name)));
  }
  return files.sort();
}

/** The hash of every input's path and content under `root` (and of the Node that builds and runs it). */
export async function bundleKey(root = ROOT): Promise<string> {
  const hash = createHash('sha256').update(`${process.version}\0`);
  for (const f of await inputFiles(root))
    hash
      .update(`${f}\0`)
      .update(await readFile(path.join(root, f)))
      .update('\0');
  return hash.digest('hex').slice(0, 24);
}

function layout(dir: string): OperatorBundle {
  return { dir: path.join(dir, 'bundle'), entry: path.join(dir, 'bundle', 'helm-operator.js'), metafile: path.join(dir, 'metafile.json') };
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/** Builds into a directory of its own, then renames it into place: a reader sees a whole bundle or none. */
async function build(root: string, final: string): Promise<void> {
  const tmp = path.join(root, `.build-${process.pid}-${Date.now()}`);
  const out = layout(tmp);
  try {
    const metafile = await bundle(out.dir);
    await writeFile(out.metafile, JSON.stringify(metafile));
    await rename(tmp, final);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Takes the lock directory; false while another process holds it (a lock held too long is broken). */
async function tryLock(lock: string): Promise<boolean> {
  try {
    await mkdir(lock);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const held = await stat(lock).then(
    (s) => Date.now() - s.mtimeMs,
    () => 0,
  );
  if (held > STALE_LOCK_MS) await rmdir(lock).catch(() => undefined);
  return false;
}

/** One build at a time per key, across processes (vitest's global setups, the unit tier's workers). */
async function withLock<T>(lock: string, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + STALE_LOCK_MS + 60_000;
  while (!(await tryLock(lock))) {
    if (Date.now() > deadline)
      throw new Error(`the operator bundle's build lock ${lock} is still held; remove it if no test run is building`);
    await new Promise((r) => setTimeout(r, 200));
  }
  try {
    return await fn();
  } finally {
    await rmdir(lock).catch(() => undefined);
  }
}

async function prune(root: string, keep: string): Promise<void> {
  const now = Date.now();
  for (const name of await readdir(root)) {
    const p = path.join(root, name);
    if (p === keep || name.endsWith('.lock')) continue;
    const s = await stat(p).catch(() => undefined);
    if (s !== undefined && now - s.mtimeMs > UNUSED_MS) await rm(p, { recursive: true, force: true });
  }
}

/** The bundle of the checkout as it is now: from the cache, or built (once) when its inputs changed. */
export async function ensureOperatorBundle(): Promise<OperatorBundle> {
  const root = cacheRoot();
  await mkdir(root, { recursive: true });
  const final = path.join(root, await bundleKey());
  const built = (): Promise<boolean> => exists(layout(final).metafile);
  if (!(await built())) {
    await withLock(`${final}.lock`, async () => {
      if (!(await built())) await build(root, final);
    });
  }
  const now = new Date();
  await utimes(final, now, now);
  await prune(root, final);
  return layout(final);
}
