/**
 * Chart sources of `create api --helm-chart`: a local directory or `.tgz`, `repo/name` (an alias of
 * `helm repo add`), an archive URL, `oci://host/ns/name[:tag]`, or a bare name with `--helm-chart-repo`.
 * Each becomes a chart directory in a scratch directory, with its dependencies vendored; remote ones
 * through the real `helm pull` (src/helm is the only module that runs helm), with the user's helm
 * configuration only for a `repo/name` alias (see chart-dependencies.ts).
 */
import { cp, lstat, mkdir, readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { x as untar } from 'tar';
import { readHelmYaml } from '../config/helm-yaml.js';
import { isWithin, linkProblem, loadChartInfo, resolveLink, ChartError } from '../config/chart.js';
import type { ChartHelm } from '../helm/chart-helm.js';
import { HelmError } from '../helm/errors.js';
import {
  declaredDependencies,
  dependencyRepositories,
  isVendored,
  privateRepositoryEnv,
  removeUnpackedDependencies,
  userRepositories,
  vendoredCharts,
} from './chart-dependencies.js';

export type ChartSource =
  | { readonly kind: 'directory' | 'archive'; readonly path: string }
  | { readonly kind: 'remote'; readonly chart: string; readonly repo?: string; readonly version?: string };

export interface ChartSourceFlags {
  readonly helmChart: string;
  readonly helmChartRepo?: string;
  readonly helmChartVersion?: string;
}

export class ChartSourceError extends Error {
  override readonly name = 'ChartSourceError';
}

const REMOTE_SCHEMES = /^(oci|https?):\/\//;

/**
 * Decides where a chart comes from. Pure apart from `exists` (is there a file or directory at that
 * path): like operator-sdk, something on disk wins over a repository alias of the same spelling.
 */
export function classifyChartSource(flags: ChartSourceFlags, exists: (p: string) => 'directory' | 'file' | undefined): ChartSource {
  const ref = flags.helmChart;
  const remote = REMOTE_SCHEMES.test(ref);
  const local = remote ? undefined : exists(ref);
  if (local !== undefined) return localSource(flags, local);
  if (!remote) checkRemoteSpelling(flags);
  if (flags.helmChartRepo !== undefined && (remote || ref.includes('/')))
    throw new ChartSourceError(`with --helm-chart-repo, --helm-chart is the chart's name in that repository, not ${ref}`);
  return {
    kind: 'remote',
    chart: ref,
    ...(flags.helmChartRepo === undefined ? {} : { repo: flags.helmChartRepo }),
    ...(flags.helmChartVersion === undefined ? {} : { version: flags.helmChartVersion }),
  };
}

function localSource(flags: ChartSourceFlags, local: 'directory' | 'file'): ChartSource {
  if (flags.helmChartRepo !== undefined || flags.helmChartVersion !== undefined)
    throw new ChartSourceError(`--helm-chart-repo and --helm-chart-version apply to remote charts; ${flags.helmChart} is a local ${local}`);
  return { kind: local === 'directory' ? 'directory' : 'archive', path: path.resolve(flags.helmChart) };
}

/** A local-looking reference that is not on disk, or a bare name without a repository. */
function checkRemoteSpelling(flags: ChartSourceFlags): void {
  const ref = flags.helmChart;
  if (ref.endsWith('.tgz')) throw new ChartSourceError(`chart archive ${ref} not found`);
  if (flags.helmChartRepo === undefined && !/^[^/]+\/[^/]+$/.test(ref)) {
    throw new ChartSourceError(
      `--helm-chart=${ref} is neither a chart directory or .tgz on disk, nor repo/name, an https:// archive URL or oci:// reference (a bare name needs --helm-chart-repo)`,
    );
  }
}

export interface FetchOptions {
  /** An empty scratch directory; the chart lands in a subdirectory of it. */
  readonly workDir: string;
  /** `--plain-http` for OCI registries and repositories without TLS. */
  readonly plainHttp?: boolean;
}

export interface FetchedChart {
  /** The chart directory, dependencies built into `charts/`. */
  readonly dir: string;
  readonly name: string;
  readonly version: string;
}

/**
 * Copies a chart directory as helm reads it: symbolic links followed, so the project gets the
 * files and not links into the user's tree (which it used to drop without a word). A link that
 * leaves the chart, points to nothing, or to a directory holding it (a loop) is refused, naming it.
 */
async function copyChartDirectory(from: string, to: string, options: { readonly force?: boolean } = {}): Promise<void> {
  const realRoot = await realpath(from);
  let refused: string | undefined;
  const filter = async (src: string): Promise<boolean> => {
    if (refused !== undefined) return false;
    if (!(await lstat(src)).isSymbolicLink()) return true;
    const rel = path.relative(from, src).split(path.sep).join('/');
    const link = await resolveLink(src);
    refused = linkProblem(realRoot, rel, link);
    if (refused === undefined && link.real !== undefined && isWithin(link.real, await realpath(path.dirname(src))))
      refused = `${JSON.stringify(rel)} is a symbolic link to ${JSON.stringify(link.target)}, a directory that holds it (a loop)`;
    return refused === undefined;
  };
  await cp(from, to, { recursive: true, dereference: true, force: options.force ?? true, filter });
  if (refused !== undefined) throw new ChartSourceError(`chart ${from}: ${refused}`);
}

/**
 * Extracts a chart archive, refusing link entries: helm reads a symlink or hard link entry of a
 * chart archive as an empty file, while extracting it here would create the link and `helm
 * template` follow it. (tar's filter must not throw: it runs in a stream callback.)
 */
async function extractArchive(archive: string, dest: string): Promise<void> {
  let refused: string | undefined;
  const filter = (entryPath: string, entry: unknown): boolean => {
    const e = entry as { type?: string; linkpath?: string };
    if (e.type !== 'SymbolicLink' && e.type !== 'Link') return true;
    refused ??= `${JSON.stringify(entryPath)} is a ${e.type === 'Link' ? 'hard' : 'symbolic'} link to ${JSON.stringify(e.linkpath ?? '')}, which helm installs as an empty file; put the file itself into the archive`;
    return false;
  };
  await untar({ file: archive, cwd: dest, strict: true, filter });
  if (refused !== undefined) throw new ChartSourceError(`chart archive ${archive}: ${refused}`);
}

/** The single directory `helm pull --untar` or an archive produced. */
async function onlyChild(dir: string, what: string): Promise<string> {
  const entries = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory());
  const first = entries[0];
  if (entries.length !== 1 || first === undefined) throw new ChartSourceError(`${what} does not contain exactly one chart directory`);
  return path.join(dir, first.name);
}

async function materialize(helm: ChartHelm, source: ChartSource, opts: FetchOptions): Promise<string> {
  const dest = path.join(opts.workDir, 'chart');
  await mkdir(dest, { recursive: true });
  switch (source.kind) {
    case 'directory': {
      const target = path.join(dest, path.basename(source.path));
      await copyChartDirectory(source.path, target);
      for (const dep of localDependencies(await dependenciesOf(target), source.path, target, opts.workDir)) {
        // A missing one is left for `helm dependency build` to name.
        if (await isDirectory(dep.from)) await copyChartDirectory(dep.from, dep.to, { force: false });
      }
      return target;
    }
    case 'archive':
      await extractArchive(source.path, dest);
      return onlyChild(dest, source.path);
    case 'remote':
      try {
        const puller = await pullingHelm(helm, source, opts.workDir);
        await puller.pull({ ...source, destination: dest, ...(opts.plainHttp === true ? { plainHttp: true } : {}) });
      } catch (err) {
        if (err instanceof HelmError)
          throw new ChartSourceError(
            `cannot fetch chart ${source.chart}${source.repo === undefined ? '' : ` from ${source.repo}`}: ${err.summary}`,
          );
        throw err;
      }
      return onlyChild(dest, `helm pull ${source.chart}`);
  }
}

/**
 * The helm that pulls `source`. `repo/name` is an alias of the user's `helm repo add`: their helm
 * configuration. Anything else (`--repo URL`, an archive URL, oci://) needs none, so it gets an
 * empty private repositories file and cache: nothing to add beforehand, nothing written into the
 * user's helm homes (registry logins, in the config home, still apply). An entry for the `--repo`
 * URL would make helm look for its index in that cache instead of fetching it.
 */
async function pullingHelm(helm: ChartHelm, source: Extract<ChartSource, { kind: 'remote' }>, workDir: string): Promise<ChartHelm> {
  const alias = source.repo === undefined && !REMOTE_SCHEMES.test(source.chart);
  if (alias) return helm;
  return helm.withEnv(await privateRepositoryEnv(path.join(workDir, 'pull-repositories'), []));
}

const isDirectory = (p: string): Promise<boolean> =>
  stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );

/** The `dependencies` of a chart directory's Chart.yaml; none when there is no Chart.yaml. */
async function dependenciesOf(dir: string): Promise<unknown[]> {
  let text: string;
  try {
    text = await readFile(path.join(dir, 'Chart.yaml'), 'utf8');
  } catch {
    return [];
  }
  const chart = readHelmYaml(text) as { dependencies?: unknown } | null | undefined;
  return Array.isArray(chart?.dependencies) ? (chart.dependencies as unknown[]) : [];
}

/**
 * Pure: the subcharts a copied chart directory refers to by relative `file://` paths, and where each
 * must be copied so that the same relative path resolves from the copy (`helm dependency build`
 * then vendors them into `charts/`, and Chart.yaml and Chart.lock stay as the author wrote them).
 * @throws ChartSourceError when such a path would land outside `root`
 */
export function localDependencies(
  dependencies: readonly unknown[],
  sourceDir: string,
  copyDir: string,
  root: string,
): { from: string; to: string }[] {
  const copies: { from: string; to: string }[] = [];
  for (const dep of dependencies) {
    const repository = (dep as { repository?: unknown } | null)?.repository;
    if (typeof repository !== 'string' || !repository.startsWith('file://')) continue;
    const rel = repository.slice('file://'.length);
    if (path.isAbsolute(rel)) continue;
    const to = path.resolve(copyDir, rel);
    if (path.relative(root, to).startsWith('..'))
      throw new ChartSourceError(
        `dependency ${repository} of ${sourceDir} lies too far outside the chart to be copied with it; vendor it into charts/ (helm dependency build) first`,
      );
    copies.push({ from: path.resolve(sourceDir, rel), to });
  }
  return copies;
}

/**
 * Vendors the chart's dependencies into `charts/` unless they all are already (a chart pulled from
 * a repository carries them): `helm dependency build` with a private repositories file naming the
 * repositories Chart.yaml refers to, so no `helm repo add` is needed.
 */
async function buildDependencies(helm: ChartHelm, dir: string, opts: FetchOptions): Promise<void> {
  const deps = declaredDependencies(await dependenciesOf(dir));
  const vendored = await vendoredCharts(dir);
  if (deps.every((d) => isVendored(d, vendored))) return;
  try {
    const needsUser = deps.some((d) => /^(https?:\/\/|@|alias:)/.test(d.repository ?? ''));
    const entries = dependencyRepositories(deps, needsUser ? await userRepositories(helm) : []);
    const builder = helm.withEnv(await privateRepositoryEnv(path.join(opts.workDir, 'dependency-repositories'), entries));
    await removeUnpackedDependencies(dir, deps, vendored);
    await builder.dependencyBuild(dir, opts.plainHttp === true ? { plainHttp: true } : {});
  } catch (err) {
    if (err instanceof HelmError)
      throw new ChartSourceError(`cannot build the dependencies of chart ${path.basename(dir)}: ${err.summary}`);
    throw err;
  }
}

/** Fetches the chart into `opts.workDir` and vendors its dependencies into `charts/`. */
export async function fetchChart(helm: ChartHelm, source: ChartSource, opts: FetchOptions): Promise<FetchedChart> {
  const dir = await materialize(helm, source, opts);
  try {
    await stat(path.join(dir, 'Chart.yaml'));
  } catch {
    throw new ChartSourceError(`${source.kind === 'remote' ? source.chart : source.path} is not a Helm chart (no Chart.yaml)`);
  }
  await buildDependencies(helm, dir, opts);
  try {
    const info = await loadChartInfo(dir);
    return { dir, name: info.name, version: info.version };
  } catch (err) {
    if (err instanceof ChartError) throw new ChartSourceError(err.message);
    throw err;
  }
}
