/**
 * `helm-operator init`: a new project in an empty directory (the I/O edge around {@link initPlan}):
 * where the runtime comes from (registry or vendored tarball, docs/adr/0032), the files, then
 * `npm install` for the lockfile and node_modules/.
 */
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { applyPlan, type FileResult, type Plan } from '../machinery/index.js';
import { initPlan } from './init.js';
import type { RuntimeIdentity } from './runtime-identity.js';
import {
  chooseRuntimeSource,
  installProject,
  probeRegistry,
  vendorRuntime,
  type RegistryAnswer,
  type RuntimeSource,
} from './runtime-source.js';

export class InitError extends Error {
  override readonly name = 'InitError';
}

export interface InitOptions {
  readonly root: string;
  readonly domain: string;
  readonly projectName?: string;
  readonly force?: boolean;
  readonly dryRun?: boolean;
}

/** The edges init crosses besides the files: the registry probe, vendoring and npm install (tests replace them). */
export interface InitEffects {
  readonly probe: (pkg: { name: string; version: string }, cwd: string) => Promise<RegistryAnswer>;
  readonly vendor: (packageRoot: string, projectRoot: string, file: string) => Promise<void>;
  readonly install: (projectRoot: string) => Promise<void>;
}

export const npmEffects: InitEffects = {
  probe: (pkg, cwd) => probeRegistry(pkg, { cwd }),
  vendor: vendorRuntime,
  install: installProject,
};

/**
 * Directory entries that do not make a directory "non-empty": a fresh `git init`, editor files, and
 * node_modules (the runtime installed first, to run `npx helm-operator init`).
 */
const IGNORABLE = new Set(['.git', '.gitignore', '.idea', '.vscode', 'LICENSE', 'node_modules']);

export async function initProject(
  o: InitOptions,
  runtime: RuntimeIdentity,
  effects: InitEffects = npmEffects,
): Promise<{ plan: Plan; results: FileResult[]; source: RuntimeSource }> {
  await mkdir(o.root, { recursive: true });
  const present = (await readdir(o.root)).filter((e) => !IGNORABLE.has(e));
  if (present.length > 0 && o.force !== true) {
    throw new InitError(
      `${o.root} is not empty (${present.slice(0, 5).join(', ')}${present.length > 5 ? ', …' : ''}): init writes a new project; use an empty directory, or --force to write into this one`,
    );
  }
  const projectName = o.projectName ?? path.basename(path.resolve(o.root)).toLowerCase();
  const pkg = { name: runtime.runtimePackage, version: runtime.runtimeVersion };
  const source = chooseRuntimeSource(pkg, await effects.probe(pkg, o.root));
  const plan = initPlan({ ...runtime, runtimeDependency: source.dependency, projectName, domain: o.domain });
  const results = await applyPlan(o.root, plan, { force: o.force === true, dryRun: o.dryRun === true });
  if (o.dryRun !== true) {
    if (source.kind === 'vendored') await effects.vendor(runtime.packageRoot, o.root, source.file);
    await effects.install(o.root);
  }
  return { plan, results, source };
}
