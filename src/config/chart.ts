/**
 * Finds and fingerprints the Helm chart a watch points at. Only what the operator needs up front
 * is read (name, versions, a content digest); rendering is left to the helm CLI.
 */
import { createHash } from 'node:crypto';
import { lstat, readdir, readFile, readlink, realpath, stat } from 'node:fs/promises';
import { isAbsolute, posix, relative, resolve, sep } from 'node:path';
import type { ReadEntry } from 'tar';
import { isScalar, parseDocument, type Document } from 'yaml';
import { chartCrds, isCrdFile, type ChartCrd } from './chart-crds.js';

export interface ChartInfo {
  /** Absolute path of the chart directory or archive. */
  readonly path: string;
  readonly format: 'directory' | 'archive';
  readonly name: string;
  readonly version: string;
  readonly appVersion?: string;
  /**
   * `sha256:<hex>` over the chart's files (see {@link digestFiles}). A directory and an archive
   * holding the same files have the same digest, and re-packing does not change it.
   */
  readonly digest: string;
  /**
   * The `$ref`s (and other references) of the chart's and its subcharts' `values.schema.json` that
   * point outside their own file: helm fetches them (http, https, file) at every install and
   * upgrade. Absent when there are none.
   */
  readonly schemaRefs?: readonly SchemaRef[];
  /** The CRDs of the chart's `crds/` (chart-crds.ts); absent when there are none. */
  readonly crds?: readonly ChartCrd[];
}

/** A reference in a values schema that helm would load from somewhere else. */
export interface SchemaRef {
  /** The schema file, relative to the chart (`charts/db/values.schema.json`, `charts/db-1.0.0.tgz:values.schema.json`, inside the archive). */
  readonly file: string;
  /** The keyword (`$ref`, `$schema` ...) and its value. */
  readonly keyword: string;
  readonly ref: string;
}

export type ChartErrorReason =
  | 'not-found' // nothing at the path
  | 'not-a-chart' // no Chart.yaml, or neither a directory nor a gzipped tar
  | 'invalid-metadata' // Chart.yaml unreadable as YAML or missing/invalid name/version
  | 'not-installable' // a library chart
  | 'invalid-content' // unreadable files, bad .helmignore, unsafe or oversized archive
  | 'escaping-symlink'; // a symbolic link helm would follow out of the chart directory (or to nothing)

export class ChartError extends Error {
  override readonly name = 'ChartError';
  readonly path: string;
  readonly reason: ChartErrorReason;

  constructor(reason: ChartErrorReason, path: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
    this.path = path;
  }
}

export interface ChartFile {
  /** Relative POSIX path inside the chart. */
  readonly path: string;
  readonly data: Buffer;
}

interface ChartMetadata {
  readonly name: string;
  readonly version: string;
  readonly appVersion?: string;
}

const CHART_YAML = 'Chart.yaml';
/** Helm's own cap on a decompressed chart (`MaxDecompressedChartSize`). */
const MAX_ARCHIVE_BYTES = 100 * 1024 * 1024;
// Masterminds semver's loose form, which `helm` accepts for chart versions (1.2, v1.2.3, 1.2.3-rc.1+b).
const CHART_VERSION = /^v?\d+(\.\d+)?(\.\d+)?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/;

const quote = (s: string): string => JSON.stringify(s);
const errnoCode = (err: unknown): string | undefined =>
  err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : undefined;

/**
 * Hashes files as `path NUL length NUL content` in byte order of their paths, so neither file
 * order on disk, modes, timestamps nor gzip headers affect the result.
 */
export function digestFiles(files: readonly ChartFile[]): string {
  const hash = createHash('sha256');
  const sorted = [...files].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  for (const f of sorted) {
    hash.update(f.path);
    hash.update(`\0${f.data.length}\0`);
    hash.update(f.data);
  }
  return `sha256:${hash.digest('hex')}`;
}

// ---------------------------------------------------------------------------------------------
// Chart.yaml

/** A scalar's text as written, so `version: 1.10` stays "1.10" (Helm keeps number text for string fields). */
function scalarText(doc: Document, key: string): string | undefined {
  const node: unknown = doc.get(key, true);
  if (!isScalar(node)) return undefined;
  if (typeof node.value === 'string') return node.value;
  if (typeof node.value === 'number') return node.source ?? String(node.value);
  return undefined;
}

/** Helm's own checks on name and version (`Metadata.Validate`); the reason, or undefined when fine. */
function metadataProblem(name: string | undefined, version: string | undefined): string | undefined {
  if (name === undefined || name === '') return '"name" is required';
  if (/[/\\]/.test(name) || name === '.' || name === '..') return `name ${quote(name)} must not contain path separators`;
  if (version === undefined || version === '') return '"version" is required';
  if (!CHART_VERSION.test(version)) return `version ${quote(version)} is not a semantic version (e.g. "1.2.3")`;
  return undefined;
}

function parseChartMetadata(text: string, chartPath: string): ChartMetadata {
  const where = `Chart.yaml of chart ${quote(chartPath)}`;
  const doc = parseDocument(text.replace(/^\uFEFF/, ''));
  const yamlError = doc.errors[0]?.message.split('\n')[0];
  if (yamlError !== undefined) throw new ChartError('invalid-metadata', chartPath, `invalid ${where}: ${yamlError}`);
  const name = scalarText(doc, 'name');
  const version = scalarText(doc, 'version');
  const problem = metadataProblem(name, version);
  if (problem !== undefined || name === undefined || version === undefined)
    throw new ChartError('invalid-metadata', chartPath, `invalid ${where}: ${problem ?? 'name and version are required'}`);
  if (doc.get('type') === 'library')
    throw new ChartError('not-installable', chartPath, `chart ${quote(chartPath)} is a library chart, which cannot be installed`);
  const appVersion = scalarText(doc, 'appVersion');
  return appVersion === undefined ? { name, version } : { name, version, appVersion };
}

// ---------------------------------------------------------------------------------------------
// .helmignore, with Helm's semantics (helm/internal/ignore/rules.go)

interface IgnoreRule {
  readonly negate: boolean;
  readonly mustDir: boolean;
  /** Match against the whole relative path (rule had a '/') or only its last element. */
  readonly wholePath: boolean;
  readonly pattern: RegExp;
}

/** Go's `filepath.Match` syntax (`*`, `?`, `[...]`/`[^...]`, `\` escapes) as a RegExp. */
function globToRegExp(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob.charAt(i);
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '\\' && i + 1 < glob.length) out += escapeRegExp(glob.charAt(++i));
    else if (c === '[') {
      const close = glob.indexOf(']', i + 2);
      if (close < 0) throw new Error(`syntax error in pattern ${quote(glob)}`);
      out += classToRegExp(glob.slice(i + 1, close));
      i = close;
    } else out += escapeRegExp(c);
  }
  return new RegExp(`^${out}$`);
}

/** The inside of a Go character class (`^` negates, `a-z` ranges, `\x` escapes). */
function classToRegExp(body: string): string {
  let out = body.startsWith('^') ? '^' : '';
  for (let i = out.length; i < body.length; i++) {
    const c = body.charAt(i);
    if (c === '\\' && i + 1 < body.length) out += `\\${body.charAt(++i)}`;
    else out += c === '-' ? c : escapeRegExp(c);
  }
  return `[${out}]`;
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

function parseIgnoreRule(line: string): IgnoreRule | undefined {
  let rule = line.trim();
  if (rule === '' || rule.startsWith('#')) return undefined;
  if (rule.includes('**')) throw new Error(`double-star (**) syntax is not supported: ${quote(rule)}`);
  const negate = rule.startsWith('!');
  if (negate) rule = rule.slice(1);
  const mustDir = rule.endsWith('/');
  if (mustDir) rule = rule.slice(0, -1);
  const wholePath = rule.includes('/');
  return { negate, mustDir, wholePath, pattern: globToRegExp(rule.replace(/^\//, '')) };
}

/** Helm adds this to every rule set: dotfiles in templates/ are never templates. */
const DEFAULT_IGNORE = 'templates/.?*';

function parseIgnoreRules(text: string): IgnoreRule[] {
  return [...text.split(/\r?\n/), DEFAULT_IGNORE].flatMap((l) => parseIgnoreRule(l) ?? []);
}

/**
 * Helm's `Rules.Ignore`, quirks included: a negated rule ignores everything it does NOT match
 * (so `!x` is not gitignore's re-include). Keeping Helm's meaning keeps the digest over exactly
 * the files helm loads.
 */
function isIgnored(rules: readonly IgnoreRule[], path: string, isDir: boolean): boolean {
  for (const r of rules) {
    const subject = r.wholePath ? path : posix.basename(path);
    if (r.negate) {
      if ((r.mustDir && !isDir) || !r.pattern.test(subject)) return true;
      continue;
    }
    if (r.mustDir && !isDir) continue;
    if (r.pattern.test(subject)) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Directory charts

async function readIgnoreRules(dir: string): Promise<IgnoreRule[]> {
  let text = '';
  try {
    text = await readFile(resolve(dir, '.helmignore'), 'utf8');
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
  try {
    return parseIgnoreRules(text);
  } catch (err) {
    throw new ChartError('invalid-content', dir, `invalid .helmignore in chart ${quote(dir)}: ${(err as Error).message}`);
  }
}

interface WalkState {
  readonly root: string;
  /** The root with every symlink resolved: what a link's target must stay under. */
  readonly realRoot: string;
  readonly rules: readonly IgnoreRule[];
  readonly files: ChartFile[];
  /** Real paths of directories entered, so a symlink loop cannot recurse forever. */
  readonly seen: Set<string>;
}

/** Whether `path` is `root` or below it (both real paths). */
export function isWithin(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** A symbolic link's target as written, and as resolved (undefined when it points to nothing). */
export interface ResolvedLink {
  readonly target: string;
  readonly real: string | undefined;
}

export async function resolveLink(abs: string): Promise<ResolvedLink> {
  const target = await readlink(abs);
  return { target, real: await realpath(abs).catch(() => undefined) };
}

/**
 * Why helm must not follow the link `rel` of a chart whose real root is `realRoot`, or undefined.
 * helm follows symbolic links when it loads a chart directory (templates, `.Files.Get`), so a link
 * out of the chart would put a file of the operator's host (`/etc/passwd`, a mounted token) into a
 * release. Links that stay inside the chart only alias its own files: they are followed like helm.
 * A dangling link fails in helm too, with a less helpful message.
 */
export function linkProblem(realRoot: string, rel: string, link: ResolvedLink): string | undefined {
  const what = `${quote(rel)} is a symbolic link to ${quote(link.target)}`;
  if (link.real === undefined) return `${what}, which points to nothing (helm refuses it too)`;
  if (isWithin(realRoot, link.real)) return undefined;
  return `${what}, which resolves outside the chart directory (to ${quote(link.real)}); helm would read that file into the release, so the chart is refused: copy the file into the chart instead of linking it`;
}

async function walkEntry(state: WalkState, abs: string, rel: string): Promise<void> {
  const link = (await lstat(abs)).isSymbolicLink() ? await resolveLink(abs) : undefined;
  const problem = link === undefined ? undefined : linkProblem(state.realRoot, rel, link);
  const refuse = (why: string): ChartError => new ChartError('escaping-symlink', state.root, `chart ${quote(state.root)}: ${why}`);
  // A dangling link fails helm's walk even when .helmignore names it.
  if (problem !== undefined && link?.real === undefined) throw refuse(problem);
  // stat, not lstat: helm follows symlinks when it loads a chart directory.
  const info = await stat(abs);
  if (isIgnored(state.rules, rel, info.isDirectory())) return; // helm reads nothing of it
  if (problem !== undefined) throw refuse(problem);
  if (info.isDirectory()) return walkDirectory(state, abs, rel);
  if (!info.isFile()) throw new ChartError('invalid-content', state.root, `chart ${quote(state.root)} holds irregular file ${quote(rel)}`);
  state.files.push({ path: rel, data: await readFile(abs) });
}

async function walkDirectory(state: WalkState, abs: string, rel: string): Promise<void> {
  const real = await realpath(abs);
  if (state.seen.has(real)) return;
  state.seen.add(real);
  const names = (await readdir(abs)).sort();
  for (const name of names) await walkEntry(state, resolve(abs, name), rel === '' ? name : `${rel}/${name}`);
}

async function loadDirectory(dir: string): Promise<ChartInfo> {
  let chartYaml: string;
  try {
    chartYaml = await readFile(resolve(dir, CHART_YAML), 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') throw new ChartError('not-a-chart', dir, `chart directory ${quote(dir)} has no ${CHART_YAML}`);
    throw new ChartError('invalid-content', dir, `cannot read ${CHART_YAML} in ${quote(dir)}: ${(err as Error).message}`, { cause: err });
  }
  const meta = parseChartMetadata(chartYaml, dir);
  const state: WalkState = { root: dir, realRoot: await realpath(dir), rules: await readIgnoreRules(dir), files: [], seen: new Set() };
  try {
    await walkDirectory(state, dir, '');
  } catch (err) {
    if (err instanceof ChartError) throw err;
    throw new ChartError('invalid-content', dir, `cannot read chart ${quote(dir)}: ${(err as Error).message}`, { cause: err });
  }
  return chartInfo(dir, 'directory', meta, state.files);
}

// ---------------------------------------------------------------------------------------------
// values.schema.json references

const SCHEMA_FILE = 'values.schema.json';
/** Keywords whose value is a URI reference to another schema. */
const REF_KEYWORDS = ['$ref', '$dynamicRef', '$recursiveRef'] as const;
/**
 * The metaschemas helm's validator (santhosh-tekuri/jsonschema v6) has built in: a `$schema` or
 * `$ref` naming one of them (fragment aside) loads nothing.
 */
const BUILT_IN_METASCHEMA = /^https?:\/\/json-schema\.org\/(schema|draft-0[467]\/schema|draft\/20(19-09|20-12)\/schema)(#.*)?$/;
/** Subcharts of subcharts, as deep as we look (helm has no limit; real charts nest 2 or 3). */
const MAX_SUBCHART_DEPTH = 16;

/**
 * The references of a parsed schema that name another document. helm (v3.18+ and v4) compiles
 * `values.schema.json` as `file:///values.schema.json` with loaders for file, http and https, so
 * anything but a `#` fragment is fetched, a relative one from the operator's root directory.
 */
export function externalSchemaRefs(schema: unknown, file: string): SchemaRef[] {
  const refs: SchemaRef[] = [];
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) stack.push(...(node as unknown[]));
    if (typeof node !== 'object' || node === null || Array.isArray(node)) continue;
    const record = node as Record<string, unknown>;
    for (const keyword of REF_KEYWORDS) {
      const ref = record[keyword];
      if (typeof ref === 'string' && !ref.startsWith('#') && !BUILT_IN_METASCHEMA.test(ref)) refs.push({ file, keyword, ref });
    }
    const meta = record.$schema;
    if (typeof meta === 'string' && !BUILT_IN_METASCHEMA.test(meta)) refs.push({ file, keyword: '$schema', ref: meta });
    stack.push(...Object.values(record));
  }
  return refs;
}

function parseSchema(data: Buffer): unknown {
  try {
    return JSON.parse(data.toString('utf8').replace(/^\uFEFF/, ''));
  } catch {
    return undefined; // helm names a schema that does not parse at install; nothing is fetched
  }
}

/** `charts/<name>/...` files grouped by subchart name, paths relative to the subchart. */
function subchartDirectories(files: readonly ChartFile[]): Map<string, ChartFile[]> {
  const out = new Map<string, ChartFile[]>();
  for (const f of files) {
    const m = /^charts\/([^/]+)\/(.+)$/.exec(f.path);
    if (m?.[1] === undefined || m[2] === undefined) continue;
    out.set(m[1], [...(out.get(m[1]) ?? []), { path: m[2], data: f.data }]);
  }
  return out;
}

/**
 * Visits a chart's files and those of every subchart helm would load with it (directories under
 * charts/ and `.tgz` archives there, nested), each with the label that prefixes its paths:
 * `charts/db/` for a directory, `charts/db-1.0.0.tgz:` for an archive.
 */
async function eachSubchart(
  chart: string,
  files: readonly ChartFile[],
  visit: (files: readonly ChartFile[], label: string) => void,
  at = { label: '', depth: 0 },
): Promise<void> {
  const { label, depth } = at;
  visit(files, label);
  if (depth >= MAX_SUBCHART_DEPTH) return;
  for (const [name, sub] of subchartDirectories(files))
    await eachSubchart(chart, sub, visit, { label: `${label}charts/${name}/`, depth: depth + 1 });
  for (const f of files.filter((x) => /^charts\/[^/]+\.tgz$/.test(x.path) && isGzip(x.data))) {
    let sub: ChartFile[];
    try {
      sub = await readArchiveFiles(`${chart}: ${label}${f.path}`, f.data);
    } catch (err) {
      throw new ChartError(
        'invalid-content',
        chart,
        `chart ${quote(chart)}: subchart archive ${quote(label + f.path)} cannot be read: ${(err as Error).message}`,
        { cause: err },
      );
    }
    await eachSubchart(chart, sub, visit, { label: `${label}${f.path}:`, depth: depth + 1 });
  }
}

/**
 * What the chart and its subcharts carry beside templates: the external references of their
 * schemas, and the files of their `crds/` (helm installs a subchart's, packed or not), each path
 * labelled with the subchart it is in.
 */
async function chartExtras(
  chart: string,
  files: readonly ChartFile[],
): Promise<{ schemaRefs: SchemaRef[]; crdFiles: { path: string; text: string }[] }> {
  const schemaRefs: SchemaRef[] = [];
  const crdFiles: { path: string; text: string }[] = [];
  await eachSubchart(chart, files, (own, label) => {
    const schema = own.find((f) => f.path === SCHEMA_FILE);
    if (schema !== undefined) schemaRefs.push(...externalSchemaRefs(parseSchema(schema.data), `${label}${SCHEMA_FILE}`));
    for (const f of own)
      if (f.path.startsWith('crds/') && isCrdFile(f.path)) crdFiles.push({ path: `${label}${f.path}`, text: f.data.toString('utf8') });
  });
  return { schemaRefs, crdFiles };
}

/** The chart's identity from its files; `schemaRefs` only when there are some. */
async function chartInfo(path: string, format: ChartInfo['format'], meta: ChartMetadata, files: readonly ChartFile[]): Promise<ChartInfo> {
  const { schemaRefs, crdFiles } = await chartExtras(path, files);
  let crds: ChartCrd[];
  try {
    crds = chartCrds(crdFiles);
  } catch (err) {
    throw new ChartError('invalid-content', path, `chart ${quote(path)}: a file of crds/ is not YAML: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return {
    path,
    format,
    ...meta,
    digest: digestFiles(files),
    ...(schemaRefs.length === 0 ? {} : { schemaRefs }),
    ...(crds.length === 0 ? {} : { crds }),
  };
}

// ---------------------------------------------------------------------------------------------
// Archive charts

/** `<top>/a/b` → `a/b`, as helm strips the archive's top directory; undefined for unsafe paths. */
function archiveRelativePath(entryPath: string): string | undefined {
  const normalized = posix.normalize(entryPath.replace(/\\/g, '/').replace(/^(\.\/)+/, ''));
  if (posix.isAbsolute(normalized) || normalized === '.' || normalized.startsWith('../') || normalized === '..') return undefined;
  const slash = normalized.indexOf('/');
  return slash < 0 ? normalized : normalized.slice(slash + 1);
}

const REGULAR_ENTRY_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/**
 * Reads every regular file of a gzipped tar in memory; later duplicates win, as on extraction.
 * tar is loaded here, on the first packaged chart: most operators run chart directories, and an
 * operator's memory at start counts every module it loads.
 */
async function readArchiveFiles(file: string, data: Buffer): Promise<ChartFile[]> {
  const { Parser } = await import('tar');
  const files = new Map<string, Buffer>();
  let total = 0;
  return new Promise((resolvePromise, reject) => {
    const fail = (message: string): void => {
      parser.abort(new ChartError('invalid-content', file, message));
    };
    const onEntry = (entry: ReadEntry): void => {
      const rel = archiveRelativePath(entry.path);
      if (rel === undefined) fail(`chart archive ${quote(file)} has an entry outside its directory: ${quote(entry.path)}`);
      if (rel === undefined || !REGULAR_ENTRY_TYPES.has(entry.type)) {
        entry.resume();
        return;
      }
      const chunks: Buffer[] = [];
      entry.on('data', (chunk: Buffer) => {
        total += chunk.length;
        if (total > MAX_ARCHIVE_BYTES) fail(`chart archive ${quote(file)} decompresses to more than 100 MiB`);
        chunks.push(chunk);
      });
      entry.on('end', () => files.set(rel, Buffer.concat(chunks)));
    };
    const parser = new Parser({ strict: true, onReadEntry: onEntry });
    parser.on('error', reject);
    parser.on('abort', reject);
    parser.on('end', () => {
      resolvePromise([...files].map(([path, content]) => ({ path, data: content })));
    });
    parser.end(data);
  });
}

const isGzip = (data: Buffer): boolean => data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b;

async function loadArchive(file: string): Promise<ChartInfo> {
  const data = await readFile(file);
  if (!isGzip(data))
    throw new ChartError(
      'not-a-chart',
      file,
      `not a chart: ${quote(file)} is neither a chart directory nor a gzipped chart archive (.tgz)`,
    );
  let files: ChartFile[];
  try {
    files = await readArchiveFiles(file, data);
  } catch (err) {
    if (err instanceof ChartError) throw err;
    throw new ChartError('not-a-chart', file, `not a chart: cannot read archive ${quote(file)}: ${(err as Error).message}`, { cause: err });
  }
  const chartYaml = files.find((f) => f.path === CHART_YAML);
  if (chartYaml === undefined) throw new ChartError('not-a-chart', file, `not a chart: archive ${quote(file)} has no <top>/${CHART_YAML}`);
  const meta = parseChartMetadata(chartYaml.data.toString('utf8'), file);
  return chartInfo(file, 'archive', meta, files);
}

/**
 * Loads a chart's identity from an unpacked chart directory or a gzipped chart archive (`.tgz`).
 * A relative `path` resolves against the process's working directory.
 *
 * Unlike operator-sdk, archives are accepted (as helm-operator-plugins does). A directory honours
 * its `.helmignore` exactly as helm does; an archive is taken as is (helm does the same).
 *
 * @throws {ChartError} with a reason when the path is missing, is not a chart, or its Chart.yaml
 * lacks a name or a valid version.
 */
export async function loadChartInfo(path: string): Promise<ChartInfo> {
  const abs = resolve(path);
  let info;
  try {
    info = await stat(abs);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR')
      throw new ChartError('not-found', abs, `chart ${quote(abs)} does not exist`, { cause: err });
    throw new ChartError('invalid-content', abs, `cannot read chart ${quote(abs)}: ${(err as Error).message}`, { cause: err });
  }
  if (info.isDirectory()) return loadDirectory(abs);
  if (info.isFile()) return loadArchive(abs);
  throw new ChartError('not-a-chart', abs, `not a chart: ${quote(abs)} is neither a directory nor a file`);
}
