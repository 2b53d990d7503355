/**
 * A fetched chart's dependencies without the user's helm set-up: which ones `charts/` already
 * vendors (a chart pulled from a repository carries them, and `helm dependency build` would then
 * demand a `helm repo add` and store each twice), and the private repositories file that lets
 * `helm dependency build` fetch the others from the repository URLs Chart.yaml names.
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import semver from 'semver';
import { parse, stringify } from 'yaml';
import type { ChartHelm } from '../helm/chart-helm.js';
import { isPlainObject } from '../util/plain-object.js';

export interface Dependency {
  readonly name: string;
  /** A semver constraint (helm's Masterminds syntax); empty or absent: any version. */
  readonly version?: string;
  /** `https://…`, `oci://…`, `file://…`, `@alias`, `alias:name`, or empty. */
  readonly repository?: string;
}

/** A chart found in `charts/`: an unpacked directory (its Chart.yaml) or an archive (its file name). */
export type Vendored = { readonly dir: string; readonly name: string; readonly version: string } | { readonly archive: string };

/** One entry of helm's repositories.yaml; other fields (credentials, TLS files) are carried along. */
export interface RepositoryEntry {
  readonly name: string;
  readonly url: string;
  readonly [field: string]: unknown;
}

/** Pure: Chart.yaml's `dependencies` that name a chart (others are helm's to reject). */
export function declaredDependencies(raw: readonly unknown[]): Dependency[] {
  return raw.filter(isPlainObject).flatMap((d) =>
    typeof d.name === 'string' && d.name !== ''
      ? [
          {
            name: d.name,
            ...(typeof d.version === 'string' ? { version: d.version } : {}),
            ...(typeof d.repository === 'string' ? { repository: d.repository } : {}),
          },
        ]
      : [],
  );
}

/** Whether `version` meets a helm constraint: Masterminds separates ANDed ranges with commas, node-semver with spaces. */
function satisfies(version: string, constraint: string | undefined): boolean {
  if (constraint === undefined || constraint.trim() === '') return semver.valid(version) !== null;
  const range = semver.validRange(constraint.replaceAll(',', ' '));
  return range !== null && semver.satisfies(version, range, { includePrerelease: true });
}

/** The version in helm's `<name>-<version>.tgz`, when `file` is that chart's archive. */
function archiveVersion(file: string, name: string): string | undefined {
  if (!file.startsWith(`${name}-`) || !file.endsWith('.tgz')) return undefined;
  const version = file.slice(name.length + 1, -'.tgz'.length);
  return semver.valid(version) === null ? undefined : version;
}

/** Pure: whether something in `charts/` is a chart of that name within the dependency's constraint. */
export function isVendored(dep: Dependency, vendored: readonly Vendored[]): boolean {
  return vendored.some((v) => {
    if ('archive' in v) {
      const version = archiveVersion(v.archive, dep.name);
      return version !== undefined && satisfies(version, dep.version);
    }
    return v.name === dep.name && satisfies(v.version, dep.version);
  });
}

/** What `charts/` of a chart directory holds (nothing when it has none). */
export async function vendoredCharts(chartDir: string): Promise<Vendored[]> {
  const charts = path.join(chartDir, 'charts');
  const entries = await readdir(charts, { withFileTypes: true }).catch(() => []);
  const out: Vendored[] = [];
  for (const e of entries) {
    if (e.isFile() && e.name.endsWith('.tgz')) out.push({ archive: e.name });
    if (!e.isDirectory()) continue;
    const meta: unknown = await readFile(path.join(charts, e.name, 'Chart.yaml'), 'utf8').then(
      (t) => parse(t) as unknown,
      () => undefined,
    );
    if (isPlainObject(meta) && typeof meta.name === 'string')
      out.push({ dir: e.name, name: meta.name, version: typeof meta.version === 'string' ? meta.version : '' });
  }
  return out;
}

const trimSlash = (url: string): string => url.replace(/\/+$/, '');

/** `@name` and `alias:name` refer to a repository the user added (`helm repo add name …`). */
function aliasOf(repository: string): string | undefined {
  if (repository.startsWith('@')) return repository.slice(1);
  if (repository.startsWith('alias:')) return repository.slice('alias:'.length);
  return undefined;
}

/**
 * Pure: the repositories file `helm dependency build` needs for `deps`. An alias takes the user's
 * entry of that name; an http(s) URL the user's entry for that URL when there is one (it may
 * carry credentials), else a new entry; OCI and file:// dependencies need none.
 */
export function dependencyRepositories(deps: readonly Dependency[], user: readonly RepositoryEntry[]): RepositoryEntry[] {
  const out = new Map<string, RepositoryEntry>();
  for (const dep of deps) {
    const repo = dep.repository ?? '';
    const alias = aliasOf(repo);
    const mine =
      alias !== undefined
        ? user.find((u) => u.name === alias)
        : /^https?:\/\//.test(repo)
          ? user.find((u) => trimSlash(u.url) === trimSlash(repo))
          : undefined;
    if (mine !== undefined) out.set(mine.name, mine);
    else if (alias === undefined && /^https?:\/\//.test(repo) && ![...out.values()].some((e) => trimSlash(e.url) === trimSlash(repo))) {
      const name = `dependency-${out.size}`;
      out.set(name, { name, url: trimSlash(repo) });
    }
  }
  return [...out.values()];
}

/** Pure: the entries of a repositories.yaml (malformed ones dropped). */
export function parseRepositories(text: string): RepositoryEntry[] {
  const doc: unknown = parse(text);
  const repos = isPlainObject(doc) && Array.isArray(doc.repositories) ? doc.repositories : [];
  return repos.filter((r): r is RepositoryEntry => isPlainObject(r) && typeof r.name === 'string' && typeof r.url === 'string');
}

/**
 * Environment for helm with a private repositories file holding `entries` and an empty repository
 * cache, under `dir`: helm reads and writes there, never in the user's helm homes. The file may
 * hold the user's credentials for a repository: 0600, and `dir` goes with the scratch directory.
 */
export async function privateRepositoryEnv(dir: string, entries: readonly RepositoryEntry[]): Promise<Record<string, string>> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const config = path.join(dir, 'repositories.yaml');
  await writeFile(config, stringify({ apiVersion: '', generated: '0001-01-01T00:00:00Z', repositories: entries }), { mode: 0o600 });
  return { HELM_REPOSITORY_CONFIG: config, HELM_REPOSITORY_CACHE: path.join(dir, 'repository'), HELM_CACHE_HOME: path.join(dir, 'cache') };
}

/** The user's repository entries, where their helm keeps them (`helm env`), or none. */
export async function userRepositories(helm: ChartHelm): Promise<RepositoryEntry[]> {
  const file = await helm.env('HELM_REPOSITORY_CONFIG');
  const text = await readFile(file, 'utf8').catch(() => undefined);
  return text === undefined ? [] : parseRepositories(text);
}

/**
 * `helm dependency build` fetches every dependency again: unpacked copies of declared dependencies
 * go first, so that `charts/` holds each once (the archive the build pins in Chart.lock).
 */
export async function removeUnpackedDependencies(
  chartDir: string,
  deps: readonly Dependency[],
  vendored: readonly Vendored[],
): Promise<void> {
  const names = new Set(deps.map((d) => d.name));
  for (const v of vendored)
    if ('dir' in v && names.has(v.name)) await rm(path.join(chartDir, 'charts', v.dir), { recursive: true, force: true });
}
