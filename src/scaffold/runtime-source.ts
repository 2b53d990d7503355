/**
 * Where a scaffolded project gets the runtime package (docs/adr/0032): the npm registry when it
 * serves this exact version, else a copy of this very package vendored into the project as a
 * tarball (`vendor/<name>-<version>.tgz`, a `file:` dependency), so that `npm ci`, every make target
 * and the Dockerfile install it without any registry copy of the runtime.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';

/** What `npm view <name>@<version>` said. */
export type RegistryAnswer = 'served' | 'not-found' | 'unreachable';

export type RuntimeSource =
  | { readonly kind: 'registry'; readonly dependency: string; readonly reason: string }
  | { readonly kind: 'vendored'; readonly dependency: string; readonly file: string; readonly reason: string };

export const VENDOR_DIR = 'vendor';

/** `vendor/helm-operator-ts-0.1.0.tgz`: npm pack's own file name for a package (a scope's `@` and `/` become `-`). */
export const vendoredFile = (name: string, version: string): string =>
  `${VENDOR_DIR}/${name.replace(/^@/, '').replace('/', '-')}-${version}.tgz`;

/** The decision (pure): the registry only when it serves this exact version. */
export function chooseRuntimeSource(pkg: { name: string; version: string }, answer: RegistryAnswer): RuntimeSource {
  if (answer === 'served')
    return { kind: 'registry', dependency: pkg.version, reason: `the npm registry serves ${pkg.name}@${pkg.version}` };
  const file = vendoredFile(pkg.name, pkg.version);
  const why = answer === 'not-found' ? `the npm registry does not serve ${pkg.name}@${pkg.version}` : 'the npm registry did not answer';
  return { kind: 'vendored', dependency: `file:${file}`, file, reason: `${why}: this runtime is vendored as ${file} (commit it)` };
}

/** Classifies `npm view` output: a version printed, npm's E404, or anything else (offline, timeout, proxy). */
export function classifyRegistryAnswer(
  r: { exitCode: number | undefined; stdout: string; stderr: string },
  version: string,
): RegistryAnswer {
  if (r.exitCode === 0 && r.stdout.includes(version)) return 'served';
  // npm 404s as E404 (and an empty 200 when the version alone is missing from a served package).
  if (/\bE404\b/.test(`${r.stdout}\n${r.stderr}`) || (r.exitCode === 0 && r.stdout.trim() === '')) return 'not-found';
  return 'unreachable';
}

/** Asks the npm registry of the user's configuration, briefly: an unreachable registry must not stall init. */
export async function probeRegistry(
  pkg: { name: string; version: string },
  opts: { cwd: string; timeoutMs?: number },
): Promise<RegistryAnswer> {
  const r = await execa(
    'npm',
    ['view', `${pkg.name}@${pkg.version}`, 'version', '--fetch-retries=0', '--fetch-timeout=5000', '--loglevel=error'],
    {
      cwd: opts.cwd,
      reject: false,
      timeout: opts.timeoutMs ?? 15_000,
    },
  );
  return classifyRegistryAnswer({ exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }, pkg.version);
}

export class RuntimeSourceError extends Error {
  override readonly name = 'RuntimeSourceError';
}

/**
 * This package, as installed (npm install -g, npx, node_modules), packed again into the project:
 * an installed package holds exactly the files of its tarball. `--ignore-scripts`: its prepack
 * compiles TypeScript that an installed package does not ship.
 */
export async function vendorRuntime(packageRoot: string, projectRoot: string, file: string): Promise<void> {
  if (!existsSync(path.join(packageRoot, 'dist/cli/main.js'))) {
    throw new RuntimeSourceError(
      `${packageRoot} has no dist/ (a source checkout?): make pack there, then run init from the tarball (npx --package ./helm-operator-ts-<version>.tgz helm-operator init ...)`,
    );
  }
  const target = path.join(projectRoot, path.dirname(file));
  const tmp = path.join(projectRoot, `.vendor-${process.pid}`);
  await mkdir(tmp, { recursive: true });
  try {
    const r = await execa('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', tmp, packageRoot], {
      cwd: projectRoot,
      reject: false,
    });
    const packed = (await readdir(tmp)).find((f) => f.endsWith('.tgz'));
    if (r.exitCode !== 0 || packed === undefined)
      throw new RuntimeSourceError(`npm pack of ${packageRoot} failed: ${r.stderr.trim() || `exit ${String(r.exitCode)}`}`);
    await mkdir(target, { recursive: true });
    await rename(path.join(tmp, packed), path.join(projectRoot, file));
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * `npm install` in the new project: its package-lock.json (to commit) and node_modules/, so the
 * project's `npx helm-operator` works at once. Only the runtime's own dependencies come from the
 * registry.
 */
export async function installProject(projectRoot: string): Promise<void> {
  const r = await execa('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: projectRoot, reject: false, all: true });
  if (r.exitCode !== 0) {
    const tail = r.all.trim().split('\n').slice(-8).join('\n');
    throw new RuntimeSourceError(
      `the project is written, but npm install failed in ${projectRoot} (exit ${String(r.exitCode)}):\n${tail}\nrun npm install there once the npm registry answers`,
    );
  }
}
