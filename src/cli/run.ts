/**
 * `helm-operator run`: load the watches, serve metrics and health probes, win the leader election
 * (when enabled), start the controllers, and stop cleanly.
 *
 * Lifecycle:
 * 1. Servers first, so probes answer while the rest starts (`/readyz` fails until the caches sync).
 * 2. With `--leader-elect`, wait for the Lease. A standby is *ready*: readiness gates a rolling
 *    update, and a new pod that can never become ready while the old one holds the lease would
 *    deadlock it (see docs/adr/0004).
 * 3. Start the controllers; with `--watch-config` also watch watches.yaml and the charts.
 * 4. SIGTERM/SIGINT: stop watching, stop taking keys, let in-flight reconciles (helm operations)
 *    finish for up to `--graceful-shutdown-timeout` before cancelling them, release the Lease, close
 *    the servers, exit 0. A second signal exits 1 at once.
 * 5. Lost leadership: cancel in-flight reconciles at once, exit 1 (controller-runtime does the same):
 *    another replica may already be acting.
 */
import { loadWatches, WatchesError, type Watch } from '../config/watches.js';
import { ConfigReloader, watchConfigFiles, type ConfigWatcher } from '../config/reload.js';
import { HelmClient } from '../helm/index.js';
import { loadKubeConfig } from '../k8s/kubeconfig.js';
import { loadFingerprintKey } from '../operator/fingerprint-key.js';
import { Operator } from '../operator/operator.js';
import type { StopOptions } from '../runtime/controller.js';
import { LeaderElector } from '../runtime/leader.js';
import { KubeLeaseLock } from '../runtime/lease-lock.js';
import { defaultIdentity, LeaderElectionConfigError, leaderElectionNamespace } from '../runtime/pod-identity.js';
import { healthHandler, listenHttp, ping, type Checker, type HttpListener } from '../telemetry/health.js';
import { makeLogger, prettyDestination, type Logger } from '../telemetry/logger.js';
import { metricsHandler, OperatorMetrics } from '../telemetry/metrics.js';
import type { BindAddress, RunOptions } from './flags.js';
import { VERSION } from './version.js';

/** Exits the process with a message a person can act on, instead of a stack trace. */
export class StartupError extends Error {
  override readonly name: string = 'StartupError';
}

/** Leadership was lost: the process must exit non-zero (another replica may be reconciling). */
export class LeadershipLostError extends StartupError {
  override readonly name = 'LeadershipLostError';
}

/** After lost leadership, how long cancelled helm processes get to record their state. */
const LOST_LEADERSHIP_ABORT_GRACE_MS = 3_000;

const formatBind = (b: BindAddress): string => `${b.host ?? ''}:${b.port}`;

async function loadInitialWatches(options: RunOptions, reloader: ConfigReloader | undefined): Promise<Watch[]> {
  try {
    return reloader === undefined ? await loadWatches(options.watchesFile) : await reloader.initial();
  } catch (err) {
    if (err instanceof WatchesError) throw new StartupError(err.message);
    throw err;
  }
}

/** Resolves with the signal's name on the first SIGTERM/SIGINT; a second one exits 1 at once. */
function onStopSignal(log: Logger): { stopped: Promise<string>; dispose: () => void } {
  let resolve!: (signal: string) => void;
  const stopped = new Promise<string>((r) => (resolve = r));
  let count = 0;
  const handler = (signal: NodeJS.Signals): void => {
    count++;
    if (count === 1) {
      log.info({ signal }, 'Stopping: finishing in-flight reconciles');
      resolve(signal);
      return;
    }
    log.warn({ signal }, 'Second signal: exiting without waiting');
    process.exit(1);
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return {
    stopped,
    dispose: () => {
      process.off('SIGTERM', handler);
      process.off('SIGINT', handler);
    },
  };
}

interface Servers {
  readonly metrics?: HttpListener;
  readonly health?: HttpListener;
}

async function startServers(options: RunOptions, metrics: OperatorMetrics, readyz: Map<string, Checker>, log: Logger): Promise<Servers> {
  const servers: { metrics?: HttpListener; health?: HttpListener } = {};
  try {
    if (options.metricsBindAddress !== undefined) {
      servers.metrics = await listenHttp(options.metricsBindAddress, metricsHandler(metrics, log));
      log.info({ bindAddress: formatBind(options.metricsBindAddress), address: servers.metrics.address }, 'Serving metrics server');
    }
    if (options.healthProbeBindAddress !== undefined) {
      const handler = healthHandler({ healthz: new Map([['ping', ping]]), readyz }, log);
      servers.health = await listenHttp(options.healthProbeBindAddress, handler);
      log.info({ bindAddress: formatBind(options.healthProbeBindAddress), address: servers.health.address }, 'Serving health probe server');
    }
  } catch (err) {
    await closeServers(servers);
    throw new StartupError(`cannot listen: ${(err as Error).message}`);
  }
  return servers;
}

async function closeServers(servers: Servers): Promise<void> {
  await Promise.all([servers.metrics?.close(), servers.health?.close()]);
}

async function makeElector(options: RunOptions, operatorParts: { kubeConfig: ReturnType<typeof loadKubeConfig>; metrics: OperatorMetrics; log: Logger }): Promise<LeaderElector | undefined> {
  const le = options.leaderElection;
  if (le === undefined) return undefined;
  let namespace: string;
  try {
    namespace = await leaderElectionNamespace(le.namespace);
  } catch (err) {
    if (err instanceof LeaderElectionConfigError) throw new StartupError(err.message);
    throw err;
  }
  const { kubeConfig, metrics, log } = operatorParts;
  metrics.leaderStatus(le.id, false);
  return new LeaderElector({
    lock: new KubeLeaseLock(kubeConfig, namespace, le.id),
    identity: defaultIdentity(),
    leaseDurationMs: le.leaseDurationMs,
    renewDeadlineMs: le.renewDeadlineMs,
    retryPeriodMs: le.retryPeriodMs,
    log: log.child({ component: 'leader-election' }),
    onLeadershipChange: (leading) => {
      metrics.leaderStatus(le.id, leading);
    },
  });
}

/** The operator's own namespace, where the leader election's Lease is: undefined out of a cluster without one. */
async function operatorNamespace(options: RunOptions): Promise<string | undefined> {
  try {
    return await leaderElectionNamespace(options.leaderElection?.namespace);
  } catch (err) {
    if (err instanceof LeaderElectionConfigError) return undefined;
    throw err;
  }
}

/** Stops every controller: gracefully within `timeoutMs` (shutdown), or cancelling at once (lost leadership). */
async function stopOperator(operator: Operator, how: StopOptions): Promise<void> {
  const controllers = operator.manager.names().map((n) => operator.manager.get(n));
  await Promise.all(controllers.filter((c) => c !== undefined).map((c) => c.stop(how)));
  await operator.stop();
}

const never = new Promise<never>(() => undefined);

/** Everything built before the servers start. */
interface Parts {
  readonly log: Logger;
  readonly watches: readonly Watch[];
  readonly operator: Operator;
  readonly metrics: OperatorMetrics;
  readonly elector: LeaderElector | undefined;
  readonly reloader: ConfigReloader | undefined;
}

async function assemble(options: RunOptions, log: Logger): Promise<Parts> {
  const holder: { operator?: Operator } = {};
  const reloader = options.watchConfig
    ? new ConfigReloader({
        file: options.watchesFile,
        log: log.child({ component: 'config-reload' }),
        apply: (watches) => {
          if (holder.operator === undefined) return Promise.reject(new Error('the operator is not running'));
          return holder.operator.apply(watches);
        },
      })
    : undefined;
  const watches = await loadInitialWatches(options, reloader);
  const kubeConfig = loadKubeConfig(options.kubeconfig);
  const metrics = new OperatorMetrics({ version: VERSION });
  const helm = new HelmClient({
    binary: options.helmBinary,
    log: log.child({ component: 'helm' }),
    observer: metrics.helmExecution,
    defaultTimeoutMs: options.helmTimeoutMs,
    ...(options.kubeconfig === undefined ? {} : { kubeconfig: options.kubeconfig }),
  });
  const version = await helm.version();
  // Before anything reconciles: a killed predecessor's helm must not change a release beside ours.
  await helm.stopOrphans();
  const stale = await helm.removeStaleValuesDirs();
  if (stale.length > 0) log.warn({ removed: stale }, 'Removed helm values directories left behind by operator processes that were killed');
  const elector = await makeElector(options, { kubeConfig, metrics, log });
  const fingerprintKey = await loadFingerprintKey(kubeConfig, await operatorNamespace(options), log);
  log.info(
    {
      version: VERSION,
      watches: watches.length,
      helm: version.semver,
      namespaces: options.namespaces.length === 0 ? 'all' : options.namespaces,
      ...(options.defaultServiceAccount === undefined ? {} : { defaultServiceAccount: options.defaultServiceAccount }),
      ...(elector === undefined ? {} : { leaderElectionId: options.leaderElection?.id, identity: elector.identity }),
    },
    'Starting helm-operator',
  );
  const operator = new Operator({
    kubeConfig,
    helm,
    log,
    defaultReconcilePeriodMs: options.reconcilePeriodMs,
    annotationPeriodFloorMs: options.annotationReconcilePeriodFloorMs,
    maxConcurrentReconciles: options.maxConcurrentReconciles,
    ...(options.maxConcurrentReconcilesPerNamespace === undefined ? {} : { maxConcurrentReconcilesPerNamespace: options.maxConcurrentReconcilesPerNamespace }),
    namespaces: options.namespaces,
    suppressOverrideValues: options.suppressOverrideValues,
    metrics,
    releaseMetrics: metrics,
    gracefulShutdownTimeoutMs: options.gracefulShutdownTimeoutMs,
    ...(options.defaultServiceAccount === undefined ? {} : { defaultServiceAccount: options.defaultServiceAccount }),
    identityMetrics: metrics,
    fingerprintKey,
  });
  holder.operator = operator;
  metrics.trackQueues(() => operator.manager.names().map((n) => [n, operator.manager.get(n)?.queue] as const));
  return { log, watches, operator, metrics, elector, reloader };
}

/** Runs the operator until a stop signal (returns) or lost leadership (throws). */
class Lifecycle {
  #started = false;
  #watcher: ConfigWatcher | undefined;
  #settle: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: RunOptions,
    private readonly parts: Parts,
    private readonly stopped: Promise<string>,
    private readonly shutdown: AbortSignal,
  ) {}

  /** `/readyz`: caches synced; a standby (not leading, not started) is ready too. */
  readonly ready: Checker = () => {
    const { elector, operator } = this.parts;
    if (!this.#started && elector !== undefined && !elector.isLeader()) return;
    if (!this.#started || !operator.hasSynced()) throw new Error('informer caches have not synced');
  };

  async run(): Promise<void> {
    const { elector, operator, log } = this.parts;
    try {
      if (elector !== undefined && !(await elector.acquire(this.shutdown))) {
        log.info('Stopped before becoming the leader');
        return;
      }
      await this.#runLeading();
    } finally {
      await this.#stopWatching();
      if (!this.#started) await operator.stop().catch(() => undefined);
      await elector?.release();
    }
  }

  async #runLeading(): Promise<void> {
    const { elector, operator, watches, log } = this.parts;
    const starting = operator.start(watches).then(() => {
      this.#started = true;
      log.info('All controllers started and synced');
      this.#startWatching();
      this.#settleAfterTakeover();
    });
    const lost = elector?.lost ?? never;
    const event = await Promise.race([starting.then(() => never), this.stopped.then(() => 'stop' as const), lost.then(() => 'lost' as const)]);
    await this.#stopWatching();
    if (event === 'lost') {
      // Another replica may be reconciling already: cancel at once instead of finishing.
      await stopOperator(operator, { timeoutMs: 0, abortGraceMs: LOST_LEADERSHIP_ABORT_GRACE_MS, leadershipLost: true });
      await starting.catch(() => undefined);
      throw new LeadershipLostError((await lost).message);
    }
    await stopOperator(operator, { timeoutMs: this.options.gracefulShutdownTimeoutMs });
    await starting.catch((err: unknown) => {
      log.debug({ error: err }, 'start interrupted by shutdown');
    });
  }

  /**
   * A previous leader's helm can still write a release's storage after this replica took the Lease:
   * a frozen process tree that thaws (a VM stall, a cgroup freeze) runs on until its operator
   * notices it lost the Lease, and nothing fences helm's storage (docs/chaos.md). Once the old
   * leader can no longer believe it leads, twice over, every CR is reconciled once more, so such a
   * late write is repaired then, not at the next reconcile period.
   */
  #settleAfterTakeover(): void {
    const le = this.options.leaderElection;
    if (le === undefined || this.parts.elector === undefined) return;
    const delayMs = 2 * (le.leaseDurationMs + le.renewDeadlineMs);
    this.#settle = setTimeout(() => {
      const queued = this.parts.operator.resyncAll();
      this.parts.log.info({ queued, afterMs: delayMs }, 'Reconciling every CR once more after taking over leadership');
    }, delayMs);
    this.#settle.unref();
  }

  #startWatching(): void {
    const { reloader, log } = this.parts;
    if (reloader === undefined || this.shutdown.aborted) return;
    const watcher = watchConfigFiles(reloader, this.options.watchesFile, log.child({ component: 'config-reload' }));
    this.#watcher = watcher;
    // Said once edits are seen, so whoever waits for this line can edit right after it.
    void watcher.ready.then(() => {
      log.info({ file: this.options.watchesFile, charts: reloader.chartPaths }, 'Watching the watches file and charts for changes');
    });
  }

  async #stopWatching(): Promise<void> {
    clearTimeout(this.#settle);
    this.#settle = undefined;
    const watcher = this.#watcher;
    this.#watcher = undefined;
    this.parts.reloader?.close();
    await watcher?.close();
    await this.parts.reloader?.idle();
  }
}

export async function run(options: RunOptions): Promise<void> {
  const log = makeLogger({ level: options.logLevel, ...(options.logPretty ? { destination: await prettyDestination() } : {}) });
  const signals = onStopSignal(log);
  const shutdown = new AbortController();
  void signals.stopped.then(() => {
    shutdown.abort();
  });
  try {
    const parts = await assemble(options, log);
    const lifecycle = new Lifecycle(options, parts, signals.stopped, shutdown.signal);
    const readyz = new Map<string, Checker>([
      ['ping', ping],
      ['informers', lifecycle.ready],
    ]);
    const servers = await startServers(options, parts.metrics, readyz, log);
    try {
      await lifecycle.run();
    } finally {
      await closeServers(servers);
    }
  } finally {
    signals.dispose();
  }
  log.info('Stopped');
}
