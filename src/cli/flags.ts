/**
 * `helm-operator run` flags: operator-sdk's names and defaults, parsed into typed options. A flag
 * operator-sdk has that we do not implement is refused by name instead of silently ignored.
 */
import os from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import { formatDuration, parseDuration } from '../config/duration.js';
import { DEFAULT_REBALANCE_PERIOD_MS } from '../runtime/shard-balance.js';
import { isServiceAccountName, periodFloorProblem } from '../config/watches-schema.js';
import { BindAddressError, parseBindAddress } from '../telemetry/health.js';
import { DEFAULT_CR_LIMIT } from '../telemetry/metrics.js';
import type { MetricsSecurity } from '../telemetry/secure-serving.js';

/** A parsed listen address; undefined host = every interface. */
export interface BindAddress {
  readonly host: string | undefined;
  readonly port: number;
}

export interface LeaderElectionOptions {
  /** Lease name. */
  readonly id: string;
  /** Undefined: the pod's namespace in a cluster, an error outside one. */
  readonly namespace?: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

export interface RunOptions {
  readonly watchesFile: string;
  readonly reconcilePeriodMs: number;
  /** The shortest `reconcile-period` a CR's annotation may ask for (a shorter one is raised, with a warning). */
  readonly annotationReconcilePeriodFloorMs: number;
  readonly maxConcurrentReconciles: number;
  /** The flag was not given: the number of reconciles in flight tunes itself (ADR 0059), up from the CPU limit. */
  readonly selfTuningConcurrency: boolean;
  /** Undefined: all workers but one when several namespaces are watched (ADR 0041). */
  readonly maxConcurrentReconcilesPerNamespace?: number;
  /** helm's `--timeout` for every install, upgrade, rollback and uninstall (hooks and waits included). */
  readonly helmTimeoutMs: number;
  /** A failed reconcile's first retry; each consecutive failure doubles it, up to {@link maxRetryDelayMs}. */
  readonly minRetryDelayMs: number;
  readonly maxRetryDelayMs: number;
  /** How long a helm action runs before the CR shows it as Reconciling; 0: at once. */
  readonly progressDelayMs: number;
  readonly suppressOverrideValues: boolean;
  readonly helmBinary: string;
  readonly kubeconfig?: string;
  readonly logLevel: string;
  readonly logPretty: boolean;
  /** From WATCH_NAMESPACE: empty means every namespace. */
  readonly namespaces: readonly string[];
  /** Undefined: metrics disabled (`0`). */
  readonly metricsBindAddress?: BindAddress;
  /** `--metrics-secure` and its companions (ADR 0079); undefined: plain HTTP. */
  readonly metricsSecurity?: MetricsSecurity;
  /** `--metrics-cr-limit`: CRs with per-CR series (ADR 0080); 0: none. */
  readonly metricsCrLimit: number;
  /** Undefined: health probes disabled (`0`). */
  readonly healthProbeBindAddress?: BindAddress;
  /** Undefined: no leader election. */
  readonly leaderElection?: LeaderElectionOptions;
  /**
   * The operator's own namespace (its fingerprint and seal key Secret, platform approvals, the
   * rollout switch): `--leader-election-namespace` whenever given, with or without
   * `--leader-elect`. Undefined: the pod's namespace in a cluster, none outside one.
   */
  readonly operatorNamespace?: string;
  /** `--sharding`: with leader election, replicas share the namespaces instead of one leading (docs/adr/0085). */
  readonly sharding: boolean;
  /** `--shard-rebalance-period`: how often the shares may be balanced again by the CRs they hold; 0: by bucket count only (docs/adr/0113). */
  readonly shardRebalancePeriodMs: number;
  /** How long in-flight reconciles may run after SIGTERM/SIGINT before they are cancelled. */
  readonly gracefulShutdownTimeoutMs: number;
  /** Reload watches.yaml and its charts on change (development). */
  readonly watchConfig: boolean;
  /**
   * Lock-down (Flux's `--default-service-account`): a watch without its own `serviceAccountName`
   * runs as this ServiceAccount of the CR's namespace. Undefined: such watches run as the operator.
   */
  readonly defaultServiceAccount?: string;
}

/** operator-sdk helm-operator flags that this version does not implement. */
export const NOT_YET_IMPLEMENTED = ['zap-stacktrace-level', 'zap-time-encoding'] as const;

export const positiveInt =
  (flag: string) =>
  (raw: string): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${flag} must be a whole number of at least 1, got "${raw}"`);
    return n;
  };

const nonNegativeInt =
  (flag: string) =>
  (raw: string): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${flag} must be a whole number of at least 0, got "${raw}"`);
    return n;
  };

export const duration = (raw: string): number => {
  try {
    return parseDuration(raw);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
};

/** A period flag: a duration of 0 (off, when `zero` allows it) or at least the floor (config/watches-schema.ts). */
const period =
  (flag: string, zero = true) =>
  (raw: string): number => {
    const ms = duration(raw);
    const problem = periodFloorProblem(ms, zero);
    if (problem !== undefined) throw new InvalidArgumentError(`${flag} ${raw} is ${problem}`);
    return ms;
  };

/** Go's strconv.ParseBool, as pflag accepts for `--flag=value`. */
export function parseBool(raw: string | boolean): boolean {
  if (typeof raw === 'boolean') return raw;
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(raw)) return false;
  throw new InvalidArgumentError(`expected true or false, got "${raw}"`);
}

export function parseNamespaces(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
}

function bindAddress(flag: string, raw: string): BindAddress | undefined {
  try {
    return parseBindAddress(flag, raw);
  } catch (err) {
    if (err instanceof BindAddressError) throw new InvalidArgumentError(err.message);
    throw err;
  }
}

/** A boolean flag that is also accepted as `--flag=true|false`, like Go's pflag. */
export const boolOption = (flags: string, description: string): Option => new Option(`${flags} [bool]`, description).argParser(parseBool);

/** The `run` command's flag definitions; `action` receives the parsed options. */
export function defineRunCommand(action: (options: RunOptions) => Promise<void>): Command {
  const cmd: Command = new Command('run')
    .description('Run the operator: reconcile every CR of the kinds in the watches file into a helm release')
    .option('--watches-file <path>', 'path to the watches file', './watches.yaml')
    .option(
      '--reconcile-period <duration>',
      'default periodic requeue of every CR (Go duration; 0 turns it off, else at least 1s)',
      period('--reconcile-period'),
      60_000,
    )
    .option(
      '--annotation-reconcile-period-floor <duration>',
      "the shortest reconcile-period a CR's annotation may ask for (at least 1s); a shorter one is raised to it with a warning event, or to the watch's own period when that is shorter",
      period('--annotation-reconcile-period-floor', false),
      30_000,
    )
    .option(
      '--max-concurrent-reconciles <n>',
      'maximum number of concurrent reconciles per kind; unset, the number tunes itself, starting from the CPU limit',
      positiveInt('--max-concurrent-reconciles'),
      os.availableParallelism(),
    )
    .option(
      '--max-concurrent-reconciles-per-namespace <n>',
      "most reconciles of one namespace at once per kind, so one tenant's hanging installs cannot hold every worker (default: all workers but one when several namespaces are watched)",
      positiveInt('--max-concurrent-reconciles-per-namespace'),
    )
    .option(
      '--helm-timeout <duration>',
      "helm's --timeout for each install, upgrade, rollback and uninstall: how long hooks and waits may take before the release fails",
      duration,
      300_000,
    )
    .option(
      '--min-retry-delay <duration>',
      'how long a failed reconcile waits before its first retry; each consecutive failure doubles the wait (at least 10ms)',
      duration,
      1_000,
    )
    .option(
      '--max-retry-delay <duration>',
      'the longest wait between retries of a failing reconcile (at least --min-retry-delay, at most 24h)',
      duration,
      300_000,
    )
    .option(
      '--progress-delay <duration>',
      'how long a helm action runs before the CR shows it as Reconciling=True/Progressing; 0 shows every action (at most 24h)',
      duration,
      2_000,
    )
    .option('--suppress-override-values', 'show overridden values as **** in OverrideValuesInUse events', false)
    .option('--helm-binary <path>', 'the helm executable (v3.13+ or v4)', process.env.HELM_BIN ?? 'helm')
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)')
    .option('--metrics-bind-address <address>', 'address the Prometheus /metrics endpoint binds to; 0 disables it', ':8080')
    .addOption(new Option('--metrics-addr <address>', 'deprecated: use --metrics-bind-address').hideHelp())
    .addOption(boolOption('--metrics-secure', 'serve /metrics over HTTPS (a self-signed certificate unless --metrics-cert-path is given)'))
    .addOption(
      boolOption(
        '--metrics-require-rbac',
        "check each scrape's bearer token (TokenReview) and its right to get /metrics (SubjectAccessReview); needs --metrics-secure",
      ),
    )
    .option(
      '--metrics-cert-path <dir>',
      'directory of the metrics serving certificate, e.g. a mounted cert-manager Secret (default: a self-signed one)',
    )
    .option('--metrics-cert-name <file>', 'certificate file in --metrics-cert-path', 'tls.crt')
    .option('--metrics-cert-key <file>', 'key file in --metrics-cert-path', 'tls.key')
    .addOption(boolOption('--enable-http2', 'serve metrics over HTTP/2 too (off: HTTP/2 Rapid Reset and Stream Cancellation advisories)'))
    .option(
      '--metrics-cr-limit <n>',
      'CRs that get per-CR series (helm_operator_cr_*; at most 7 series each); the rest are counted in helm_operator_cr_series_dropped; 0 turns per-CR series off',
      nonNegativeInt('--metrics-cr-limit'),
      DEFAULT_CR_LIMIT,
    )
    .option('--health-probe-bind-address <address>', 'address the /healthz and /readyz endpoints bind to; 0 disables them', ':8081')
    .addOption(boolOption('--leader-elect', 'enable leader election (a coordination.k8s.io Lease), so only one replica reconciles'))
    .addOption(boolOption('--enable-leader-election', 'deprecated: use --leader-elect').hideHelp())
    .option('--leader-election-id <name>', 'name of the leader election Lease (default: $OPERATOR_NAME)')
    .option(
      '--leader-election-namespace <namespace>',
      "the operator's own namespace: the Lease's, the fingerprint key's and the platform's plan approvals' (default: the pod's namespace; required outside a cluster); counts without --leader-elect too",
    )
    .option('--leader-election-lease-duration <duration>', 'how long a non-renewed lease stays valid', duration, 15_000)
    .option('--leader-election-renew-deadline <duration>', 'how long the leader retries renewing before it gives up', duration, 10_000)
    .option('--leader-election-retry-period <duration>', 'interval between leader election attempts', duration, 2_000)
    .addOption(
      boolOption(
        '--sharding',
        'with --leader-elect: every replica reconciles a share of the namespaces (peer and fence Leases named after --leader-election-id) instead of one leading',
      ),
    )
    .option(
      '--shard-rebalance-period <duration>',
      'with --sharding: how often the shares may be balanced again by the CRs each holds (buckets move only when the busiest share gets at least 5% lighter); 0: balance by bucket count only',
      rebalancePeriod,
      DEFAULT_REBALANCE_PERIOD_MS,
    )
    .option(
      '--graceful-shutdown-timeout <duration>',
      'on SIGTERM/SIGINT, or a kind restarted by a watches.yaml reload, how long in-flight reconciles (helm operations) may finish before they are cancelled',
      duration,
      30_000,
    )
    .addOption(boolOption('--watch-config', 'reload the watches file and its charts when they change (development)'))
    .option(
      '--default-service-account <name>',
      "lock-down: a watch without serviceAccountName runs helm and the operator's writes as this ServiceAccount of the CR's namespace (default: $DEFAULT_SERVICE_ACCOUNT; unset: as the operator)",
    )
    .addOption(new Option('--zap-log-level <level>', 'log level').choices(['debug', 'info', 'warn', 'error']).default('info'))
    .addOption(new Option('--zap-encoder <encoder>', 'log format').choices(['json', 'console']).default('json'))
    .option('--zap-devel', 'development logging: human-readable, debug level', false)
    .option('--log-format <format>', 'log format: json or text (text = --zap-encoder console)');
  for (const flag of NOT_YET_IMPLEMENTED) cmd.addOption(new Option(`--${flag} [value]`).hideHelp());
  cmd.action(async (raw: Record<string, unknown>) => {
    const unsupported = NOT_YET_IMPLEMENTED.filter((f) => raw[camel(f)] !== undefined);
    if (unsupported.length > 0) {
      cmd.error(`error: ${unsupported.map((f) => `--${f}`).join(', ')} is not implemented in this version of helm-operator`, {
        exitCode: 2,
      });
    }
    let options: RunOptions;
    try {
      options = toRunOptions(raw, (flag) => cmd.getOptionValueSource(camel(flag)) === 'cli', process.env);
    } catch (err) {
      if (!(err instanceof InvalidArgumentError)) throw err;
      cmd.error(`error: ${err.message}`, { exitCode: 2 });
    }
    await action(options);
  });
  return cmd;
}

const camel = (flag: string): string => flag.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

/**
 * Turns commander's raw values into {@link RunOptions}. `given(flag)` says whether the flag was on
 * the command line (aliases and OPERATOR_NAME depend on it).
 *
 * @throws {InvalidArgumentError} on conflicting or invalid values.
 */
export function toRunOptions(raw: Record<string, unknown>, given: (flag: string) => boolean, env: NodeJS.ProcessEnv): RunOptions {
  const devel = raw.zapDevel === true;
  const format = raw.logFormat as string | undefined;
  if (format !== undefined && format !== 'json' && format !== 'text') {
    throw new InvalidArgumentError(`--log-format must be json or text, got "${format}"`);
  }
  if (given('metrics-addr') && given('metrics-bind-address')) {
    throw new InvalidArgumentError('--metrics-addr and --metrics-bind-address are aliases: set only --metrics-bind-address');
  }
  const metrics = given('metrics-addr') ? (raw.metricsAddr as string) : (raw.metricsBindAddress as string);
  const kubeconfig = raw.kubeconfig as string | undefined;
  const leaderElection = leaderElectionOptions(raw, given, env);
  return {
    watchesFile: raw.watchesFile as string,
    reconcilePeriodMs: raw.reconcilePeriod as number,
    annotationReconcilePeriodFloorMs: raw.annotationReconcilePeriodFloor as number,
    maxConcurrentReconciles: raw.maxConcurrentReconciles as number,
    selfTuningConcurrency: !given('max-concurrent-reconciles'),
    ...optional('maxConcurrentReconcilesPerNamespace', raw.maxConcurrentReconcilesPerNamespace as number | undefined),
    helmTimeoutMs: helmTimeout(raw.helmTimeout as number),
    ...retryDelays(raw.minRetryDelay as number, raw.maxRetryDelay as number),
    progressDelayMs: atMostADay('--progress-delay', raw.progressDelay as number),
    suppressOverrideValues: raw.suppressOverrideValues === true,
    helmBinary: raw.helmBinary as string,
    ...(kubeconfig === undefined ? {} : { kubeconfig }),
    logLevel: devel && raw.zapLogLevel === 'info' ? 'debug' : (raw.zapLogLevel as string),
    logPretty: devel || raw.zapEncoder === 'console' || format === 'text',
    namespaces: parseNamespaces(env.WATCH_NAMESPACE),
    ...optional('metricsBindAddress', bindAddress('--metrics-bind-address', metrics)),
    ...optional('metricsSecurity', metricsSecurity(raw)),
    metricsCrLimit: raw.metricsCrLimit as number,
    ...optional('healthProbeBindAddress', bindAddress('--health-probe-bind-address', raw.healthProbeBindAddress as string)),
    ...optional('leaderElection', leaderElection),
    ...optional('operatorNamespace', nonEmpty(raw.leaderElectionNamespace)),
    sharding: sharding(raw, leaderElection),
    shardRebalancePeriodMs: raw.shardRebalancePeriod as number,
    gracefulShutdownTimeoutMs: raw.gracefulShutdownTimeout as number,
    watchConfig: raw.watchConfig === true,
    ...optional('defaultServiceAccount', defaultServiceAccount(raw.defaultServiceAccount as string | undefined, env)),
  };
}

/** `--metrics-secure` and its companions; tokens are never accepted over plain HTTP. */
function metricsSecurity(raw: Record<string, unknown>): MetricsSecurity | undefined {
  const requireRbac = raw.metricsRequireRbac === true;
  const certDir = raw.metricsCertPath as string | undefined;
  if (raw.metricsSecure !== true) {
    if (requireRbac)
      throw new InvalidArgumentError('--metrics-require-rbac needs --metrics-secure: a bearer token must not be sent over plain HTTP');
    if (certDir !== undefined) throw new InvalidArgumentError('--metrics-cert-path needs --metrics-secure');
    if (raw.enableHttp2 === true)
      throw new InvalidArgumentError('--enable-http2 needs --metrics-secure (plain HTTP is served as HTTP/1.1)');
    return undefined;
  }
  return {
    http2: raw.enableHttp2 === true,
    requireRbac,
    ...(certDir === undefined || certDir === ''
      ? {}
      : { certFiles: { dir: certDir, certName: raw.metricsCertName as string, keyName: raw.metricsCertKey as string } }),
  };
}

/** helm's --timeout takes whole Go durations; under a second every hook or wait would fail at once. */
function helmTimeout(ms: number): number {
  if (ms < 1_000) throw new InvalidArgumentError(`--helm-timeout must be at least 1s, got ${ms}ms`);
  return ms;
}

/** Under {@link MIN_RETRY_DELAY_MS} a failing release would be retried, helm process and all, in a busy loop. */
export const MIN_RETRY_DELAY_MS = 10;

/**
 * The longest retry or progress delay. Node runs a timer of more than about 24.8 days after 1 ms,
 * which would turn the longest wait into a busy loop; a day is far past any useful one.
 */
export const MAX_DELAY_MS = 24 * 3_600_000;

/** `--min-retry-delay` and `--max-retry-delay`: the retry backoff's first and longest wait. */
function retryDelays(minMs: number, maxMs: number): { minRetryDelayMs: number; maxRetryDelayMs: number } {
  if (minMs < MIN_RETRY_DELAY_MS) {
    throw new InvalidArgumentError(
      `--min-retry-delay must be at least ${formatDuration(MIN_RETRY_DELAY_MS)}, got ${formatDuration(minMs)}: a failing release would be retried in a busy loop`,
    );
  }
  if (maxMs < minMs)
    throw new InvalidArgumentError(`--max-retry-delay ${formatDuration(maxMs)} is shorter than --min-retry-delay ${formatDuration(minMs)}`);
  return { minRetryDelayMs: minMs, maxRetryDelayMs: atMostADay('--max-retry-delay', maxMs) };
}

function atMostADay(flag: string, ms: number): number {
  if (ms > MAX_DELAY_MS)
    throw new InvalidArgumentError(`${flag} must be at most ${formatDuration(MAX_DELAY_MS)}, got ${formatDuration(ms)}`);
  return ms;
}

/** `--default-service-account` (or DEFAULT_SERVICE_ACCOUNT): a ServiceAccount name; empty means unset. */
function defaultServiceAccount(flag: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const raw = flag ?? env.DEFAULT_SERVICE_ACCOUNT;
  if (raw === undefined || raw === '') return undefined;
  if (!isServiceAccountName(raw)) {
    throw new InvalidArgumentError(
      `--default-service-account "${raw}" is not a ServiceAccount name: lower-case letters, digits, '-' and '.'`,
    );
  }
  return raw;
}

const optional = <K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> =>
  (value === undefined ? {} : { [key]: value }) as Partial<Record<K, V>>;

/** A string flag's value; an empty one (`--flag=`) counts as not given. */
const nonEmpty = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** 0 (off) or at least a second: the balancer measures every CR of every kind each time. */
function rebalancePeriod(raw: string): number {
  const ms = duration(raw);
  if (ms !== 0 && ms < 1_000) throw new InvalidArgumentError(`--shard-rebalance-period must be 0 (off) or at least 1s, got ${raw}`);
  return ms;
}

/** `--sharding` takes its Leases' name, namespace and timings from leader election, so it needs it on. */
function sharding(raw: Record<string, unknown>, leaderElection: LeaderElectionOptions | undefined): boolean {
  if (raw.sharding !== true) return false;
  if (leaderElection === undefined) {
    throw new InvalidArgumentError(
      '--sharding needs --leader-elect: its Leases take --leader-election-id, --leader-election-namespace and the lease timings',
    );
  }
  return true;
}

function leaderElectionOptions(
  raw: Record<string, unknown>,
  given: (flag: string) => boolean,
  env: NodeJS.ProcessEnv,
): LeaderElectionOptions | undefined {
  const enabled = raw.leaderElect === true || raw.enableLeaderElection === true;
  if (!enabled) return undefined;
  // Deprecated OPERATOR_NAME fills the id only when the flag is not given (operator-sdk's rule).
  const id = given('leader-election-id') ? (raw.leaderElectionId as string) : (env.OPERATOR_NAME ?? '');
  if (id === '') {
    throw new InvalidArgumentError('--leader-election-id is required with --leader-elect (the name of the Lease; or set OPERATOR_NAME)');
  }
  const leaseDurationMs = raw.leaderElectionLeaseDuration as number;
  const renewDeadlineMs = raw.leaderElectionRenewDeadline as number;
  const retryPeriodMs = raw.leaderElectionRetryPeriod as number;
  if (leaseDurationMs % 1_000 !== 0 || leaseDurationMs < 1_000) {
    throw new InvalidArgumentError('--leader-election-lease-duration must be a whole number of seconds');
  }
  if (!(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > 1.2 * retryPeriodMs)) {
    throw new InvalidArgumentError('leader election needs lease duration > renew deadline > 1.2 × retry period (defaults 15s, 10s, 2s)');
  }
  return { id, ...optional('namespace', nonEmpty(raw.leaderElectionNamespace)), leaseDurationMs, renewDeadlineMs, retryPeriodMs };
}
