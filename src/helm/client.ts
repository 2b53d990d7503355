import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { ExecaError, execa } from 'execa';
import { silentLogger, type Logger } from '../telemetry/logger.js';
import type { HelmExecution } from '../telemetry/metric-hooks.js';
// Part of the client's options (`observer`); declared in telemetry, which must not import helm.
export type { HelmExecution } from '../telemetry/metric-hooks.js';
import {
  createArgs,
  dependencyBuildArgs,
  envArgs,
  historyArgs,
  lintArgs,
  pullArgs,
  installArgs,
  metadataArgs,
  rollbackArgs,
  serverDryRunArgs,
  statusArgs,
  templateArgs,
  uninstallArgs,
  upgradeArgs,
  versionArgs,
  withConnectionArgs,
  type HelmMajor,
} from './args.js';
import { classifyHelmError, explainFailure, HelmError, isHelmError, SUMMARY_MAX_CHARS, summarizeStderr } from './errors.js';
import { instanceEnded, markedProcesses, pidEnded, selfInstance, startTime, type InstanceId } from './instance.js';
import { LiveReleases } from './live-releases.js';
import { HelmOutputError, parseDryRunManifest, parseHelmVersion, parseHistoryJson, parseMetadataJson, parseReleaseJson, uninstalledRelease } from './parse.js';
import type { HelmVersion, HistoryEntry, Release } from './types.js';

export interface HelmClientOptions {
  /** Path of the helm executable (v3 ≥ 3.13 or v4). */
  readonly binary: string;
  /** Passed to helm as `KUBECONFIG`; otherwise helm's own lookup (env, in-cluster, ~/.kube/config). */
  readonly kubeconfig?: string;
  readonly kubeContext?: string;
  /** User to impersonate (`--kube-as-user`). */
  readonly impersonate?: string;
  /** helm's `--timeout` when a call gives none. Default 5 minutes, as helm's. */
  readonly defaultTimeoutMs?: number;
  readonly log?: Logger;
  /** Writable directory for helm's cache/config/data homes and the values files. Default `os.tmpdir()`. */
  readonly tmpDir?: string;
  readonly observer?: (e: HelmExecution) => void;
  /** helm storage driver (`HELM_DRIVER`). Default `secret`; `memory` exists for tests. */
  readonly driver?: 'secret' | 'configmap' | 'memory';
  /**
   * Extra environment for helm, e.g. `HELM_MEMORY_DRIVER_DATA` in tests. The variables this client
   * owns (`HELM_*_HOME`, `KUBECACHEDIR`, `HELM_DRIVER`, `KUBECONFIG`) override it.
   */
  readonly extraEnv?: Readonly<Record<string, string>>;
  /** client-go's discovery and HTTP caches (`KUBECACHEDIR`); default a shared one under `tmpDir`. */
  readonly kubeCacheDir?: string;
  /**
   * Use the invoking user's helm homes (repository aliases of `helm repo add`, registry logins of
   * `helm registry login`) instead of private ones under `tmpDir`. For the scaffolding CLI, which
   * fetches charts the way the user's own helm would; the operator never sets it.
   */
  readonly userHelmHome?: boolean;
}

interface CallOptions {
  /** helm's `--timeout` for this call; the process deadline is this plus {@link PROCESS_MARGIN_MS}. */
  readonly timeoutMs?: number;
  /** Aborting sends helm SIGTERM (it records the release state and exits); the call rejects with `Canceled`. */
  readonly signal?: AbortSignal;
  /**
   * Masks the values that must not show in the error (secrets): applied to helm's raw stderr,
   * before anything collapses or shortens it into the error's summary.
   */
  readonly redact?: (text: string) => string;
}

export interface InstallOptions extends CallOptions {
  readonly release: string;
  readonly namespace: string;
  /** Path of the chart (directory or archive). */
  readonly chart: string;
  /** Written to a private 0600 JSON file for `--values`, removed when the call ends. */
  readonly values: Readonly<Record<string, unknown>>;
  /** Release labels (`--labels`); Kubernetes label syntax, not helm's reserved keys. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Wait for readiness (v3 `--wait`, v4 `--wait=watcher`). Default false. */
  readonly wait?: boolean;
  /** Ignored on install (helm 3's install has no force flag). */
  readonly force?: boolean;
  readonly description?: string;
}

export interface UpgradeOptions extends InstallOptions {
  /**
   * Replace what cannot be patched: v3 `--force`; v4 `--force-replace --server-side=false` (helm 4
   * refuses force-replace with server-side apply, so this revision and later `auto` ones use
   * client-side apply).
   */
  readonly force?: boolean;
  /** `--history-max`; helm's default is 10. */
  readonly historyMax?: number;
}

export interface TemplateOptions extends InstallOptions {
  readonly kubeVersion?: string;
  readonly apiVersions?: readonly string[];
  readonly includeCrds?: boolean;
  /** User values files applied after `values` (e.g. the scaffolder's `--values` for RBAC discovery). */
  readonly extraValuesFiles?: readonly string[];
}

export interface ServerDryRunOptions extends CallOptions {
  readonly release: string;
  readonly namespace: string;
  /** Path of the chart (directory or archive). */
  readonly chart: string;
  /** Written to a private 0600 JSON file for `--values`, removed when the call ends. */
  readonly values: Readonly<Record<string, unknown>>;
}

export interface PullOptions extends CallOptions {
  readonly chart: string;
  readonly repo?: string;
  readonly version?: string;
  readonly destination: string;
  readonly plainHttp?: boolean;
}

export interface UninstallOptions extends CallOptions {
  readonly release: string;
  /** More releases of the namespace, uninstalled by the same helm process after `release` (helm stops at the first failure). */
  readonly also?: readonly string[];
  readonly namespace: string;
  /** Wait until the resources are gone. Default false. */
  readonly wait?: boolean;
  readonly keepHistory?: boolean;
  readonly description?: string;
  /**
   * Called with each release as helm reports it uninstalled, while the process goes on with the
   * next ones (a batch's callers can finish their CRs meanwhile). Not called for a release that
   * was not there.
   */
  readonly onUninstalled?: (release: string) => void;
}

export interface RollbackOptions extends CallOptions {
  readonly release: string;
  readonly namespace: string;
  /** Target revision; omitted means the previous one. */
  readonly revision?: number;
  readonly wait?: boolean;
  /** v3 `--force`, v4 `--force-replace --server-side=false` (see {@link UpgradeOptions.force}). */
  readonly force?: boolean;
  readonly historyMax?: number;
}

const DEFAULT_TIMEOUT_MS = 5 * 60_000;
/** The process deadline exceeds helm's own `--timeout` so helm normally times out first and records it. */
export const PROCESS_MARGIN_MS = 60_000;
/** Deadline for verbs without a helm `--timeout` (status, history, get, template, version). */
const READ_DEADLINE_MS = 60_000;
/** After SIGTERM helm cancels and writes the release state; SIGKILL mid-upgrade can strand `pending-*`. */
const FORCE_KILL_AFTER_MS = 30_000;

/** Verbs that change a release: {@link HelmClient.running} reports their live processes. */
const RELEASE_WRITERS: ReadonlySet<string> = new Set(['install', 'upgrade', 'rollback', 'uninstall']);
const MAX_BUFFER = 64 * 1024 * 1024;
/** Verbs that never talk to a cluster, so get no `--kube-*` flags. */
const OFFLINE_VERBS: ReadonlySet<string> = new Set(['template', 'version', 'pull', 'dependency', 'create', 'lint', 'env']);

interface RunContext {
  readonly release?: string;
  readonly namespace?: string;
  /** Process deadline in ms. */
  readonly deadlineMs: number;
  readonly signal?: AbortSignal;
  /** Sees each line of stdout as helm prints it. */
  readonly onLine?: (line: string) => void;
  readonly redact?: (text: string) => string;
}

/**
 * Values directories are named after the process start that made them (`helm-values-<pid>.<start>-XXXXXX`,
 * see instance.ts), so a stale one can be told apart even when the new process has the old pid.
 */
const VALUES_DIR_PREFIX = 'helm-values-';

/**
 * Who made the values directory `name`: an instance id, or for the pid-only names of earlier
 * versions (`helm-values-<pid>-XXXXXX`) a pid. Undefined for any other name.
 */
export function valuesDirOwner(name: string): { readonly instance: InstanceId } | { readonly pid: number } | undefined {
  const m = /^helm-values-(?:(\d+\.[0-9a-f]+)|(\d+))-[A-Za-z0-9]{6}$/.exec(name);
  if (m === null) return undefined;
  return m[1] !== undefined ? { instance: m[1] } : { pid: Number(m[2]) };
}

/** Whether the process that made a values directory has ended. */
function ownerEnded(owner: NonNullable<ReturnType<typeof valuesDirOwner>>): boolean {
  if ('instance' in owner) return instanceEnded(owner.instance);
  // Named by an earlier version: this process makes none such, so one with its pid is a predecessor's.
  return owner.pid === process.pid || pidEnded(owner.pid);
}

/** Set in every helm process's environment to the operator process start that runs it (see {@link HelmClient.stopOrphans}). */
export const INSTANCE_ENV = 'HELM_OPERATOR_INSTANCE';

/** How long an orphaned helm gets after SIGTERM to record its release's state before SIGKILL. */
const ORPHAN_GRACE_MS = 10_000;

/**
 * What of the operator's environment a helm process gets: what helm, client-go and Go's runtime
 * read (search path, home, proxies, CA files, in-cluster config, HELM_*, GO*, XDG_*), nothing else.
 * Tokens and credentials the operator's environment holds for other purposes stay out of helm
 * and of the plugins and post-renderers it starts.
 */
export function inheritedEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && (INHERITED.has(name) || /^(?:HELM_[A-Z0-9_]+|GO[A-Z0-9]+|XDG_[A-Z_]+)$/.test(name))) out[name] = value;
  }
  return out;
}

const INHERITED: ReadonlySet<string> = new Set([
  'PATH',
  'HOME',
  'USER',
  'TMPDIR',
  'LANG',
  'LC_ALL',
  'TZ',
  'KUBECONFIG',
  'KUBERNETES_SERVICE_HOST',
  'KUBERNETES_SERVICE_PORT',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
]);

/**
 * helm's client-side request throttle, unless the operator's environment sets it. client-go's
 * default (5 requests/s once helm's burst of 100 is spent) is sized for many controllers sharing
 * one process; one helm process serves one release operation, or one batched uninstall of up to 20
 * releases, which it left waiting on the throttle: such a batch took 2.8 s by default and 1.35 s
 * without the wait (docs/benchmarks.md). The API server's priority and fairness still applies.
 */
export function clientThrottleEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  if (env.HELM_QPS === undefined) out.HELM_QPS = '50';
  if (env.HELM_BURST_LIMIT === undefined) out.HELM_BURST_LIMIT = '200';
  return out;
}

/** A helm process's Go heap limit (see goRuntimeEnv): above the sample chart's ~64 MiB, well below the pod's limit. */
export const HELM_MEMORY_LIMIT = '128MiB';

/**
 * Go's garbage collector in helm's processes, unless the operator's environment sets GOGC or
 * GOMEMLIMIT itself. A helm process lives for one operation and allocates a few tens of MiB:
 * collecting along the way spends CPU on memory that exit frees anyway. GOGC=off with a memory
 * limit collects only as a process nears the limit, so a very large chart still runs in bounded
 * memory. Measured on the sample chart: ~18 % less helm CPU, converge ~8 % faster (ADR 0025).
 */
export function goRuntimeEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  if (env.GOGC !== undefined || env.GOMEMLIMIT !== undefined) return {};
  return { GOGC: 'off', GOMEMLIMIT: HELM_MEMORY_LIMIT };
}

/**
 * The only place the operator runs helm. Each call spawns one helm process (`status` spawns two)
 * with an argument array (no shell), a private environment and a deadline, and turns any failure
 * into a {@link HelmError}. Values go through a private temp file, never the command line.
 */
export class HelmClient {
  readonly #opts: HelmClientOptions;
  readonly #log: Logger;
  readonly #tmpDir: string;
  #version: Promise<HelmVersion> | undefined;
  readonly #identities = new Map<string, HelmClient>();
  #executions = 0;
  /** Shared by every identity of this client (`as`, `withEnv`): one process table. */
  #live = new LiveReleases();

  constructor(opts: HelmClientOptions) {
    this.#opts = opts;
    this.#log = opts.log ?? silentLogger();
    this.#tmpDir = opts.tmpDir ?? tmpdir();
  }

  /**
   * The same client acting as `user` (`--kube-as-user`): helm's API requests and release storage
   * are then bounded by that user's RBAC. The binary's version is detected once for all of them.
   */
  as(user: string | undefined): HelmClient {
    if (user === undefined || user === this.#opts.impersonate) return this;
    let client = this.#identities.get(user);
    if (client === undefined) {
      client = new HelmClient({ ...this.#opts, impersonate: user });
      client.#version = this.version();
      client.#live = this.#live;
      this.#identities.set(user, client);
    }
    return client;
  }

  /**
   * The same client talking to the cluster through `kubeconfig` (a helm gateway grant) instead of
   * the operator's own connection, with client-go's caches in `kubeCacheDir` (they are keyed by
   * the server URL, which names the grant); identities (`as`) and the process table carry over.
   */
  through(kubeconfig: string, kubeCacheDir: string): HelmClient {
    const { kubeContext: _context, ...rest } = this.#opts;
    const client = new HelmClient({ ...rest, kubeconfig, kubeCacheDir });
    client.#version = this.version();
    client.#live = this.#live;
    return client;
  }

  /**
   * The same binary with more environment, e.g. a private HELM_REPOSITORY_CONFIG for one chart
   * fetch, so the user's helm configuration is neither needed nor changed.
   */
  withEnv(env: Readonly<Record<string, string>>): HelmClient {
    const client = new HelmClient({ ...this.#opts, extraEnv: { ...this.#opts.extraEnv, ...env } });
    client.#live = this.#live;
    return client;
  }

  /** `helm env NAME`: where this helm looks for something (e.g. HELM_REPOSITORY_CONFIG). */
  async env(name: string, opts: CallOptions = {}): Promise<string> {
    return (await this.#run('env', envArgs(name), this.#offline(opts))).trim();
  }

  /**
   * Whether a helm process that changes `release` (install, upgrade, rollback, uninstall) has not
   * exited yet, a cancelled one included.
   */
  running(release: string, namespace: string): boolean {
    return this.#live.has(namespace, release);
  }

  /** helm processes started so far (every verb, `version` included). */
  get executions(): number {
    return this.#executions;
  }

  /**
   * The binary's version, detected once (concurrent callers share the run; a failure is not cached).
   * Rejects with reason `HelmNotFound` for a missing binary or a helm older than 3.13.
   */
  version(): Promise<HelmVersion> {
    this.#version ??= this.#detectVersion().catch((err: unknown) => {
      this.#version = undefined;
      throw err;
    });
    return this.#version;
  }

  async #detectVersion(): Promise<HelmVersion> {
    const stdout = await this.#run('version', versionArgs(), { deadlineMs: READ_DEADLINE_MS });
    try {
      return parseHelmVersion(stdout);
    } catch (err) {
      const reason = err instanceof HelmOutputError ? err.message : String(err);
      throw new HelmError({ reason: 'HelmNotFound', verb: 'version', summary: `${this.#opts.binary}: ${reason}` });
    }
  }

  /** `helm install`; resolves with the new release (revision 1). */
  async install(opts: InstallOptions): Promise<Release> {
    const major = await this.#major(opts.signal);
    const timeoutMs = this.#timeout(opts.timeoutMs);
    const stdout = await this.#withValuesFile(opts.values, (valuesFile) =>
      this.#run('install', installArgs({ ...opts, valuesFile, timeoutMs }, major), this.#ctx(opts, timeoutMs)),
    );
    return this.#parseRelease(stdout, 'install');
  }

  /** `helm upgrade` (never `--install`) with exactly `values` over the chart defaults. */
  async upgrade(opts: UpgradeOptions): Promise<Release> {
    const major = await this.#major(opts.signal);
    const timeoutMs = this.#timeout(opts.timeoutMs);
    const stdout = await this.#withValuesFile(opts.values, (valuesFile) =>
      this.#run('upgrade', upgradeArgs({ ...opts, valuesFile, timeoutMs }, major), this.#ctx(opts, timeoutMs)),
    );
    return this.#parseRelease(stdout, 'upgrade');
  }

  /** `helm uninstall`; a release that does not exist is `{ found: false }`, not an error. */
  async uninstall(opts: UninstallOptions): Promise<{ found: boolean }> {
    const major = await this.#major(opts.signal);
    const timeoutMs = this.#timeout(opts.timeoutMs);
    try {
      const { onUninstalled } = opts;
      const onLine =
        onUninstalled === undefined
          ? undefined
          : (line: string): void => {
              const release = uninstalledRelease(line);
              if (release !== undefined) onUninstalled(release);
            };
      await this.#run('uninstall', uninstallArgs({ ...opts, timeoutMs }, major), { ...this.#ctx(opts, timeoutMs), ...(onLine ? { onLine } : {}) });
      return { found: true };
    } catch (err) {
      if (isHelmError(err, 'ReleaseNotFound')) return { found: false };
      throw err;
    }
  }

  /** `helm rollback` to `revision` (default: the previous one). */
  async rollback(opts: RollbackOptions): Promise<void> {
    const major = await this.#major(opts.signal);
    const timeoutMs = this.#timeout(opts.timeoutMs);
    await this.#run('rollback', rollbackArgs({ ...opts, timeoutMs }, major), this.#ctx(opts, timeoutMs));
  }

  /**
   * The latest revision, or `undefined` when there is no such release. Two processes: `status`
   * (whose JSON omits the chart) and `get metadata` pinned to that same revision, which also
   * gives the release labels on helm 4.
   */
  async status(name: string, namespace: string, signal?: AbortSignal): Promise<Release | undefined> {
    await this.#major(signal);
    const ctx: RunContext = { release: name, namespace, deadlineMs: READ_DEADLINE_MS, ...(signal ? { signal } : {}) };
    try {
      const stdout = await this.#run('status', statusArgs({ release: name, namespace }), ctx);
      const partial = this.#parse('status', () => parseReleaseJson(stdout, 'status'));
      const revision = partial.revision;
      const meta = await this.#run('get-metadata', metadataArgs({ release: name, namespace, revision }), ctx);
      const { chart, labels } = this.#parse('get-metadata', () => parseMetadataJson(meta, 'get metadata'));
      return { ...partial, chart, ...(labels !== undefined ? { labels } : {}) };
    } catch (err) {
      // Also covers the release vanishing between the two calls.
      if (isHelmError(err, 'ReleaseNotFound')) return undefined;
      throw err;
    }
  }

  /** `helm history`, oldest first; the newest `max` revisions when given; `[]` when there is no such release. */
  async history(name: string, namespace: string, max?: number, signal?: AbortSignal): Promise<HistoryEntry[]> {
    await this.#major(signal);
    const ctx: RunContext = { release: name, namespace, deadlineMs: READ_DEADLINE_MS, ...(signal ? { signal } : {}) };
    try {
      const stdout = await this.#run('history', historyArgs({ release: name, namespace, ...(max !== undefined ? { max } : {}) }), ctx);
      return this.#parse('history', () => parseHistoryJson(stdout, 'history'));
    } catch (err) {
      if (isHelmError(err, 'ReleaseNotFound')) return [];
      throw err;
    }
  }

  /**
   * `helm template`: the rendered manifest (hooks and tests included, CRDs only with
   * `includeCrds`), client-side with no cluster contact. Fails like install would on schema and
   * render errors. `labels`, `wait`, `force` and `timeoutMs` do not apply.
   */
  async template(opts: TemplateOptions): Promise<string> {
    await this.#major(opts.signal);
    const ctx = this.#ctx(opts, undefined);
    return this.#withValuesFile(opts.values, (valuesFile) => this.#run('template', templateArgs({ ...opts, valuesFile }), ctx));
  }

  /**
   * helm's server-side dry run of installing `release`, or upgrading it when it exists (`helm
   * upgrade --install --dry-run=server`): rendered as the real command would render it, with the
   * cluster's capabilities and templates' `lookup()` answered by the cluster, as this client's
   * kubeconfig and identity (`as()`) see it. Writes nothing: no release Secret, no object, no hook.
   * Resolves with the manifest laid out as {@link template} returns it (hooks and tests included,
   * never CRDs), so the same render reads the same. Fails like the real command: on render and
   * schema errors, on a kind the cluster does not serve (`RenderFailed`), on an object another
   * owner holds, on a release locked by a `pending-*` revision, and with Forbidden where the
   * identity may not read (release Secrets, what `lookup()` asks for). `timeoutMs` is the process
   * deadline (default 60 s). Not a change, so {@link running} does not count it.
   */
  async serverDryRun(opts: ServerDryRunOptions): Promise<string> {
    await this.#major(opts.signal);
    const ctx: RunContext = { ...this.#ctx(opts, undefined), ...(opts.timeoutMs !== undefined ? { deadlineMs: opts.timeoutMs } : {}) };
    const stdout = await this.#withValuesFile(opts.values, (valuesFile) => this.#run('dry-run', serverDryRunArgs({ ...opts, valuesFile }), ctx));
    const manifest = this.#parse('dry-run', () => parseDryRunManifest(stdout, 'upgrade --install --dry-run=server'));
    // As template() returns helm's stdout: without its final newline.
    return manifest.endsWith('\n') ? manifest.slice(0, -1) : manifest;
  }

  /** `helm pull --untar`: the chart lands in a new directory under `opts.destination`. */
  async pull(opts: PullOptions): Promise<void> {
    await this.#run('pull', pullArgs(opts), this.#offline(opts));
  }

  /** `helm dependency build`: the chart's declared subcharts, from Chart.lock when there is one. */
  async dependencyBuild(chartDir: string, opts: CallOptions & { plainHttp?: boolean } = {}): Promise<void> {
    await this.#run('dependency', dependencyBuildArgs(chartDir, opts.plainHttp), this.#offline(opts));
  }

  /** `helm create`: helm's starter chart (an nginx Deployment, Service, optional Ingress/HPA) at `chartDir`. */
  async create(chartDir: string, opts: CallOptions = {}): Promise<void> {
    await this.#run('create', createArgs(chartDir), this.#offline(opts));
  }

  /** `helm lint`; resolves with its report, rejects when the chart has errors. */
  async lint(chartDir: string, opts: CallOptions = {}): Promise<string> {
    return this.#run('lint', lintArgs(chartDir), this.#offline(opts));
  }

  /** Verbs without a cluster (and without helm's `--timeout`): a fixed deadline, or the caller's. */
  #offline(opts: CallOptions): RunContext {
    return { deadlineMs: opts.timeoutMs ?? READ_DEADLINE_MS, ...(opts.signal ? { signal: opts.signal } : {}), ...(opts.redact ? { redact: opts.redact } : {}) };
  }

  async #major(signal: AbortSignal | undefined): Promise<HelmMajor> {
    throwIfAborted(signal, 'version');
    return (await this.version()).major;
  }

  #timeout(ms: number | undefined): number {
    return ms ?? this.#opts.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** Run context for a verb; `timeoutMs` undefined means a read verb with the fixed deadline. */
  #ctx(opts: CallOptions & { release: string; namespace: string }, timeoutMs: number | undefined): RunContext {
    return {
      release: opts.release,
      namespace: opts.namespace,
      deadlineMs: timeoutMs === undefined ? READ_DEADLINE_MS : timeoutMs + PROCESS_MARGIN_MS,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.redact ? { redact: opts.redact } : {}),
    };
  }

  /**
   * Removes the values directories that processes which have since died left behind (a SIGKILL
   * during a helm call skips the cleanup in {@link #withValuesFile}, leaving values, secrets
   * included, on disk), an earlier process with this one's pid included. Directories of live
   * processes, this one included, are kept. Resolves with the directories removed.
   */
  async removeStaleValuesDirs(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.#tmpDir);
    } catch {
      return [];
    }
    const stale = names.filter((name) => {
      const owner = valuesDirOwner(name);
      return owner !== undefined && ownerEnded(owner);
    });
    const removed: string[] = [];
    for (const name of stale) {
      const dir = path.join(this.#tmpDir, name);
      await rm(dir, { recursive: true, force: true }).then(
        () => removed.push(dir),
        (err: unknown) => {
          this.#log.warn({ dir, error: err }, 'Could not remove a stale helm values directory');
        },
      );
    }
    return removed;
  }

  /**
   * Stops the helm processes that an operator process which has since died started with this
   * client's helm homes (same tmpDir): a SIGKILLed operator outside a container leaves its helm
   * running, and it would go on changing a release beside the new operator's helm (ADR 0044).
   * Each gets SIGTERM (helm then records its release as failed), and SIGKILL after `graceMs`.
   * Call at start, before reconciling. Resolves with the pids stopped.
   */
  async stopOrphans(graceMs = ORPHAN_GRACE_MS): Promise<number[]> {
    if (this.#opts.userHelmHome === true) return [];
    const { HELM_DATA_HOME } = this.#homes();
    const orphans = markedProcesses(INSTANCE_ENV, { HELM_DATA_HOME: HELM_DATA_HOME ?? '' }).filter((p) => instanceEnded(p.instance));
    if (orphans.length === 0) return [];
    const running = (): typeof orphans => orphans.filter((p) => startTime(p.pid) === p.start);
    const signal = (sig: NodeJS.Signals): void => {
      for (const p of running()) {
        try {
          process.kill(p.pid, sig);
        } catch {
          // Gone meanwhile.
        }
      }
    };
    this.#log.warn({ pids: orphans.map((p) => p.pid) }, 'Stopping helm processes of an operator process that was killed');
    signal('SIGTERM');
    const deadline = Date.now() + graceMs;
    while (running().length > 0 && Date.now() < deadline) await sleep(100);
    signal('SIGKILL');
    return orphans.map((p) => p.pid);
  }

  /**
   * Runs `fn` with the path of a fresh 0600 JSON file holding `values`, inside a private
   * (mkdtemp, 0700) directory that is removed however `fn` ends.
   */
  async #withValuesFile<T>(values: Readonly<Record<string, unknown>>, fn: (file: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(path.join(this.#tmpDir, `${VALUES_DIR_PREFIX}${selfInstance()}-`));
    try {
      const file = path.join(dir, 'values.json');
      await writeFile(file, JSON.stringify(values), { mode: 0o600, flag: 'wx' });
      return await fn(file);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** helm's whole environment (execa does not extend it with the operator's): see {@link inheritedEnv}. */
  #env(): Record<string, string> {
    const base = { ...inheritedEnv(process.env), ...clientThrottleEnv(process.env), ...goRuntimeEnv(process.env) };
    if (this.#opts.userHelmHome === true) return { ...base, ...this.#opts.extraEnv, [INSTANCE_ENV]: selfInstance() };
    return { ...base, ...this.#opts.extraEnv, ...this.#homes(), [INSTANCE_ENV]: selfInstance() };
  }

  /** The private helm homes under tmpDir, and what else this client owns in helm's environment. */
  #homes(): Record<string, string> {
    const home = path.join(this.#tmpDir, 'helm');
    return {
      HELM_CACHE_HOME: path.join(home, 'cache'),
      HELM_CONFIG_HOME: path.join(home, 'config'),
      HELM_DATA_HOME: path.join(home, 'data'),
      // client-go's discovery and HTTP (OpenAPI) caches, shared by every helm process: otherwise
      // they go to $HOME/.kube/cache, which the image's read-only root makes unwritable, and each
      // helm run rediscovers the API (~15 more requests and ~10 % more CPU per install, measured).
      KUBECACHEDIR: this.#opts.kubeCacheDir ?? path.join(home, 'kube-cache'),
      HELM_DRIVER: this.#opts.driver ?? 'secret',
      ...(this.#opts.kubeconfig !== undefined ? { KUBECONFIG: this.#opts.kubeconfig } : {}),
    };
  }

  /** Spawns helm once; resolves with stdout, rejects with a HelmError. */
  async #run(verb: string, verbArgs: string[], ctx: RunContext): Promise<string> {
    throwIfAborted(ctx.signal, verb);
    const args = OFFLINE_VERBS.has(verb) ? verbArgs : withConnectionArgs(verbArgs, this.#opts);
    const started = performance.now();
    this.#executions++;
    const untrack = RELEASE_WRITERS.has(verb) && ctx.release !== undefined && ctx.namespace !== undefined ? this.#live.track(ctx.namespace, ctx.release) : undefined;
    let outcome: HelmExecution['outcome'] = 'error';
    let reason: string | undefined;
    try {
      const result = await execa(this.#opts.binary, args, {
        timeout: ctx.deadlineMs,
        killSignal: 'SIGTERM',
        forceKillAfterDelay: FORCE_KILL_AFTER_MS,
        ...(ctx.signal ? { cancelSignal: ctx.signal } : {}),
        env: this.#env(),
        extendEnv: false,
        maxBuffer: MAX_BUFFER,
        stdin: 'ignore',
        ...(ctx.onLine === undefined ? {} : { stdout: this.#lineObserver(ctx.onLine) }),
        reject: true,
      });
      outcome = 'success';
      return result.stdout;
    } catch (err) {
      const helmErr = toHelmError(verb, err, ctx.deadlineMs, ctx.redact);
      reason = helmErr.reason;
      throw helmErr;
    } finally {
      untrack?.();
      const durationMs = Math.round(performance.now() - started);
      this.#log.debug({ verb, release: ctx.release, namespace: ctx.namespace, durationMs, outcome, reason }, 'helm command finished');
      this.#notify({ verb, outcome, durationMs });
    }
  }

  /** An execa transform that shows each stdout line to `onLine` as it arrives and keeps it in the output. */
  #lineObserver(onLine: (line: string) => void): (line: unknown) => Generator<unknown, void, void> {
    const log = this.#log;
    return function* (line: unknown) {
      try {
        if (typeof line === 'string') onLine(line);
      } catch (err) {
        // A caller's bug must not fail the helm command that is running.
        log.warn({ error: err }, 'helm output observer threw');
      }
      yield line;
    };
  }

  #notify(e: HelmExecution): void {
    try {
      this.#opts.observer?.(e);
    } catch (err) {
      // A metrics bug must not turn a helm success into a failure.
      this.#log.warn({ error: err, verb: e.verb }, 'helm execution observer threw');
    }
  }

  #parse<T>(verb: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof HelmOutputError)) throw err;
      throw new HelmError({ reason: 'Unknown', verb, summary: `unexpected helm output: ${err.message}` });
    }
  }

  #parseRelease(stdout: string, verb: 'install' | 'upgrade'): Release {
    const rel = this.#parse(verb, () => parseReleaseJson(stdout, verb));
    const chart = rel.chart;
    if (chart === undefined) throw new HelmError({ reason: 'Unknown', verb, summary: 'unexpected helm output: no chart metadata' });
    return { ...rel, chart };
  }
}

function throwIfAborted(signal: AbortSignal | undefined, verb: string): void {
  if (signal?.aborted === true) throw new HelmError({ reason: 'Canceled', verb, summary: 'canceled before helm was started', canceled: true });
}

/** The parts of an execa failure we look at, copied out so nothing else of it survives. */
interface ExecFailure {
  readonly stderr: string;
  readonly exitCode?: number;
  readonly timedOut: boolean;
  readonly canceled: boolean;
  readonly code?: string;
  readonly signal?: string;
}

function execFailure(err: ExecaError): ExecFailure {
  const failure: { -readonly [K in keyof ExecFailure]: ExecFailure[K] } = {
    stderr: typeof err.stderr === 'string' ? err.stderr : '',
    timedOut: err.timedOut,
    canceled: err.isCanceled,
  };
  if (typeof err.exitCode === 'number') failure.exitCode = err.exitCode;
  if (typeof err.code === 'string') failure.code = err.code;
  if (typeof err.signal === 'string') failure.signal = err.signal;
  return failure;
}

// `instanceof ExecaError` narrows to `ExecaError<any>`; this guard pins the default options type.
const isExecaError = (err: unknown): err is ExecaError => err instanceof ExecaError;

/**
 * Converts whatever execa threw into a HelmError; never keeps stdout, the full stderr or the
 * command line. `redact` sees helm's text raw: whitespace collapsed or cut to length, a secret
 * would no longer be found whole.
 */
export function toHelmError(verb: string, err: unknown, deadlineMs: number, redact: (text: string) => string = (t) => t): HelmError {
  if (err instanceof HelmError) return err;
  if (!isExecaError(err)) {
    const message = redact(err instanceof Error ? err.message : String(err));
    return new HelmError({ reason: 'Unknown', verb, summary: message.slice(0, SUMMARY_MAX_CHARS) });
  }
  const f = execFailure(err);
  const flags = { timedOut: f.timedOut, canceled: f.canceled, spawnFailed: f.code === 'ENOENT' || f.code === 'EACCES' };
  const reason = classifyHelmError(f.stderr, f.exitCode, flags);
  return new HelmError({
    reason,
    verb,
    summary: summaryOf(f, explainFailure(reason, summarizeStderr(redact(f.stderr))), deadlineMs),
    ...flags,
    ...(f.exitCode !== undefined ? { exitCode: f.exitCode } : {}),
  });
}

/** Our own deadline and the caller's abort are stated first: helm's text then only says "context canceled". */
function summaryOf(f: ExecFailure, text: string, deadlineMs: number): string {
  const withText = (lead: string): string => (text === '' ? lead : `${lead}: ${text}`);
  if (f.canceled) return withText('canceled');
  if (f.timedOut) return withText(`timed out after ${deadlineMs} ms`);
  if (text !== '') return text;
  if (f.code !== undefined) return `cannot run helm: ${f.code}`;
  if (f.signal !== undefined) return `helm was killed by ${f.signal}`;
  return `helm exited with code ${f.exitCode ?? 'unknown'} without an error message`;
}
