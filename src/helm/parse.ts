import semver from 'semver';
import { jsonDigest } from '../util/canonical-json.js';
import { isPlainObject } from '../util/plain-object.js';
import { RELEASE_STATUSES, type HelmVersion, type HistoryEntry, type Release, type ReleaseChart, type ReleaseStatus } from './types.js';

/**
 * Validators for helm's JSON output. They copy out only the fields we use, so the release's
 * values (`config`) and the chart's templates and default values, which `install -o json` prints
 * too, never leave this module: of the values, only their digest does. Field paths (same in v3 and v4, Go `release.Release` tags):
 * `name`, `namespace`, `version`, `info.{status,description,notes,first_deployed,last_deployed}`,
 * `manifest`, `hooks[].events` (whether any runs on uninstall), `hooks[].{path,manifest}` (read only from dry runs), `chart.metadata.{name,version,appVersion}`
 * (install/upgrade only: `status` strips the chart, so it comes from `get metadata`'s `chart`,
 * `version`, `appVersion`).
 */

/**
 * The release a line of `helm uninstall`'s output reports gone (`release "x" uninstalled`, v3 and
 * v4 alike, printed as each release of the command is done), or undefined for any other line.
 */
export function uninstalledRelease(line: string): string | undefined {
  return /^release "([^"]+)" uninstalled$/.exec(line.trimEnd())?.[1];
}

/** Thrown for output that is not what helm prints; the client wraps it in a HelmError. */
export class HelmOutputError extends Error {
  override readonly name = 'HelmOutputError';
}

type Json = Record<string, unknown>;

function field(obj: Json, key: string, where: string): unknown {
  if (!(key in obj)) throw new HelmOutputError(`${where}: missing "${key}"`);
  return obj[key];
}

function requireString(obj: Json, key: string, where: string): string {
  const v = field(obj, key, where);
  if (typeof v !== 'string') throw new HelmOutputError(`${where}: "${key}" is not a string`);
  return v;
}

/** helm omits empty strings (`omitempty`): absent means "". */
function optionalString(obj: Json, key: string, where: string): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new HelmOutputError(`${where}: "${key}" is not a string`);
  return v;
}

function requireRevision(obj: Json, key: string, where: string): number {
  const v = field(obj, key, where);
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new HelmOutputError(`${where}: "${key}" is not a revision number`);
  return v;
}

/** A status helm might add later reads as `unknown` rather than failing the whole call. */
export function toReleaseStatus(s: string): ReleaseStatus {
  return (RELEASE_STATUSES as readonly string[]).includes(s) ? (s as ReleaseStatus) : 'unknown';
}

/**
 * The JSON document in helm's stdout. A plugin or a future helm may print a line before it, so
 * on a parse failure retry from the first line that opens a JSON value.
 */
export function parseJsonOutput(stdout: string, where: string): unknown {
  try {
    return JSON.parse(stdout);
  } catch {
    const start = stdout.search(/^[{[]/m);
    if (start > 0) {
      try {
        return JSON.parse(stdout.slice(start));
      } catch {
        // fall through to the error below
      }
    }
    throw new HelmOutputError(`${where}: output is not JSON`);
  }
}

function parseChartMetadata(chart: unknown, where: string): ReleaseChart | undefined {
  if (!isPlainObject(chart) || !isPlainObject(chart.metadata)) return undefined;
  const md = chart.metadata;
  const appVersion = optionalString(md, 'appVersion', `${where}.chart.metadata`);
  return {
    name: requireString(md, 'name', `${where}.chart.metadata`),
    version: requireString(md, 'version', `${where}.chart.metadata`),
    ...(appVersion !== undefined && appVersion !== '' ? { appVersion } : {}),
  };
}

/** helm's hook events that an uninstall runs. */
const DELETE_HOOK_EVENTS: ReadonlySet<string> = new Set(['pre-delete', 'post-delete']);

/** Whether any of a release's `hooks` (absent: none, helm omits an empty list) runs on uninstall. */
function hasDeleteHooks(hooks: unknown, where: string): boolean {
  if (hooks === undefined || hooks === null) return false;
  if (!Array.isArray(hooks)) throw new HelmOutputError(`${where}: "hooks" is not a list`);
  return hooks.some((hook: unknown, i) => {
    if (!isPlainObject(hook)) throw new HelmOutputError(`${where}.hooks[${i}]: not an object`);
    const events = hook.events ?? [];
    if (!Array.isArray(events)) throw new HelmOutputError(`${where}.hooks[${i}]: "events" is not a list`);
    return events.some((e) => typeof e === 'string' && DELETE_HOOK_EVENTS.has(e));
  });
}

/** A release without its chart: what `helm status -o json` provides. */
export type ReleaseWithoutChart = Omit<Release, 'chart'> & { readonly chart?: ReleaseChart };

/** Parses `helm install|upgrade|status -o json`. `chart` is absent for `status`. */
export function parseReleaseJson(stdout: string, where: string): ReleaseWithoutChart {
  const doc = parseJsonOutput(stdout, where);
  if (!isPlainObject(doc)) throw new HelmOutputError(`${where}: not a JSON object`);
  const info = field(doc, 'info', where);
  if (!isPlainObject(info)) throw new HelmOutputError(`${where}: "info" is not an object`);
  const chart = parseChartMetadata(doc.chart, where);
  const firstDeployed = optionalString(info, 'first_deployed', `${where}.info`);
  const lastDeployed = optionalString(info, 'last_deployed', `${where}.info`);
  return {
    name: requireString(doc, 'name', where),
    namespace: requireString(doc, 'namespace', where),
    revision: requireRevision(doc, 'version', where),
    status: toReleaseStatus(requireString(info, 'status', `${where}.info`)),
    notes: optionalString(info, 'notes', `${where}.info`) ?? '',
    manifest: optionalString(doc, 'manifest', where) ?? '',
    deleteHooks: hasDeleteHooks(doc.hooks, where),
    description: optionalString(info, 'description', `${where}.info`) ?? '',
    // helm leaves out empty values (`omitempty`): none is {}.
    valuesDigest: jsonDigest(doc.config ?? {}),
    ...(firstDeployed !== undefined ? { firstDeployed } : {}),
    ...(lastDeployed !== undefined ? { lastDeployed } : {}),
    ...(chart !== undefined ? { chart } : {}),
  };
}

/**
 * The manifest of a dry-run install/upgrade's JSON output (`manifest`, `hooks[].{path,manifest}`),
 * laid out exactly as `helm template` prints a render: the manifest trimmed, then every hook, in
 * helm's order, as `---` / `# Source: <path>` / its body. So a caller reads both renders alike.
 */
export function parseDryRunManifest(stdout: string, where: string): string {
  const doc = parseJsonOutput(stdout, where);
  if (!isPlainObject(doc)) throw new HelmOutputError(`${where}: not a JSON object`);
  const hooks = doc.hooks ?? [];
  if (!Array.isArray(hooks)) throw new HelmOutputError(`${where}: "hooks" is not a list`);
  let out = `${(optionalString(doc, 'manifest', where) ?? '').trim()}\n`;
  hooks.forEach((hook: unknown, i) => {
    const at = `${where}.hooks[${i}]`;
    if (!isPlainObject(hook)) throw new HelmOutputError(`${at}: not an object`);
    out += `---\n# Source: ${optionalString(hook, 'path', at) ?? ''}\n${optionalString(hook, 'manifest', at) ?? ''}\n`;
  });
  return out;
}

export interface ReleaseMetadata {
  readonly revision: number;
  readonly chart: ReleaseChart;
  /** User release labels; only helm 4 prints them (helm 3.21's `get metadata` has no `labels`). */
  readonly labels?: Readonly<Record<string, string>>;
}

/** Labels helm itself puts on its storage objects; `get metadata` (v4) mixes them with the user's. */
const SYSTEM_LABELS: ReadonlySet<string> = new Set(['name', 'owner', 'status', 'version', 'createdAt', 'modifiedAt']);

function userLabels(v: unknown, where: string): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isPlainObject(v)) throw new HelmOutputError(`${where}: "labels" is not an object`);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== 'string') throw new HelmOutputError(`${where}: label "${k}" is not a string`);
    if (!SYSTEM_LABELS.has(k)) out[k] = val;
  }
  return out;
}

/**
 * Parses `helm get metadata -o json`: `{name, chart, version, appVersion, namespace, revision,
 * status, deployedAt}`, plus in v4 `labels` (storage labels, system ones included) and `applyMethod`.
 */
export function parseMetadataJson(stdout: string, where: string): ReleaseMetadata {
  const doc = parseJsonOutput(stdout, where);
  if (!isPlainObject(doc)) throw new HelmOutputError(`${where}: not a JSON object`);
  const appVersion = optionalString(doc, 'appVersion', where);
  const labels = userLabels(doc.labels, where);
  return {
    revision: requireRevision(doc, 'revision', where),
    chart: {
      name: requireString(doc, 'chart', where),
      version: requireString(doc, 'version', where),
      ...(appVersion !== undefined && appVersion !== '' ? { appVersion } : {}),
    },
    ...(labels !== undefined ? { labels } : {}),
  };
}

/** Parses `helm history -o json`: `[{revision, updated, status, chart, app_version, description}]`. */
export function parseHistoryJson(stdout: string, where: string): HistoryEntry[] {
  const doc = parseJsonOutput(stdout, where);
  if (!Array.isArray(doc)) throw new HelmOutputError(`${where}: not a JSON array`);
  return doc.map((row: unknown, i): HistoryEntry => {
    const at = `${where}[${i}]`;
    if (!isPlainObject(row)) throw new HelmOutputError(`${at}: not an object`);
    return {
      revision: requireRevision(row, 'revision', at),
      status: toReleaseStatus(requireString(row, 'status', at)),
      chart: optionalString(row, 'chart', at) ?? '',
      appVersion: optionalString(row, 'app_version', at) ?? '',
      description: optionalString(row, 'description', at) ?? '',
      updated: optionalString(row, 'updated', at) ?? '',
    };
  });
}

/** The oldest helm we run: 3.13 brought `--labels` on install/upgrade and `helm get metadata`. */
export const MIN_HELM_VERSION = '3.13.0';

/**
 * Parses `helm version --template '{{.Version}}'` (`v4.1.4`, `v3.21.4`, `v4.0.0-rc.1`). Throws
 * for an unparsable, pre-3.13 or unknown-major version.
 */
export function parseHelmVersion(stdout: string): HelmVersion {
  const raw = stdout.trim();
  const parsed = semver.parse(raw.replace(/^v/, '')) ?? semver.coerce(raw);
  if (parsed === null) throw new HelmOutputError(`cannot parse helm version from "${raw.slice(0, 80)}"`);
  const version = `${parsed.major}.${parsed.minor}.${parsed.patch}${parsed.prerelease.length > 0 ? `-${parsed.prerelease.join('.')}` : ''}`;
  if (parsed.major !== 3 && parsed.major !== 4)
    throw new HelmOutputError(`helm ${version} is not supported: need helm 3 (>= ${MIN_HELM_VERSION}) or 4`);
  if (semver.lt(parsed.version, MIN_HELM_VERSION))
    throw new HelmOutputError(`helm ${version} is too old: need >= ${MIN_HELM_VERSION} (for --labels and get metadata)`);
  return { major: parsed.major, semver: version };
}
