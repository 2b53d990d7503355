/**
 * Chart sources of `create api --helm-chart`: a local directory or `.tgz`, `repo/name` (an alias of
 * `helm repo add`), an archive URL, `oci://host/ns/name[:tag]`, or a bare name with `--helm-chart-repo`.
 * Each becomes a chart directory in a scratch directory, with its dependencies built; remote ones
 * through the real `helm pull` (src/helm is the only module that runs helm).
 */
import { cp, mkdir, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { x as untar } from 'tar';
import { parse } from 'yaml';
import { loadChartInfo, ChartError } from '../config/chart.js';
import { HelmError, type HelmClient } from '../helm/index.js';

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

/** The single directory `helm pull --untar` or an archive produced. */
async function onlyChild(dir: string, what: string): Promise<string> {
  const entries = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory());
  const first = entries[0];
  if (entries.length !== 1 || first === undefined) throw new ChartSourceError(`${what} does not contain exactly one chart directory`);
  return path.join(dir, first.name);
}

async function materialize(helm: HelmClient, source: ChartSource, opts: FetchOptions): Promise<string> {
  const dest = path.join(opts.workDir, 'chart');
  await mkdir(dest, { recursive: true });
  switch (source.kind) {
    case 'directory': {
      const target = path.join(dest, path.basename(source.path));
      await cp(source.path, target, { recursive: true, verbatimSymlinks: false });
      return target;
    }
    case 'archive':
      await untar({ file: source.path, cwd: dest, strict: true });
      return onlyChild(dest, source.path);
    case 'remote':
      try {
        await helm.pull({ ...source, destination: dest, ...(opts.plainHttp === true ? { plainHttp: true } : {}) });
      } catch (err) {
        if (err instanceof HelmError) throw new ChartSourceError(`cannot fetch chart ${source.chart}${source.repo === undefined ? '' : ` from ${source.repo}`}: ${err.summary}`);
        throw err;
      }
      return onlyChild(dest, `helm pull ${source.chart}`);
  }
}

const hasDependencies = async (dir: string): Promise<boolean> => {
  const chart = parse(await readFile(path.join(dir, 'Chart.yaml'), 'utf8')) as { dependencies?: unknown[] } | null;
  return Array.isArray(chart?.dependencies) && chart.dependencies.length > 0;
};

/** Fetches the chart into `opts.workDir` and builds its dependencies (`helm dependency build`). */
export async function fetchChart(helm: HelmClient, source: ChartSource, opts: FetchOptions): Promise<FetchedChart> {
  const dir = await materialize(helm, source, opts);
  try {
    await stat(path.join(dir, 'Chart.yaml'));
  } catch {
    throw new ChartSourceError(`${source.kind === 'remote' ? source.chart : source.path} is not a Helm chart (no Chart.yaml)`);
  }
  if (await hasDependencies(dir)) {
    try {
      await helm.dependencyBuild(dir, opts.plainHttp === true ? { plainHttp: true } : {});
    } catch (err) {
      if (err instanceof HelmError) throw new ChartSourceError(`cannot build the dependencies of chart ${path.basename(dir)}: ${err.summary}`);
      throw err;
    }
  }
  try {
    const info = await loadChartInfo(dir);
    return { dir, name: info.name, version: info.version };
  } catch (err) {
    if (err instanceof ChartError) throw new ChartSourceError(err.message);
    throw err;
  }
}
