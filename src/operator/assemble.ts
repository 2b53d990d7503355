/**
 * Builds the whole operator process from its settings: the watches, helm (after the version probe
 * and the clean-up of a killed predecessor's processes and files), the metrics with the live
 * queues, the leader elector, the fingerprint key, the {@link Operator}, and the {@link Manager}
 * that runs them. `helm-operator run` and the integration tests both build through here, so the
 * tests run the production wiring.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { ConfigReloader, watchConfigFiles, type ConfigWatcher } from '../config/reload.js';
import type { Watch } from '../config/watch.js';
import { loadWatches } from '../config/watches.js';
import { HelmClient, type LeaseFence } from '../helm/index.js';
import { loadKubeConfig } from '../k8s/kubeconfig.js';
import { observeApiRequests } from '../k8s/raw-client.js';
import { ConcurrencyTuner, tunerBounds } from '../runtime/concurrency-tuner.js';
import { cpuLimit } from '../runtime/cpu-limit.js';
import { LeaderElector } from '../runtime/leader.js';
import { KubeLeaseLock } from '../runtime/lease-lock.js';
import { ShardCoordinator } from '../runtime/shard-coordinator.js';
import { KubeShardLeaseStore } from '../runtime/shard-lease-store.js';
import { Manager, type ConfigWatch, type ListenAddress, type ManagerOptions } from '../runtime/manager.js';
import { defaultIdentity, LeaderElectionConfigError, leaderElectionNamespace } from '../runtime/pod-identity.js';
import type { Logger } from '../telemetry/logger.js';
import { ApiScrapeReviewer } from '../k8s/scrape-review.js';
import { metricsHandler, OperatorMetrics } from '../telemetry/metrics.js';
import { ScrapeAuthorizer, withScrapeAuth } from '../telemetry/scrape-auth.js';
import { listenHttps, type MetricsSecurity } from '../telemetry/secure-serving.js';
import { ShardMetrics } from '../telemetry/shard-metrics.js';
import { namespaceBucket } from '../runtime/shard-assignment.js';
import { leaseProbeList, probeShardFilter } from '../runtime/shard-probe.js';
import { DEFAULT_REBALANCE_PERIOD_MS } from '../runtime/shard-balance.js';
import { BucketShare } from '../runtime/watch-share.js';
import { loadFingerprintKey } from './fingerprint-key.js';
import { Operator } from './operator.js';

export interface LeaderElectionSettings {
  /** Lease name. */
  readonly id: string;
  /** Undefined: the pod's namespace in a cluster, an error outside one. */
  readonly namespace?: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** This replica's identity; default hostname_uuid, new per start (tests pin it to place namespaces). */
  readonly identity?: string;
}

/** What `run`'s flags decide (cli/flags.ts `RunOptions` is one); optional ones take the operator's defaults. */
export interface OperatorSettings {
  readonly watchesFile: string;
  /** Reload watches.yaml and its charts on change. */
  readonly watchConfig?: boolean;
  /** Undefined: the default kubeconfig (KUBECONFIG, ~/.kube/config, in-cluster). */
  readonly kubeconfig?: string;
  readonly helmBinary: string;
  readonly helmTimeoutMs?: number;
  /** A failed reconcile's first retry (`--min-retry-delay`), doubled per consecutive failure up to `maxRetryDelayMs`; default 1 s. */
  readonly minRetryDelayMs?: number;
  /** The longest wait between retries (`--max-retry-delay`); default 5 min. */
  readonly maxRetryDelayMs?: number;
  /** How long a helm action runs before the CR shows it as Reconciling (`--progress-delay`); default 2 s. */
  readonly progressDelayMs?: number;
  readonly reconcilePeriodMs: number;
  readonly annotationReconcilePeriodFloorMs?: number;
  readonly maxConcurrentReconciles: number;
  /** `--max-concurrent-reconciles` not given: the reconciles in flight tune themselves (ADR 0059); default false. */
  readonly selfTuningConcurrency?: boolean;
  readonly maxConcurrentReconcilesPerNamespace?: number;
  /** Empty: every namespace. */
  readonly namespaces: readonly string[];
  readonly suppressOverrideValues?: boolean;
  readonly gracefulShutdownTimeoutMs?: number;
  readonly defaultServiceAccount?: string;
  /** Undefined: no leader election. */
  readonly leaderElection?: LeaderElectionSettings;
  /**
   * The operator's own namespace (`--leader-election-namespace`, given with or without leader
   * election); undefined: leader election's namespace, else the pod's, else none (out of a cluster).
   */
  readonly operatorNamespace?: string;
  /** With leader election: replicas share the namespaces instead of one leading (docs/adr/0085); default false. */
  readonly sharding?: boolean;
  /** With sharding: how often the shares may be balanced by the CRs they hold; 0 never (docs/adr/0113). Default 30 s. */
  readonly shardRebalancePeriodMs?: number;
  /** Undefined: no metrics server. */
  readonly metricsBindAddress?: ListenAddress;
  /** `--metrics-secure` and its companions (ADR 0079); undefined: plain HTTP. */
  readonly metricsSecurity?: MetricsSecurity;
  /** CRs with per-CR series (ADR 0080); 0: none; undefined: the default. */
  readonly metricsCrLimit?: number;
  /** Undefined: no health probe server. */
  readonly healthProbeBindAddress?: ListenAddress;
  /** The fingerprint key (tests); undefined: the one of the operator's namespace (fingerprint-key.ts). */
  readonly fingerprintKey?: Uint8Array;
}

export interface AssemblyContext {
  readonly log: Logger;
  /** The operator's version, for the log and the build-info metric. */
  readonly version: string;
  /** Node's process metrics in the registry; default true. */
  readonly processMetrics?: boolean;
}

export interface AssembledOperator {
  readonly manager: Manager;
  readonly operator: Operator;
  readonly helm: HelmClient;
  readonly metrics: OperatorMetrics;
  readonly watches: readonly Watch[];
}

/**
 * @throws {WatchesError} for an unreadable or invalid watches file (before anything else runs).
 * @throws {LeaderElectionConfigError} with leader election, outside a cluster, without a namespace.
 */
export async function assembleOperator(settings: OperatorSettings, context: AssemblyContext): Promise<AssembledOperator> {
  const { log } = context;
  // The file is read first, so a broken one fails before any I/O; the reloader hands later edits
  // to the operator built below (an edit can only be seen once the manager has started it).
  const reloader =
    settings.watchConfig === true
      ? new ConfigReloader({
          file: settings.watchesFile,
          log: log.child({ component: 'config-reload' }),
          apply: (watches) => operator.apply(watches),
        })
      : undefined;
  const watches = reloader === undefined ? await loadWatches(settings.watchesFile) : await reloader.initial();
  const kubeConfig = loadKubeConfig(settings.kubeconfig);
  const metrics = operatorMetrics(settings, context);
  const tuner = settings.selfTuningConcurrency === true ? await selfTuning(metrics, log) : undefined;
  const le = settings.leaderElection;
  // The CRs per namespace the shard balancer measures: the operator's caches, once it exists and they have synced.
  const census: { read?: () => ReadonlyMap<string, number> | undefined } = {};
  const { elector, shards, fence, share } = await membership(settings, { kubeConfig, metrics, log, load: () => census.read?.() });
  const { helm, helmVersion } = await startHelm(settings, { metrics, log, tuner, fence });
  const ownNamespace = await operatorNamespace(settings.operatorNamespace ?? le?.namespace);
  const fingerprintKey = settings.fingerprintKey ?? (await loadFingerprintKey(kubeConfig, ownNamespace, log));
  logStart(log, {
    version: context.version,
    watches: watches.length,
    helmVersion,
    settings,
    elector: shards ?? elector,
    leaderElectionId: le?.id,
  });
  const operator = new Operator({
    kubeConfig,
    helm,
    log,
    defaultReconcilePeriodMs: settings.reconcilePeriodMs,
    annotationPeriodFloorMs: settings.annotationReconcilePeriodFloorMs,
    retryDelays: { minMs: settings.minRetryDelayMs, maxMs: settings.maxRetryDelayMs },
    progressDelayMs: settings.progressDelayMs,
    ...concurrency(settings, tuner),
    maxConcurrentReconcilesPerNamespace: settings.maxConcurrentReconcilesPerNamespace,
    namespaces: settings.namespaces,
    suppressOverrideValues: settings.suppressOverrideValues,
    metrics,
    releaseMetrics: metrics,
    eventMetrics: metrics,
    gracefulShutdownTimeoutMs: settings.gracefulShutdownTimeoutMs,
    defaultServiceAccount: settings.defaultServiceAccount,
    identityMetrics: metrics,
    fingerprintKey,
    ...(ownNamespace === undefined ? {} : { operatorNamespace: ownNamespace }),
    ...shardOptions(shards, share),
  });
  census.read = () => (operator.hasSynced() ? operator.crsByNamespace() : undefined);
  metrics.trackQueues(() => operator.manager.names().map((n) => [n, operator.manager.get(n)?.queue] as const));
  metrics.trackInformers(() => operator.cachedObjects());
  const manager = managerOf(operator, watches, { settings, elector: shards ?? elector, reloader, metrics, log, tuner, kubeConfig, share });
  return { manager, operator, helm, metrics, watches };
}

function operatorMetrics(settings: OperatorSettings, context: AssemblyContext): OperatorMetrics {
  return new OperatorMetrics({
    version: context.version,
    ...(context.processMetrics === undefined ? {} : { processMetrics: context.processMetrics }),
    ...(settings.metricsCrLimit === undefined ? {} : { crLimit: settings.metricsCrLimit }),
  });
}

function logStart(
  log: Logger,
  o: {
    version: string;
    watches: number;
    helmVersion: string;
    settings: OperatorSettings;
    elector: { identity: string } | undefined;
    leaderElectionId: string | undefined;
  },
): void {
  const { settings, elector } = o;
  log.info(
    {
      version: o.version,
      watches: o.watches,
      helm: o.helmVersion,
      namespaces: settings.namespaces.length === 0 ? 'all' : settings.namespaces,
      ...(settings.defaultServiceAccount === undefined ? {} : { defaultServiceAccount: settings.defaultServiceAccount }),
      ...(elector === undefined ? {} : { leaderElectionId: o.leaderElectionId, identity: elector.identity }),
    },
    'Starting helm-operator',
  );
}

/** helm, once its version answered and a killed predecessor's processes and files are gone. */
async function startHelm(
  settings: OperatorSettings,
  parts: { metrics: OperatorMetrics; log: Logger; tuner: ConcurrencyTuner | undefined; fence: LeaseFence | undefined },
): Promise<{ helm: HelmClient; helmVersion: string }> {
  const { metrics, log, tuner, fence } = parts;
  const helm = new HelmClient({
    ...(fence === undefined ? {} : { fence }),
    binary: settings.helmBinary,
    log: log.child({ component: 'helm' }),
    observer:
      tuner === undefined
        ? metrics.helmExecution
        : (e) => {
            metrics.helmExecution(e);
            tuner.observeHelm(e);
          },
    ...(settings.helmTimeoutMs === undefined ? {} : { defaultTimeoutMs: settings.helmTimeoutMs }),
    ...(settings.kubeconfig === undefined ? {} : { kubeconfig: settings.kubeconfig }),
  });
  const { semver } = await helm.version();
  // Before anything reconciles: a killed predecessor's helm must not change a release beside ours.
  await helm.stopOrphans();
  const stale = await helm.removeStaleValuesDirs();
  if (stale.length > 0) log.warn({ removed: stale }, 'Removed helm values directories left behind by operator processes that were killed');
  return { helm, helmVersion: semver };
}

/** Self-tuned, the workers are the ceiling and the tuner's gate the number in flight. */
function concurrency(
  settings: OperatorSettings,
  tuner: ConcurrencyTuner | undefined,
): { maxConcurrentReconciles: number; concurrencyGate?: ConcurrencyTuner['gate'] } {
  if (tuner === undefined) return { maxConcurrentReconciles: settings.maxConcurrentReconciles };
  return { maxConcurrentReconciles: tuner.bounds.max, concurrencyGate: tuner.gate };
}

/** The tuner of `--max-concurrent-reconciles` left unset: from the cgroup's CPU limit, into the metric and the log. */
async function selfTuning(metrics: OperatorMetrics, log: Logger): Promise<ConcurrencyTuner> {
  const cpus = await cpuLimit();
  const bounds = tunerBounds(cpus.cpus);
  const tlog = log.child({ component: 'concurrency' });
  const tuner = new ConcurrencyTuner({
    bounds,
    onChange: (limit, reason) => {
      metrics.concurrencyLimit(limit);
      tlog.debug({ limit, reason }, 'Concurrency limit changed');
    },
  });
  metrics.concurrencyLimit(bounds.initial);
  tlog.info(
    { cpus: cpus.cpus, cpuSource: cpus.source, ...bounds },
    'Reconciles in flight tune themselves (--max-concurrent-reconciles pins them)',
  );
  return tuner;
}

function managerOf(
  operator: Operator,
  watches: readonly Watch[],
  parts: {
    settings: OperatorSettings;
    elector: LeaderElector | ShardCoordinator | undefined;
    reloader: ConfigReloader | undefined;
    metrics: OperatorMetrics;
    log: Logger;
    tuner: ConcurrencyTuner | undefined;
    kubeConfig: KubeConfig;
    share: ShareWatch | undefined;
  },
): Manager {
  const { settings, elector, reloader, metrics, log, tuner, kubeConfig, share } = parts;
  const le = settings.leaderElection;
  return new Manager({
    log,
    work: {
      start: async () => {
        // Sharded: the peer Lease is written by now, and no informer has started yet.
        await share?.probe();
        if (tuner !== undefined) {
          observeApiRequests((status, ms) => {
            tuner.observeApi(status, ms);
          });
          tuner.start();
        }
        await operator.start(watches);
      },
      stop: async (how) => {
        await operator.stop(how);
        tuner?.stop();
        if (tuner !== undefined) observeApiRequests(undefined);
      },
      hasSynced: () => operator.hasSynced(),
      resyncAll: () => operator.resyncAll(),
    },
    elector,
    // Twice the time the old leader may still believe it leads (see Manager's settleAfterTakeover).
    // Sharded, shares change hands one by one and each is queued again when taken (operator.ts).
    settleAfterTakeoverMs:
      le === undefined || elector instanceof ShardCoordinator ? undefined : 2 * (le.leaseDurationMs + le.renewDeadlineMs),
    gracefulShutdownTimeoutMs: settings.gracefulShutdownTimeoutMs,
    configWatch: reloader === undefined ? undefined : configWatch(reloader, settings.watchesFile, log),
    metricsServer:
      settings.metricsBindAddress === undefined
        ? undefined
        : metricsServer(settings.metricsBindAddress, settings.metricsSecurity, { metrics, log, kubeConfig }),
    healthProbeBindAddress: settings.healthProbeBindAddress,
  });
}

/** Plain HTTP, or HTTPS with each scrape reviewed when `--metrics-require-rbac` asks (ADR 0079). */
function metricsServer(
  bind: ListenAddress,
  security: MetricsSecurity | undefined,
  on: { metrics: OperatorMetrics; log: Logger; kubeConfig: KubeConfig },
): NonNullable<ManagerOptions['metricsServer']> {
  const log = on.log.child({ component: 'metrics' });
  const handler = metricsHandler(on.metrics, log);
  if (security === undefined) return { bind, handler };
  const authorizer = security.requireRbac ? new ScrapeAuthorizer({ reviewer: new ApiScrapeReviewer(on.kubeConfig), log }) : undefined;
  return {
    bind,
    handler: authorizer === undefined ? handler : withScrapeAuth(handler, authorizer, log),
    listen: (b: ListenAddress, h: Parameters<typeof listenHttps>[1]) =>
      listenHttps(b, h, { http2: security.http2, log, ...(security.certFiles === undefined ? {} : { certFiles: security.certFiles }) }),
  };
}

function makeElector(
  le: LeaderElectionSettings,
  on: { namespace: string; kubeConfig: KubeConfig; metrics: OperatorMetrics; log: Logger },
): LeaderElector {
  const { namespace, kubeConfig, metrics, log } = on;
  metrics.leaderStatus(le.id, false);
  return new LeaderElector({
    lock: new KubeLeaseLock(kubeConfig, namespace, le.id),
    identity: le.identity ?? defaultIdentity(),
    leaseDurationMs: le.leaseDurationMs,
    renewDeadlineMs: le.renewDeadlineMs,
    retryPeriodMs: le.retryPeriodMs,
    log: log.child({ component: 'leader-election' }),
    onLeadershipChange: (leading) => {
      metrics.leaderStatus(le.id, leading);
    },
  });
}

/**
 * Leader election, sharding (`--sharding`), or neither, and the fence helm asks before each run: with
 * leader election, only a replica whose lease is still valid by its own clock changes a release;
 * sharded, only while it also holds the share of the release's namespace.
 */
async function membership(
  settings: OperatorSettings,
  on: { kubeConfig: KubeConfig; metrics: OperatorMetrics; log: Logger; load: () => ReadonlyMap<string, number> | undefined },
): Promise<{ elector?: LeaderElector; shards?: ShardCoordinator; fence?: LeaseFence; share?: ShareWatch }> {
  const le = settings.leaderElection;
  if (le === undefined) return {};
  const namespace = await leaderElectionNamespace(le.namespace);
  if (settings.sharding === true) {
    const metrics = new ShardMetrics(on.metrics.registry);
    const share = new BucketShare({ bucketOf: (ns) => namespaceBucket(ns) });
    const rebalancePeriodMs = settings.shardRebalancePeriodMs ?? DEFAULT_REBALANCE_PERIOD_MS;
    const shards = makeShards(le, {
      namespace,
      kubeConfig: on.kubeConfig,
      log: on.log,
      metrics,
      share,
      ...(rebalancePeriodMs === 0 ? {} : { load: on.load, rebalancePeriodMs }),
    });
    const probe = async (): Promise<void> => {
      const verdict = await probeShardFilter(leaseProbeList(on.kubeConfig, namespace), namespace);
      share.setMode(verdict.mode);
      metrics.watchFilter(verdict.mode);
      on.log.info({ mode: verdict.mode, reason: verdict.reason }, "Informers watch this replica's share (docs/adr/0103)");
    };
    return { shards, fence: shardFence(shards), share: { share, probe } };
  }
  const elector = makeElector(le, { namespace, kubeConfig: on.kubeConfig, metrics: on.metrics, log: on.log });
  return { elector, fence: { holds: () => elector.holdsLease(), check: () => elector.isLeader() } };
}

/** Sharded: the coordinator the controllers and helm ask, and the share the informers watch. */
function shardOptions(
  shards: ShardCoordinator | undefined,
  share: ShareWatch | undefined,
): { shard?: ShardCoordinator; watchShare?: BucketShare } {
  return { ...(shards === undefined ? {} : { shard: shards }), ...(share === undefined ? {} : { watchShare: share.share }) };
}

/** The share sharded informers watch, and the one-time probe that decides where it is filtered. */
interface ShareWatch {
  readonly share: BucketShare;
  /** Once the peer Lease is written (the probe lists it), before the first informer starts. */
  readonly probe: () => Promise<void>;
}

/** `--sharding`: this replica's membership of the group named by the leader election id (docs/adr/0085). */
function makeShards(
  le: LeaderElectionSettings,
  on: {
    namespace: string;
    kubeConfig: KubeConfig;
    log: Logger;
    metrics: ShardMetrics;
    share: BucketShare;
    /** Without it, the shares are balanced by bucket count only (docs/adr/0113). */
    load?: () => ReadonlyMap<string, number> | undefined;
    rebalancePeriodMs?: number;
  },
): ShardCoordinator {
  return new ShardCoordinator({
    store: new KubeShardLeaseStore(on.kubeConfig, on.namespace, le.id),
    identity: le.identity ?? defaultIdentity(),
    group: le.id,
    leaseDurationMs: le.leaseDurationMs,
    renewDeadlineMs: le.renewDeadlineMs,
    retryPeriodMs: le.retryPeriodMs,
    log: on.log.child({ component: 'shards' }),
    onShares: (owned) => {
      on.metrics.owned(owned.length);
      on.share.set(owned);
    },
    onHandoff: (kind) => {
      on.metrics.handoff(kind);
    },
    ...(on.load === undefined
      ? {}
      : {
          load: on.load,
          rebalancePeriodMs: on.rebalancePeriodMs,
          onRebalance: () => {
            on.metrics.rebalanced();
          },
        }),
  });
}

/** Sharded, a helm run needs the peer Lease (by the clock) and, for a release, the share of its namespace. */
function shardFence(shards: ShardCoordinator): LeaseFence {
  return {
    holds: (namespace) => (namespace === undefined ? shards.holdsLease() : shards.owns(namespace)),
    check: (namespace) => (namespace === undefined ? shards.isLeader() : shards.checkOwns(namespace)),
  };
}

/** The operator's own namespace, where the fingerprint key and the approvals are: undefined out of a cluster without the flag. */
async function operatorNamespace(flag: string | undefined): Promise<string | undefined> {
  try {
    return await leaderElectionNamespace(flag);
  } catch (err) {
    if (err instanceof LeaderElectionConfigError) return undefined;
    throw err;
  }
}

/** `--watch-config`: the reloader fed by file-system events while the controllers run. */
function configWatch(reloader: ConfigReloader, file: string, log: Logger): ConfigWatch {
  let watcher: ConfigWatcher | undefined;
  return {
    start: () => {
      watcher = watchConfigFiles(reloader, file, log.child({ component: 'config-reload' }));
      // Said once edits are seen, so whoever waits for this line can edit right after it.
      void watcher.ready.then(() => {
        log.info({ file, charts: reloader.chartPaths }, 'Watching the watches file and charts for changes');
      });
    },
    stop: async () => {
      const stopping = watcher;
      watcher = undefined;
      reloader.close();
      await stopping?.close();
      await reloader.idle();
    },
  };
}
