/**
 * Assembles the operator: one controller per watch, each reconciling its kind's CRs into helm
 * releases through one shared helm client.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Watch } from '../config/watch.js';
import { restartingChanges } from '../config/watch-restart.js';
import type { HelmClient } from '../helm/index.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CustomResourceClient } from '../k8s/custom-resources.js';
import { HelmApiGateway } from '../k8s/gateway/gateway.js';
import { KubeEventRecorder } from '../k8s/events.js';
import { ObjectClient } from '../k8s/objects.js';
import { RestMapper, type ResourceMapping } from '../k8s/restmapper.js';
import { apiVersionOf, parseApiVersion, qualifiedKind } from '../util/group-kind.js';
import { ReleaseStorageWatch } from './release-storage-watch.js';
import type { ConcurrencyGate } from '../runtime/adaptive-gate.js';
import type { ItemBackoffOptions } from '../runtime/backoff.js';
import { Controller, type StopOptions } from '../runtime/controller.js';
import type { CacheReader, Reconciler } from '../runtime/reconcile.js';
import { RequeueSource, type Wakeups } from '../runtime/requeue-source.js';
import {
  keepForRollout,
  ownerType,
  type DependentsPort,
  type HelmReconciler,
  type ReconcilerMetrics,
  type UpgradePlan,
} from '../reconciler/index.js';
import type { CustomResource } from '../k8s/custom-resources.js';
import { ControllerSet } from '../runtime/controller-set.js';
import type { NamespaceShard } from '../runtime/namespace-shard.js';
import type { LearningShare } from '../runtime/watch-share.js';
import type { Priority } from '../runtime/workqueue.js';
import type { Logger } from '../telemetry/logger.js';
import type { ControllerMetrics } from '../telemetry/metric-hooks.js';
import type { InformerObjects } from '../telemetry/metrics.js';
import { DependentWatcher, type DependentOwner } from './dependents.js';
import { describeHelmError, helmPort } from './helm-adapter.js';
import { releaseReconciler } from './release-reconciler.js';
import { RolloutControl } from './rollout-control.js';
import { PlanApprovals, PlanStore } from './plan-store.js';
import { actingIdentity, identityLabel, ownIdentityWarning, withDefaultServiceAccount } from './identity.js';
import { ValuesSources } from './values-sources.js';

export const FIELD_MANAGER = 'helm-operator';

/** How long stopping waits for queued Events to be written. */
const EVENT_FLUSH_MS = 2_000;

export interface OperatorOptions {
  readonly kubeConfig: KubeConfig;
  readonly helm: HelmClient;
  readonly log: Logger;
  readonly defaultReconcilePeriodMs: number;
  /** `--annotation-reconcile-period-floor`; the reconciler's default when unset. */
  readonly annotationPeriodFloorMs?: number;
  /** Retries of a failed reconcile: the first after `minMs` (default 1 s), doubling up to `maxMs` (default 5 min). */
  readonly retryDelays?: { readonly minMs?: number; readonly maxMs?: number };
  /** How long a helm action runs before the CR shows it as Reconciling; the reconciler's default (2 s) when unset. */
  readonly progressDelayMs?: number;
  readonly maxConcurrentReconciles: number;
  /** The self-tuned gate (concurrency-tuner.ts) of every kind whose watch does not pin maxConcurrentReconciles. */
  readonly concurrencyGate?: ConcurrencyGate;
  /** Reconciles of one namespace at once per kind (`--max-concurrent-reconciles-per-namespace`); default: see `namespaceShare`. */
  readonly maxConcurrentReconcilesPerNamespace?: number;
  /** Empty: every namespace. */
  readonly namespaces: readonly string[];
  readonly suppressOverrideValues?: boolean;
  /** controller-runtime's controller and workqueue metrics hooks. */
  readonly metrics?: ControllerMetrics;
  /** Release-level metrics (states, drift corrections). */
  readonly releaseMetrics?: ReconcilerMetrics;
  /** Counts Events not written (a flood about one CR, or too many queued). */
  readonly eventMetrics?: { eventDropped(controller: string, reason: string): void };
  /**
   * How long a controller stopped by a watches.yaml reload lets its in-flight reconciles (helm
   * operations) finish before cancelling them (`--graceful-shutdown-timeout`); default 30 s.
   */
  readonly gracefulShutdownTimeoutMs?: number;
  /** The key of the fingerprint CR status shows (see fingerprint-key.ts); a random one of this process when unset. */
  readonly fingerprintKey?: Uint8Array;
  /**
   * `--default-service-account`: watches without `serviceAccountName` act as this ServiceAccount
   * of the CR's namespace. Undefined: they act as the operator, and each is warned about at start.
   */
  readonly defaultServiceAccount?: string;
  /** `helm_operator_watch_identity`: who each running watch acts as. */
  readonly identityMetrics?: WatchIdentityMetrics;
  /** Where the rollout switches are (rollout-control.ts); undefined: rollouts cannot be paused. */
  readonly operatorNamespace?: string;
  /** Sharded (docs/adr/0085): the namespaces this replica owns; undefined: all of them. */
  readonly shard?: OperatorShard;
  /**
   * Sharded: the share the dependent and values-source informers hold (docs/adr/0103); the CR
   * informers keep the whole kind, which the rollout gate decides over (docs/adr/0096), and tell
   * the share which namespaces hold CRs (its server-side selector names them; docs/adr/0110).
   */
  readonly watchShare?: LearningShare;
}

/** What the operator needs of sharding: the controllers' view, the share a revision is made under, and the shares taken. */
export interface OperatorShard extends NamespaceShard {
  bucketOf(namespace: string): number;
  ownership(namespace: string): { readonly bucket: number; readonly epoch: number; readonly holder: string } | undefined;
  onGrant(listener: (bucket: number) => void): void;
}

/** The release label naming the share a revision was made under (bucket, fence epoch, replica digest). */
export const SHARD_RELEASE_LABEL = 'helm.sdk.operatorframework.io/shard';

function shardLabels(shard: OperatorShard): (namespace: string) => Readonly<Record<string, string>> {
  return (namespace) => {
    const o = shard.ownership(namespace);
    // Not owned: the fence refuses the run anyway; the label says so if it ever got through.
    return { [SHARD_RELEASE_LABEL]: o === undefined ? 'unowned' : `b${o.bucket}-e${o.epoch}-${o.holder}` };
  };
}

export interface WatchIdentityMetrics {
  /** Labels of a running controller's series; undefined: it stopped. */
  watchIdentity(controller: string, labels?: { readonly kind: string; readonly identity: string }): void;
}

/** operator-sdk names controllers `<lowercase kind>-controller`; the group disambiguates a kind watched twice. */
export function controllerNames(watches: readonly Watch[]): string[] {
  return watches.map((w) => {
    const clash = watches.some((o) => o !== w && o.kind.toLowerCase() === w.kind.toLowerCase());
    return clash ? `${w.kind.toLowerCase()}.${w.group}-controller` : `${w.kind.toLowerCase()}-controller`;
  });
}

export class Operator {
  readonly manager: ControllerSet<Controller>;
  readonly #mapper: RestMapper;
  readonly #storage: ReleaseStorageWatch;
  readonly #objects: ObjectClient;
  readonly #dependents: DependentWatcher;
  readonly #valuesSources: ValuesSources;
  /** Owner type (`apiVersion|Kind` or `Kind.group`) → controller name, for dependents' events. */
  readonly #owners = new Map<string, string>();
  /** Controller name → the watch it runs. */
  readonly #applied = new Map<string, Watch>();
  readonly #recorders = new Map<string, KubeEventRecorder>();
  /** Started with the operator: confined and impersonating watches' helm talks to it (docs/adr/0045). */
  #gateway: { readonly server: HelmApiGateway; readonly dir: string } | undefined;

  constructor(private readonly o: OperatorOptions) {
    this.manager = new ControllerSet<Controller>({ log: o.log });
    // A share just taken: its CRs were dropped while another replica owned it, so queue them again.
    o.shard?.onGrant((bucket) => {
      const shard = o.shard;
      if (shard === undefined) return;
      for (const name of this.manager.names()) this.manager.get(name)?.requeueNamespaces((ns) => shard.bucketOf(ns) === bucket);
    });
    this.#mapper = new RestMapper(o.kubeConfig);
    this.#storage = new ReleaseStorageWatch({
      kubeConfig: o.kubeConfig,
      namespaces: o.namespaces,
      log: o.log,
      ...(o.watchShare === undefined ? {} : { share: o.watchShare }),
    });
    this.#objects = new ObjectClient(o.kubeConfig, this.#mapper);
    this.#valuesSources = new ValuesSources({
      kubeConfig: o.kubeConfig,
      namespaces: o.namespaces,
      log: o.log,
      route: (controller, request) => this.manager.get(controller)?.enqueue(request),
      ...(o.watchShare === undefined ? {} : { share: o.watchShare }),
    });
    this.#dependents = new DependentWatcher({
      kubeConfig: o.kubeConfig,
      mapper: this.#mapper,
      namespaces: o.namespaces,
      log: o.log,
      route: (owner, priority) => {
        this.#route(owner, priority);
      },
      ...(o.watchShare === undefined ? {} : { share: o.watchShare }),
    });
  }

  /** A watch's own maxConcurrentReconciles pins its kind; otherwise the operator's, through the tuned gate if any. */
  #concurrency(watch: Watch): { maxConcurrentReconciles: number; gate?: ConcurrencyGate } {
    if (watch.maxConcurrentReconciles !== undefined) return { maxConcurrentReconciles: watch.maxConcurrentReconciles };
    const gate = this.o.concurrencyGate;
    return { maxConcurrentReconciles: this.o.maxConcurrentReconciles, ...(gate === undefined ? {} : { gate }) };
  }

  async #controller(watch: Watch, name: string): Promise<Controller> {
    const mapping = await this.#mapper.mapping(watch);
    const log = this.o.log;
    // The reconciler's requests for other CRs of the kind (a rollout's next wave, a batch's peers):
    // a source this controller drains while it runs and stops with it (docs/adr/0073).
    const requests = new RequeueSource();
    const reconciler = (cache: CacheReader): Reconciler => this.reconcilerOf(watch, name, { resource: mapping, cache, wakeups: requests });
    return new Controller({
      name,
      kubeConfig: this.o.kubeConfig,
      resource: mapping,
      namespaces: this.o.namespaces,
      ...(watch.labelSelector === '' ? {} : { labelSelector: watch.labelSelector }),
      ...this.#concurrency(watch),
      ...(this.o.maxConcurrentReconcilesPerNamespace === undefined
        ? {}
        : { maxConcurrentReconcilesPerNamespace: this.o.maxConcurrentReconcilesPerNamespace }),
      ...(this.o.gracefulShutdownTimeoutMs === undefined ? {} : { shutdownTimeoutMs: this.o.gracefulShutdownTimeoutMs }),
      reconciler,
      queue: { backoff: retryBackoff(this.o.retryDelays) },
      sources: [requests],
      log,
      ...(this.o.metrics === undefined ? {} : { metrics: this.o.metrics }),
      // Reconciles GET their CR; the cache serves the batched uninstall's metadata and the rollout gate.
      cacheTransform: keepForRollout,
      onObject: this.#onCustomResource(name),
      ...(this.o.shard === undefined ? {} : { shard: this.o.shard }),
    });
  }

  /** What a controller's cache sees of each CR: the values sources it names, and its namespace for the share. */
  #onCustomResource(controller: string): (cr: KubernetesObject, deleted: boolean) => void {
    const index = this.#valuesSources.indexer(controller);
    const share = this.o.watchShare;
    return (cr, deleted) => {
      index(cr, deleted);
      if (!deleted) share?.learn(cr.metadata?.namespace ?? '');
    };
  }

  /**
   * `watch`'s reconciler with every port its controller gives it, on the kind's `resource`, the
   * controller's `cache` and its request source. The middle test tier (test/support/reconciler-harness.ts) runs it without a
   * controller; before {@link startGateway} ran, confined and impersonating watches have no helm.
   */
  reconcilerOf(
    watch: Watch,
    name: string,
    on: { readonly resource: ResourceMapping; readonly cache: CacheReader; readonly wakeups: Wakeups },
  ): HelmReconciler {
    return releaseReconciler({
      watch,
      cache: on.cache,
      wakeups: on.wakeups,
      crs: new CustomResourceClient(this.o.kubeConfig, on.resource, FIELD_MANAGER),
      helm: helmPort(this.o.helm, this.#gateway?.server, this.o.shard === undefined ? undefined : shardLabels(this.o.shard)),
      storage: this.#storage,
      events: this.#recorder(name),
      objects: this.#objects,
      // The workers: pinned, or the tuner's ceiling (its gate decides how many batches run at once).
      uninstallLanes: this.#concurrency(watch).maxConcurrentReconciles,
      valuesSources: this.#valuesSources,
      ...(watch.watchDependentResources ? { dependents: this.#dependents } : {}),
      ...(this.o.releaseMetrics === undefined ? {} : { metrics: this.o.releaseMetrics }),
      controller: name,
      isNamespaced: async (apiVersion, kind) => (await this.#mapper.mapping({ ...parseApiVersion(apiVersion), kind })).namespaced,
      describeHelmError,
      defaultReconcilePeriodMs: this.o.defaultReconcilePeriodMs,
      ...(this.o.annotationPeriodFloorMs === undefined ? {} : { annotationPeriodFloorMs: this.o.annotationPeriodFloorMs }),
      suppressOverrideValues: this.o.suppressOverrideValues === true,
      ...(this.o.progressDelayMs === undefined ? {} : { progressDelayMs: this.o.progressDelayMs }),
      ...(this.o.fingerprintKey === undefined ? {} : { fingerprintKey: this.o.fingerprintKey }),
      ...(this.o.operatorNamespace === undefined
        ? {}
        : { rolloutControl: new RolloutControl(this.o.kubeConfig, this.o.operatorNamespace, watch) }),
      // Plans only where a watch asks for approval: the others never plan (docs/adr/0083).
      ...((watch.approval ?? 'never') === 'never'
        ? {}
        : {
            plans: new PlanStore(
              this.o.kubeConfig,
              this.o.operatorNamespace === undefined ? undefined : new PlanApprovals(this.o.kubeConfig, this.o.operatorNamespace, watch),
            ),
          }),
    });
  }

  /**
   * `plan diff` (docs/plans.md): the plan of `cr` as given, made by the reconciler `watch` runs, with
   * its ports, identity and gateway (start it first: {@link startGateway}); no controller runs, and
   * nothing is written.
   */
  async previewPlan(watch: Watch, cr: CustomResource, signal: AbortSignal): Promise<UpgradePlan> {
    const w = withDefaultServiceAccount(watch, this.o.defaultServiceAccount);
    const resource = await this.#mapper.mapping(w);
    const nothingCached: CacheReader = { get: () => undefined, list: () => [] };
    const name = controllerNames([w])[0] ?? w.kind;
    const { namespace = '', name: crName } = cr.metadata;
    // A CR already there keeps its UID: the objects' ownerReferences then match what is live.
    const live = await new CustomResourceClient(this.o.kubeConfig, resource, FIELD_MANAGER).get(namespace, crName);
    const planned = structuredClone(cr);
    if (live?.metadata.uid !== undefined) planned.metadata.uid = live.metadata.uid;
    return this.reconcilerOf(w, name, { resource, cache: nothingCached, wakeups: new RequeueSource() }).preview(planned, {
      signal,
      log: this.o.log,
    });
  }

  /**
   * Makes the running controllers match `watches`: kinds no longer listed are stopped, new kinds
   * are started, and a kind whose entry changed (chart content included) is restarted, which
   * re-lists and so re-reconciles every CR of it. Unchanged kinds keep running untouched.
   */
  async apply(listed: readonly Watch[]): Promise<{ added: string[]; removed: string[]; restarted: string[] }> {
    const names = controllerNames(listed);
    const watches = listed.map((w) => withDefaultServiceAccount(w, this.o.defaultServiceAccount));
    const wanted = new Map(watches.map((w, i) => [names[i] ?? w.kind, w]));
    const removed = this.manager.names().filter((n) => !wanted.has(n));
    const changed = [...wanted].filter(([n, w]) => needsRestart(this.#applied.get(n), w)).map(([n]) => n);
    const added = [...wanted.keys()].filter((n) => !this.#applied.has(n));
    for (const name of [...removed, ...changed]) {
      await this.manager.remove(name);
      this.o.releaseMetrics?.forgetController(name);
      this.o.identityMetrics?.watchIdentity(name);
      this.#applied.delete(name);
      for (const [type, controller] of this.#owners) if (controller === name) this.#owners.delete(type);
    }
    for (const name of [...changed, ...added]) {
      const watch = wanted.get(name);
      if (watch === undefined) continue;
      await this.manager.add(await this.#controller(watch, name));
      this.#applied.set(name, watch);
      this.#reportIdentity(name, watch);
      if (watch.watchDependentResources) {
        this.#owners.set(`${apiVersionOf(watch)}|${watch.kind}`, name);
        this.#owners.set(ownerType(watch), name);
      }
    }
    return { added, removed, restarted: changed };
  }

  async start(watches: readonly Watch[]): Promise<void> {
    await this.startGateway();
    await this.manager.start();
    await this.apply(watches);
  }

  /** The helm API gateway confined and impersonating watches' helm talks to (docs/adr/0045); {@link stop} closes it. */
  async startGateway(): Promise<void> {
    const dir = await mkdtemp(path.join(tmpdir(), 'helm-gateway-'));
    const server = await HelmApiGateway.start({
      kubeConfig: this.o.kubeConfig,
      scopes: (group, version, resource) => this.#mapper.scope(group, version, resource),
      dir,
      log: this.o.log,
    });
    this.#gateway = { server, dir };
  }

  /** Stops the controllers (see {@link StopOptions}: a graceful shutdown or lost leadership), then the rest. */
  async stop(how?: StopOptions): Promise<void> {
    await this.manager.stop(how);
    const gateway = this.#gateway;
    this.#gateway = undefined;
    if (gateway !== undefined) {
      await gateway.server.close();
      await rm(gateway.dir, { recursive: true, force: true });
    }
    await this.#dependents.stop();
    await this.#valuesSources.stop();
    await this.#storage.stop();
    // Events are written in the background: the last reconciles' ones still go out, within bounds.
    await Promise.all([...this.#recorders.values()].map((r) => r.flush(EVENT_FLUSH_MS)));
  }

  /**
   * Says who a started watch acts as: a metric always, a warning when it is the operator itself.
   * `watch` is the one its reconciler got (the default ServiceAccount already in it), so this
   * reports what runs, not what was configured.
   */
  #reportIdentity(controller: string, watch: Watch): void {
    const kind = qualifiedKind(watch.kind, watch.group);
    this.o.identityMetrics?.watchIdentity(controller, { kind, identity: identityLabel(actingIdentity(watch, undefined)) });
    const warning = ownIdentityWarning(watch, undefined);
    if (warning !== undefined) this.o.log.warn({ controller, kind, identity: 'operator' }, warning);
  }

  /** One event recorder per controller name (a restarted controller keeps its aggregation). */
  #recorder(controller: string): KubeEventRecorder {
    let recorder = this.#recorders.get(controller);
    if (recorder === undefined) {
      recorder = new KubeEventRecorder(this.o.kubeConfig, controller, this.o.log, {
        onDropped: (reason) => this.o.eventMetrics?.eventDropped(controller, reason),
      });
      this.#recorders.set(controller, recorder);
    }
    return recorder;
  }

  /**
   * The dependents' cache every reconciler reads live objects from. The middle test tier waits
   * until it holds what the API server does before a reconcile, as a controller is woken by its event.
   */
  get dependents(): DependentsPort {
    return this.#dependents;
  }

  /** helm's release storage as the reconcilers read it; the middle test tier waits for its watch too. */
  get releaseStorage(): ReleaseStorageWatch {
    return this.#storage;
  }

  /** What every informer cache holds now, by cache and kind (helm_operator_informer_objects). */
  cachedObjects(): InformerObjects[] {
    return [
      ...this.manager.names().map((name) => ({
        cache: 'cr' as const,
        kind: this.manager.get(name)?.kind ?? name,
        objects: this.manager.get(name)?.cachedObjects() ?? 0,
      })),
      ...this.#dependents.cachedObjects().map((c) => ({ cache: 'dependent' as const, ...c })),
      ...this.#valuesSources.cachedObjects().map((c) => ({ cache: 'values-source' as const, ...c })),
      { cache: 'release', kind: 'Secret', objects: this.#storage.cachedObjects() },
    ];
  }

  /** Informers watching dependents (one per kind and watched namespace). */
  dependentInformers(): number {
    return this.#dependents.informerCount();
  }

  /** A dependent changed: reconcile the CR that owns it. */
  #route(owner: DependentOwner, priority: Priority): void {
    const key = owner.apiVersion === undefined ? owner.type : `${owner.apiVersion}|${owner.type}`;
    const name = this.#owners.get(key);
    if (name === undefined) return;
    this.manager.get(name)?.enqueue({ namespace: owner.namespace, name: owner.name }, { priority });
  }

  hasSynced(): boolean {
    return this.manager.hasSynced();
  }

  /** The CRs of every watched kind in each namespace, as the caches hold them: what the shard balancer weighs (docs/adr/0113). */
  crsByNamespace(): Map<string, number> {
    const by = new Map<string, number>();
    for (const name of this.manager.names()) {
      for (const cr of this.manager.get(name)?.cache.list() ?? []) {
        const ns = cr.metadata?.namespace ?? '';
        by.set(ns, (by.get(ns) ?? 0) + 1);
      }
    }
    return by;
  }

  /** Queues a reconcile of every CR of every kind from what the API server holds (Controller.resync); how many. */
  resyncAll(): number {
    return this.manager.names().reduce((queued, name) => queued + (this.manager.get(name)?.resync() ?? 0), 0);
  }
}

/** The work queue's backoff from the retry delays; what is unset keeps the queue's default. */
function retryBackoff(delays: OperatorOptions['retryDelays']): ItemBackoffOptions {
  return {
    ...(delays?.minMs === undefined ? {} : { baseMs: delays.minMs }),
    ...(delays?.maxMs === undefined ? {} : { capMs: delays.maxMs }),
  };
}

/** Whether a running controller (none: `undefined`) must be restarted to run `next` (config/watch-restart.ts). */
const needsRestart = (running: Watch | undefined, next: Watch): boolean =>
  running !== undefined && restartingChanges(running, next).length > 0;
