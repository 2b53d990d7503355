/**
 * Reading an existing project: PROJECT (domain, name, resources) and the charts watches.yaml names.
 * Beside the machinery because scaffold (`create api`) and bundle (the package name) both read it.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';

export interface ProjectResource {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly domain?: string;
}

export interface ProjectConfig {
  readonly domain: string;
  readonly projectName: string;
  readonly resources: readonly ProjectResource[];
}

export class ProjectError extends Error {
  override readonly name = 'ProjectError';
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export async function readProject(root: string): Promise<ProjectConfig> {
  const file = path.join(root, 'PROJECT');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    throw new ProjectError(`${file} not found: run \`helm-operator init --domain <domain>\` in ${root} first`);
  }
  const doc = parse(text) as Record<string, unknown> | null;
  const domain = str(doc?.domain);
  const projectName = str(doc?.projectName);
  if (domain === undefined || projectName === undefined) throw new ProjectError(`${file}: "domain" and "projectName" are required`);
  const resources = Array.isArray(doc?.resources) ? (doc.resources as Record<string, unknown>[]) : [];
  return {
    domain,
    projectName,
    resources: resources.map((r) => ({ group: str(r.group) ?? '', version: str(r.version) ?? '', kind: str(r.kind) ?? '' })),
  };
}

/** The chart path watches.yaml gives a group/version/kind, if it has an entry for it. */
export async function watchedChart(root: string, gvk: { group: string; version: string; kind: string }): Promise<string | undefined> {
  const text = await readFile(path.join(root, 'watches.yaml'), 'utf8').catch(() => '');
  const entries = (parse(text) as unknown) ?? [];
  if (!Array.isArray(entries)) return undefined;
  const hit = (entries as Record<string, unknown>[]).find((e) => e.group === gvk.group && e.version === gvk.version && e.kind === gvk.kind);
  return str(hit?.chart);
}
