/**
 * What the scaffold tests share: this checkout as the npm package a user installs (`npm pack`, then
 * `npm install` of the tarball into a prefix, as `npm install -g` would), cached so that test files
 * and reruns reuse one pack and one install, and helpers to run the installed `helm-operator` and a
 * project's `make`.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { initProject } from '../../src/scaffold/init-project.js';
import { runtimeIdentity } from '../../src/scaffold/runtime-identity.js';
import { toolCacheDir } from './tool-cache.js';

const run = promisify(execFile);
export const REPO = path.resolve(import.meta.dirname, '../..');
const CACHE = path.join(toolCacheDir(), 'scaffold-runtime');

export interface RuntimePackage {
  /** The `npm pack` tarball. */
  readonly tarball: string;
  readonly version: string;
  /** `<prefix>/node_modules`, where the tarball is installed. */
  readonly nodeModules: string;
  readonly bin: string;
}

/** Environment for children: no make state of an outer `make test`, pinned node first on PATH. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { MAKEFLAGS: _f, MFLAGS: _m, MAKELEVEL: _l, IMG: _i, ...env } = process.env;
  return { ...env, PATH: `${path.dirname(process.execPath)}:${env.PATH ?? ''}`, ...extra };
}

export async function exec(
  file: string,
  args: readonly string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<string> {
  try {
    const { stdout, stderr } = await run(file, args, {
      cwd: opts.cwd ?? REPO,
      env: opts.env ?? childEnv(),
      timeout: opts.timeoutMs ?? 240_000,
      maxBuffer: 32 * 1024 * 1024,
    });
    return `${stdout}${stderr}`;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${path.basename(file)} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
  }
}

async function walk(dir: string, out: string[]): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) await walk(p, out);
    else out.push(p);
  }
}

/** sha256 of what `npm pack` packs and builds from: a changed source file means a new pack. */
async function inputsKey(): Promise<string> {
  const files = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md'].map((f) => path.join(REPO, f));
  await walk(path.join(REPO, 'src'), files);
  await walk(path.join(REPO, 'hack'), files);
  await walk(path.join(REPO, 'docs'), files); // package.json `files` ships the pages README.md links
  const h = createHash('sha256');
  for (const f of files.sort())
    h.update(path.relative(REPO, f))
      .update('\0')
      .update(await readFile(f));
  return h.digest('hex').slice(0, 16);
}

/**
 * `npm pack` of this checkout, cached by its inputs (see inputsKey), under the cache's lock: the
 * tutorial packs beside the scaffold files, which pack under it too (runtimePackage).
 */
export function packTarball(): Promise<string> {
  return withCacheLock(pack);
}

async function pack(): Promise<string> {
  const dir = path.join(CACHE, `pack-${await inputsKey()}`);
  const done = path.join(dir, 'tarball');
  if (existsSync(done)) return (await readFile(done, 'utf8')).trim();
  const tmp = `${dir}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  await exec('npm', ['pack', '--pack-destination', tmp]);
  const name = (await readdir(tmp)).find((f) => f.endsWith('.tgz')) ?? '';
  const tarball = path.join(dir, name);
  await writeFile(path.join(tmp, 'tarball'), tarball);
  await settle(tmp, dir, 'tarball');
  return (await readFile(done, 'utf8')).trim();
}

/**
 * Moves a finished `tmp` to `dir`, unless another test process (a second test command on the same
 * machine) finished `dir` first: its copy, in use there, is kept and ours dropped.
 */
async function settle(tmp: string, dir: string, marker: string): Promise<void> {
  if (existsSync(path.join(dir, marker))) {
    await rm(tmp, { recursive: true, force: true });
    return;
  }
  await rm(dir, { recursive: true, force: true });
  await rename(tmp, dir);
}

/**
 * Older packs and installs (earlier sources) go once a new one is complete: the cache keeps one.
 * Another process's work in progress (`*.tmp-<pid>`) and the lock are left alone.
 */
async function pruneExcept(keep: readonly string[]): Promise<void> {
  const names = new Set(keep.map((k) => path.basename(k)));
  for (const e of await readdir(CACHE))
    if (!names.has(e) && e !== 'pack.lock' && !/\.tmp-\d+$/.test(e)) await rm(path.join(CACHE, e), { recursive: true, force: true });
}

/** How long a test process waits for another's pack and install of the same checkout. */
const PACK_LOCK_WAIT_MS = 15 * 60_000;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Runs `fn` while holding the cache's lock (a directory naming its holder's pid): integration files
 * run side by side, and two `npm pack`s of one checkout would each empty the other's dist/ (its
 * prepack). A lock whose holder died is taken over.
 */
async function withCacheLock<T>(fn: () => Promise<T>): Promise<T> {
  await mkdir(CACHE, { recursive: true });
  const lock = path.join(CACHE, 'pack.lock');
  const deadline = Date.now() + PACK_LOCK_WAIT_MS;
  for (;;) {
    try {
      await mkdir(lock);
      await writeFile(path.join(lock, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number(await readFile(path.join(lock, 'pid'), 'utf8').catch(() => ''));
    if (holder > 0 && !alive(holder)) await rm(lock, { recursive: true, force: true });
    else if (Date.now() > deadline)
      throw new Error(`the runtime package's lock ${lock} is still held by pid ${holder || '?'} after ${PACK_LOCK_WAIT_MS / 60_000} min`);
    else await new Promise((r) => setTimeout(r, 500));
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

let cached: Promise<RuntimePackage> | undefined;

/** The runtime package as a user gets it: packed from this checkout, installed from the tarball. */
export function runtimePackage(): Promise<RuntimePackage> {
  cached ??= withCacheLock(async () => {
    const tarball = await pack();
    const sha = createHash('sha256')
      .update(await readFile(tarball))
      .digest('hex')
      .slice(0, 16);
    const prefix = path.join(CACHE, `install-${sha}`);
    const version = (JSON.parse(await readFile(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
    if (!existsSync(path.join(prefix, '.complete'))) {
      const tmp = `${prefix}.tmp-${process.pid}`;
      await rm(tmp, { recursive: true, force: true });
      await mkdir(tmp, { recursive: true });
      await exec(
        'npm',
        ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error', '--prefix', tmp, tarball],
        { cwd: tmp },
      );
      await writeFile(path.join(tmp, '.complete'), '');
      await settle(tmp, prefix, '.complete');
    }
    await pruneExcept([path.dirname(tarball), prefix]);
    const nodeModules = path.join(prefix, 'node_modules');
    return { tarball, version, nodeModules, bin: path.join(nodeModules, '.bin', 'helm-operator') };
  });
  return cached;
}

/**
 * `init` of a project in a new temporary directory, its files only: what init installs is not under
 * test there, and a source checkout has no dist/ to vendor until something packs it, so the runtime
 * is neither fetched nor installed. Resolves with the project's directory.
 */
export async function initFilesOnly(prefix: string): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), `${prefix}-scaffold-`));
  await initProject({ root, domain: 'example.com', projectName: prefix }, runtimeIdentity(), {
    probe: () => Promise.resolve('served'),
    vendor: () => Promise.resolve(),
    install: () => Promise.resolve(),
  });
  return root;
}
