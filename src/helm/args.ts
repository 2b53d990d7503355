/**
 * Pure argument builders, one per helm verb. Every flag comes before a `--` terminator and the
 * positionals (release, chart, revision) after it, so a name that starts with `-` can never be read
 * as a flag. User data reaches helm only through the values file (`--values`), never `--set`.
 */

export type HelmMajor = 3 | 4;

/** Global flags that pick the cluster identity; not used by `template`, which is offline. */
export interface ConnectionArgsOptions {
  readonly kubeContext?: string;
  /** Impersonated user (`--kube-as-user`, same name in v3 and v4). */
  readonly impersonate?: string;
}

interface ReleaseArgsBase {
  readonly release: string;
  readonly namespace: string;
}

interface TimedArgsBase extends ReleaseArgsBase {
  /** helm's `--timeout` (per Kubernetes operation, hooks and waits). */
  readonly timeoutMs: number;
}

export interface InstallArgsOptions extends TimedArgsBase {
  /** Path of an unpacked chart directory or archive. */
  readonly chart: string;
  /** Path of the JSON values file. */
  readonly valuesFile: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** Wait for resources to become ready (v3 `--wait`, v4 `--wait=legacy`: see {@link readyWaitFlag}). */
  readonly wait?: boolean;
  readonly description?: string;
  /** `--post-renderer` and its args (post-render.ts). */
  readonly postRenderFlags?: readonly string[];
  /** Install only: `--skip-crds`, the chart's `crds/` left out (a watch's `crds: Skip`). */
  readonly skipCrds?: boolean;
  /**
   * v4, without `force`: `--force-conflicts`, the applied fields are taken from any other field
   * manager that holds them (ADR 0072). v3 has no server-side apply, so no conflicts either. On
   * install it matters only for objects that exist already with this release's annotations.
   */
  readonly forceConflicts?: boolean;
}

export interface UpgradeArgsOptions extends InstallArgsOptions {
  /** Replace resources that cannot be patched (v3 `--force`, v4 `--force-replace --server-side=false`). */
  readonly force?: boolean;
  /** `--history-max`; helm's default is 10, 0 means unlimited. */
  readonly historyMax?: number;
}

export interface UninstallArgsOptions extends TimedArgsBase {
  /** More releases after `release`, in the same helm process. */
  readonly also?: readonly string[];
  readonly wait?: boolean;
  readonly keepHistory?: boolean;
  readonly description?: string;
}

export interface RollbackArgsOptions extends TimedArgsBase {
  /** Target revision; omitted (or 0) means the previous one. */
  readonly revision?: number;
  readonly wait?: boolean;
  /** v3 `--force` (replace); v4 `--force-conflicts`, server-side (never a client-side replace). */
  readonly force?: boolean;
  readonly historyMax?: number;
}

export interface TemplateArgsOptions extends ReleaseArgsBase {
  readonly chart: string;
  readonly valuesFile: string;
  /** `--kube-version`, for `.Capabilities.KubeVersion` (helm's built-in default otherwise). */
  readonly kubeVersion?: string;
  /** `--api-versions`, for `.Capabilities.APIVersions`. */
  readonly apiVersions?: readonly string[];
  readonly includeCrds?: boolean;
  /** More `--values` files, after `valuesFile` (later files win, as on helm's command line). */
  readonly extraValuesFiles?: readonly string[];
}

export interface ServerDryRunArgsOptions extends ReleaseArgsBase {
  readonly chart: string;
  readonly valuesFile: string;
}

/** Where `helm pull` finds a chart: a reference it understands, and what narrows it. */
export interface PullArgsOptions {
  /** `repo/name`, an archive URL, `oci://host/ns/name[:tag]`, or a bare name with `repo`. */
  readonly chart: string;
  /** `--repo`: a chart repository URL (`index.yaml` under it). */
  readonly repo?: string;
  /** `--version`: a version or semver constraint; latest when omitted. */
  readonly version?: string;
  /** Directory the chart is untarred into (`--untar --destination`). */
  readonly destination: string;
  /** `--plain-http`: an OCI registry or repository without TLS (a local test registry). */
  readonly plainHttp?: boolean;
}

export interface HistoryArgsOptions extends ReleaseArgsBase {
  /** `--max`: only the newest N revisions (helm's default 256). */
  readonly max?: number;
}

export interface MetadataArgsOptions extends ReleaseArgsBase {
  readonly revision?: number;
}

/**
 * A duration in Go's `time.ParseDuration` syntax, which is what helm's `--timeout` takes: whole
 * seconds as `1h2m3s` (Go's own spelling, `5m0s`), anything finer as milliseconds (`1500ms`).
 */
export function formatGoDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`timeout must be a positive number of milliseconds, got ${ms}`);
  const whole = Math.ceil(ms);
  if (whole % 1000 !== 0) return `${whole}ms`;
  const total = whole / 1000;
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

/** Keys helm reserves on its storage objects; `--labels` with one of them fails the command. */
export const RESERVED_RELEASE_LABELS: readonly string[] = ['name', 'owner', 'status', 'version', 'createdAt', 'modifiedAt'];

// Kubernetes label syntax: helm stores release labels as labels of its storage Secret, and
// `--labels` splits on `,` and `=`, which this syntax excludes.
const LABEL_KEY = /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/**
 * `k1=v1,k2=v2` for `--labels`, keys sorted so the arguments are deterministic. Throws a
 * `TypeError` for a reserved key or a key/value that is not valid Kubernetes label syntax: the
 * labels come from the operator's own code, so that is a programming error.
 */
export function formatLabels(labels: Readonly<Record<string, string>>): string {
  const keys = Object.keys(labels).sort();
  for (const key of keys) {
    const value = labels[key] ?? '';
    if (RESERVED_RELEASE_LABELS.includes(key)) throw new TypeError(`release label "${key}" is reserved by helm`);
    if (!LABEL_KEY.test(key)) throw new TypeError(`release label key "${key}" is not a valid label key`);
    if (!LABEL_VALUE.test(value)) throw new TypeError(`release label "${key}" has an invalid value`);
  }
  return keys.map((k) => `${k}=${labels[k] ?? ''}`).join(',');
}

/**
 * `--wait` for install, upgrade and rollback. v3's is a boolean; v4's takes a strategy (joined
 * with `=`), and its `watcher` (kstatus) waits on every custom resource until kstatus calls it
 * Current: one whose controller writes a status kstatus cannot read (an Argo Rollout's string
 * `observedGeneration`, helm #32615) or a `Ready=False` it keeps by design holds the release
 * pending until `--timeout`. `legacy` is v3's waiter (workloads, Jobs, PVCs, Services, CRDs
 * Established), which passes a custom resource as it is. The reconciler never asks for either:
 * readiness is its own (docs/adr/0076).
 */
const readyWaitFlag = (major: HelmMajor): string => (major === 4 ? '--wait=legacy' : '--wait');

/** `--wait` for uninstall: until the objects are gone, which needs no status (v4's `watcher`). */
const deleteWaitFlag = (major: HelmMajor): string => (major === 4 ? '--wait=watcher' : '--wait');

/**
 * v4 renamed `--force` to `--force-replace` (the old name prints a deprecation warning) and
 * refuses it with server-side apply, its default ("invalid operation: cannot use server-side apply
 * and force replace together", and the refused upgrade is still recorded as a `failed` revision).
 * So an upgrade the CR asks to force (`upgrade-force`) is client-side in v4.
 */
const forceReplaceFlags = (major: HelmMajor): string[] => (major === 4 ? ['--force-replace', '--server-side=false'] : ['--force']);

/**
 * Every other v4 upgrade and rollback says `--server-side=true` rather than helm's `auto`, which
 * follows the release's recorded `apply_method`: a release applied client-side (by helm 3, by
 * operator-sdk, by a forced upgrade) moves to server-side apply on its next upgrade, and helm moves
 * its own client-side field ownership to its apply ownership as it does (ADR 0072).
 * `--force-conflicts` takes the applied fields from other field managers.
 */
const serverSideFlags = (forceConflicts: boolean): string[] => ['--server-side=true', ...(forceConflicts ? ['--force-conflicts'] : [])];

const nonNegativeInt = (what: string, n: number): string => {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${what} must be a non-negative integer, got ${n}`);
  return String(n);
};

export function connectionArgs(opts: ConnectionArgsOptions): string[] {
  const args: string[] = [];
  if (opts.kubeContext !== undefined && opts.kubeContext !== '') args.push('--kube-context', opts.kubeContext);
  if (opts.impersonate !== undefined && opts.impersonate !== '') args.push('--kube-as-user', opts.impersonate);
  return args;
}

/**
 * `args` with the connection flags inserted after the subcommand words (before any flag, so
 * always before the `--` terminator).
 */
export function withConnectionArgs(args: readonly string[], opts: ConnectionArgsOptions): string[] {
  const conn = connectionArgs(opts);
  const at = args.findIndex((a) => a.startsWith('-'));
  const i = at < 0 ? args.length : at;
  return [...args.slice(0, i), ...conn, ...args.slice(i)];
}

/**
 * `--disable-openapi-validation` on install and upgrade: on an API server with server-side field
 * validation (GA in Kubernetes 1.27) helm's client-side check validates nothing, it only fetches
 * and parses the cluster's OpenAPI documents to learn that the server validates: ~0.1–0.15 of an
 * install's ~0.23 CPU-s, in every process (docs/benchmarks.md, ADR 0021). What the server refuses
 * (an undeclared field under server-side apply, a wrong type) it still refuses.
 */
function chartFlags(opts: InstallArgsOptions, major: HelmMajor): string[] {
  const args = ['--namespace', opts.namespace, '--values', opts.valuesFile, '--output', 'json', '--disable-openapi-validation'];
  args.push('--timeout', formatGoDuration(opts.timeoutMs));
  if (opts.wait === true) args.push(readyWaitFlag(major));
  if (opts.labels !== undefined && Object.keys(opts.labels).length > 0) args.push('--labels', formatLabels(opts.labels));
  if (opts.description !== undefined && opts.description !== '') args.push(`--description=${opts.description}`);
  if (opts.postRenderFlags !== undefined) args.push(...opts.postRenderFlags);
  return args;
}

/**
 * `helm install` without `--wait` unless asked: success means "applied", as in operator-sdk. With
 * no `--wait`, helm 4's strategy is `hookOnly`: only hooks (their Jobs and Pods) are waited on.
 */
export function installArgs(opts: InstallArgsOptions, major: HelmMajor): string[] {
  const forced = major === 4 && opts.forceConflicts === true ? ['--force-conflicts'] : [];
  return [
    'install',
    ...chartFlags(opts, major),
    ...forced,
    ...(opts.skipCrds === true ? ['--skip-crds'] : []),
    '--',
    opts.release,
    opts.chart,
  ];
}

/**
 * `helm upgrade` with `--reset-values`: without it helm reuses the previous revision's values
 * whenever the new ones are empty, so a CR whose spec was emptied would keep its old values.
 */
export function upgradeArgs(opts: UpgradeArgsOptions, major: HelmMajor): string[] {
  const args = ['upgrade', ...chartFlags(opts, major), '--reset-values'];
  if (opts.force === true) args.push(...forceReplaceFlags(major));
  else if (major === 4) args.push(...serverSideFlags(opts.forceConflicts === true));
  if (opts.historyMax !== undefined) args.push('--history-max', nonNegativeInt('historyMax', opts.historyMax));
  return [...args, '--', opts.release, opts.chart];
}

export function uninstallArgs(opts: UninstallArgsOptions, major: HelmMajor): string[] {
  const args = ['uninstall', '--namespace', opts.namespace, '--timeout', formatGoDuration(opts.timeoutMs)];
  // helm 4 states only "failed to delete release" and logs the cause (a Forbidden, say) at debug level.
  if (major === 4) args.push('--debug');
  if (opts.wait === true) args.push(deleteWaitFlag(major));
  if (opts.keepHistory === true) args.push('--keep-history');
  if (opts.description !== undefined && opts.description !== '') args.push(`--description=${opts.description}`);
  return [...args, '--', opts.release, ...(opts.also ?? [])];
}

export function rollbackArgs(opts: RollbackArgsOptions, major: HelmMajor): string[] {
  const args = ['rollback', '--namespace', opts.namespace, '--timeout', formatGoDuration(opts.timeoutMs)];
  if (opts.wait === true) args.push(readyWaitFlag(major));
  // A forced v4 rollback takes the revision's fields back server-side: replacing objects would
  // leave the release on client-side apply, where the next upgrade resets what others own.
  if (major === 4) args.push(...serverSideFlags(opts.force === true));
  else if (opts.force === true) args.push(...forceReplaceFlags(major));
  if (opts.historyMax !== undefined) args.push('--history-max', nonNegativeInt('historyMax', opts.historyMax));
  const positionals = [opts.release];
  if (opts.revision !== undefined && opts.revision !== 0) positionals.push(nonNegativeInt('revision', opts.revision));
  return [...args, '--', ...positionals];
}

/** `helm test`: the chart's test hooks against the deployed revision; `logs`: their pods' logs on stdout. */
export function testArgs(opts: TimedArgsBase & { readonly logs?: boolean }): string[] {
  const args = ['test', '--namespace', opts.namespace, '--timeout', formatGoDuration(opts.timeoutMs)];
  if (opts.logs === true) args.push('--logs');
  return [...args, '--', opts.release];
}

export function statusArgs(opts: ReleaseArgsBase): string[] {
  return ['status', '--namespace', opts.namespace, '--output', 'json', '--', opts.release];
}

/** `helm get metadata` (helm ≥ 3.13): the chart name/version/appVersion that `status` omits. */
export function metadataArgs(opts: MetadataArgsOptions): string[] {
  const args = ['get', 'metadata', '--namespace', opts.namespace, '--output', 'json'];
  if (opts.revision !== undefined) args.push('--revision', nonNegativeInt('revision', opts.revision));
  return [...args, '--', opts.release];
}

/** `helm get values` of one revision: the user-supplied values as stored (stored-strings.ts reduces them at once). */
export function getValuesArgs(opts: ReleaseArgsBase & { readonly revision: number }): string[] {
  return [
    'get',
    'values',
    '--namespace',
    opts.namespace,
    '--output',
    'json',
    '--revision',
    nonNegativeInt('revision', opts.revision),
    '--',
    opts.release,
  ];
}

export function historyArgs(opts: HistoryArgsOptions): string[] {
  const args = ['history', '--namespace', opts.namespace, '--output', 'json'];
  if (opts.max !== undefined) args.push('--max', nonNegativeInt('max', opts.max));
  return [...args, '--', opts.release];
}

/** `helm template`: a client-side render, no cluster contact; prints the manifest (hooks included). */
export function templateArgs(opts: TemplateArgsOptions): string[] {
  const args = ['template', '--namespace', opts.namespace, '--values', opts.valuesFile];
  if (opts.kubeVersion !== undefined) args.push('--kube-version', opts.kubeVersion);
  for (const v of opts.apiVersions ?? []) args.push('--api-versions', v);
  if (opts.includeCrds === true) args.push('--include-crds');
  for (const f of opts.extraValuesFiles ?? []) args.push('--values', f);
  return [...args, '--', opts.release, opts.chart];
}

/**
 * `helm upgrade --install --dry-run=server`: what installing or upgrading `release` would apply,
 * rendered the way the real command renders it, for a release that may or may not exist yet (an
 * absent or uninstalled one takes the install path: revision 1; an existing one the upgrade path:
 * next revision, `.Release.IsUpgrade`). `server` (helm ≥ 3.13, v4) lets templates' `lookup()` and
 * `.Capabilities` ask the cluster, and runs helm's server-side checks (kinds served, objects owned
 * by another release); like every dry run it writes nothing: no release Secret, no object, no
 * hook. The flags that shape the render are the real install's and upgrade's (`--reset-values`:
 * exactly these values; `--disable-openapi-validation`); none of those only a real run uses
 * (`--labels`, `--wait`, `--force`, `--timeout`, `--history-max`, never `--create-namespace`). The
 * JSON output holds the manifest and the hooks apart (see `parseDryRunManifest`). Same in v3 and v4.
 */
export function serverDryRunArgs(opts: ServerDryRunArgsOptions): string[] {
  return [
    'upgrade',
    '--install',
    '--dry-run=server',
    '--namespace',
    opts.namespace,
    '--values',
    opts.valuesFile,
    '--output',
    'json',
    '--disable-openapi-validation',
    '--reset-values',
    '--',
    opts.release,
    opts.chart,
  ];
}

/** `helm pull`, untarred: a remote chart becomes a directory under `destination`. */
export function pullArgs(opts: PullArgsOptions): string[] {
  const args = ['pull', '--untar', '--destination', opts.destination];
  if (opts.plainHttp === true) args.push('--plain-http');
  if (opts.repo !== undefined) args.push('--repo', opts.repo);
  if (opts.version !== undefined) args.push('--version', opts.version);
  return [...args, '--', opts.chart];
}

/** `helm dependency build`: fetches the subcharts of Chart.yaml (and Chart.lock) into `charts/`. */
export function dependencyBuildArgs(chartDir: string, plainHttp = false): string[] {
  return ['dependency', 'build', ...(plainHttp ? ['--plain-http'] : []), '--', chartDir];
}

/** `helm create`: helm's starter chart at `chartDir` (its base name becomes the chart's name). */
export function createArgs(chartDir: string): string[] {
  return ['create', '--', chartDir];
}

/** `helm lint`: a chart's own checks (Chart.yaml, templates render, values schema). */
export function lintArgs(chartDir: string): string[] {
  return ['lint', '--', chartDir];
}

/** Works on v3 and v4; prints e.g. `v4.1.4`. */
export function versionArgs(): string[] {
  return ['version', '--template', '{{.Version}}'];
}

/** `helm env NAME`: one of helm's settings as this environment resolves it (e.g. HELM_REPOSITORY_CONFIG). */
export function envArgs(name: string): string[] {
  return ['env', '--', name];
}
