/** `helm-operator init`: a new project in an empty directory (the I/O edge around {@link initPlan}). */
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { applyPlan, type FileResult, type Plan } from './machinery/index.js';
import { initPlan } from './init.js';
import type { ProjectInputs } from './templates/project.js';

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

/**
 * Directory entries that do not make a directory "non-empty": a fresh `git init`, editor files, and
 * node_modules (the runtime installed first, to run `npx helm-operator init`).
 */
const IGNORABLE = new Set(['.git', '.gitignore', '.idea', '.vscode', 'LICENSE', 'node_modules']);

export async function initProject(o: InitOptions, runtime: Omit<ProjectInputs, 'projectName' | 'domain'>): Promise<{ plan: Plan; results: FileResult[] }> {
  await mkdir(o.root, { recursive: true });
  const present = (await readdir(o.root)).filter((e) => !IGNORABLE.has(e));
  if (present.length > 0 && o.force !== true) {
    throw new InitError(`${o.root} is not empty (${present.slice(0, 5).join(', ')}${present.length > 5 ? ', …' : ''}): init writes a new project; use an empty directory, or --force to write into this one`);
  }
  const projectName = o.projectName ?? path.basename(path.resolve(o.root)).toLowerCase();
  const plan = initPlan({ ...runtime, projectName, domain: o.domain });
  return { plan, results: await applyPlan(o.root, plan, { force: o.force === true, dryRun: o.dryRun === true }) };
}
