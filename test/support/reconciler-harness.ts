/**
 * The middle tier (docs/adr/0077): each watch's reconciler as the operator builds it, with its real
 * ports (the Kubernetes client on the test control plane, the real helm binary, the helm API
 * gateway, the Event recorder, the dependents' informers) and a real informer cache of its kind,
 * but without a controller, work queue, manager, leader election or operator process. A test calls
 * {@link ReconcilerHarness.reconcileUntilSettled} where the operator would wait for a watch event
 * and a worker, so a decision is tested in the few reconciles it takes, not in the time the whole
 * operator takes to get there.
 */
import { CoreV1Api, CustomObjectsApi, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import type { Watch } from '../../src/config/watch.js';
import type { HelmClient } from '../../src/helm/index.js';
import { isStatus } from '../../src/k8s/errors.js';
import { RestMapper } from '../../src/k8s/restmapper.js';
import { controllerNames, type Operator } from '../../src/operator/operator.js';
import { withDefaultServiceAccount } from '../../src/operator/identity.js';
import type { InventoryEntry } from '../../src/reconciler/objects/inventory.js';
import { CHART_LABEL } from '../../src/reconciler/objects/ownership.js';
import { keepForRollout } from '../../src/reconciler/rollout/rollout-members.js';
import { isMeaningfulUpdate } from '../../src/runtime/controller.js';
import { Informer, objectSummary } from '../../src/runtime/informer.js';
import { TerminalError, type CacheReader, type Reconciler, type Request, type Result } from '../../src/runtime/reconcile.js';
import { RequeueSource } from '../../src/runtime/requeue-source.js';
import { makeLogger } from '../../src/telemetry/logger.js';
import { createNamespace, testKubeConfig, waitFor } from './kube.js';
import { assembleForTest, type CR, type StartOptions, type TestKind } from './operator.js';

/** `run`'s settings a harness takes (leader election and self-tuning belong to the process). */
export type HarnessOptions = Omit<
  StartOptions,
  | 'leaderElection'
  | 'selfTuningConcurrency'
  | 'maxConcurrentReconciles'
  | 'maxConcurrentReconcilesPerNamespace'
  | 'gracefulShutdownTimeoutMs'
> & {
  /**
   * The namespaces the cases own (at least one): the caches and the dependents' informers watch
   * these only, not the releases of the files running beside them. A file whose cases share one
   * harness creates a namespace per case first ({@link caseNamespaces}).
   */
  readonly namespaces: readonly string[];
};

/** How a run of reconciles ended. */
export interface Settled {
  /** The last reconcile's result; undefined when it threw. */
  readonly result?: Result;
  /** The last reconcile's error: a {@link TerminalError}, or a retryable one when `maxReconciles` ran out. */
  readonly error?: Error;
  /** Reconciles run. */
  readonly reconciles: number;
  /** The CR as the API server holds it afterwards; undefined once it is gone. */
  readonly cr: CR | undefined;
}

export interface SettleOptions {
  /**
   * A result asking again within this many ms is work under way (the reconciler's own polls: helm
   * still exiting 1 s, an uninstall waiting 2 s): the harness waits it out on the real clock and
   * reconciles again. A longer one, or none, is the CR's resync: settled. Default 5 s.
   */
  readonly pollBelowMs?: number;
  /** Reconciles before it gives up and fails with the last status. Default 30. */
  readonly maxReconciles?: number;
  /**
   * Stop at the first error, retryable or not: what the CR shows after one failed attempt, before
   * the work queue's backoff brings the next (a retry budget is spent one attempt at a time).
   */
  readonly stopAtError?: boolean;
}

/** A state of the CR that {@link ReconcilerHarness.reconcileUntil} reconciles towards. */
export interface Want {
  /** What it is, for the failure's message. */
  readonly what: string;
  readonly accept: (cr: CR | undefined) => boolean;
}

/** The CR's Ready condition True: its release's objects are all ready. */
export const READY: Want = { what: 'Ready', accept: (cr) => cr?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' };

export interface ReconcilerHarness {
  /** The helm client the reconcilers run (the process's, after its version probe). */
  readonly helm: HelmClient;
  /**
   * Reconciles `namespace/name` of `kind` (the first watch's when omitted) once, when the cache
   * holds the CR as the API server does: what one worker does with one key.
   */
  reconcile(key: string, kind?: TestKind): Promise<Settled>;
  /**
   * Reconciles until a result asks for nothing sooner than the resync ({@link SettleOptions}) or
   * a {@link TerminalError} says retrying cannot help, and no watch event is due: neither the CR
   * (a meaningful update, as the controller filters them) nor an object of its release changed
   * since the reconcile began. A retryable error is retried at once (the work queue's backoff is
   * the controller's, not the decision's). Fails, with the CR's last conditions, when it does not
   * settle within `maxReconciles`.
   */
  reconcileUntilSettled(key: string, kind?: TestKind, options?: SettleOptions): Promise<Settled>;
  /**
   * Settles (as {@link reconcileUntilSettled}), and while `want` does not hold for the CR, waits
   * for the next change of an object of its release since the last reconcile began (the watch
   * event that would wake the controller: a Deployment's rollout, a pod that never schedules) and
   * settles again. For what a release reaches only as the cluster moves on (Ready, Ready=False with
   * the steady message). Fails when `want` does not hold within `options.rounds` (default 20) settles.
   */
  reconcileUntil(key: string, want: Want, kind?: TestKind, options?: SettleOptions & { readonly rounds?: number }): Promise<Settled>;
  /** The dependents' informers the operator runs: one per kind of object its releases hold, not per CR. */
  dependentInformers(): number;
  /** The keys the reconcilers asked to have reconciled (a batch's peers, a rollout's next wave), oldest first. */
  readonly requested: readonly Request[];
  stop(): Promise<void>;
}

/** One reconcile: its result or error, the CR after it, and whether its own write brings a watch event. */
interface Outcome {
  readonly result?: Result;
  readonly error?: Error;
  readonly cr: CR | undefined;
  readonly eventDue: boolean;
  /** The release's objects' resourceVersions the reconcile started from (a later change is an event). */
  readonly seen: ReadonlyMap<string, string | undefined>;
}

interface Kind {
  readonly watch: Watch;
  readonly plural: string;
  readonly reconciler: Reconciler;
  /** The cache of the kind in `namespace`, started (and synced) at its first use. */
  cacheOf(namespace: string): Promise<Informer>;
  readonly caches: ReadonlyMap<string, Promise<Informer>>;
}

/**
 * Builds the operator from `options` as `helm-operator run` does (operator/assemble.ts), starts
 * only its helm API gateway, and takes each watch's reconciler from it (Operator.reconcilerOf), on
 * an informer cache of the case's namespaces. Nothing reconciles until the test asks.
 */
export async function startReconcilers(options: HarnessOptions): Promise<ReconcilerHarness> {
  if (options.namespaces.length === 0) {
    // The operator reads no namespaces as all of them: its dependents' informers would list and
    // watch every chart-labelled object of every file running beside this one.
    throw new Error("startReconcilers: name the cases' namespaces (caseNamespaces or withReconcilers); none would watch every namespace");
  }
  const kc = testKubeConfig();
  const custom = kc.makeApiClient(CustomObjectsApi);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const core = kc.makeApiClient(CoreV1Api);
  const log = options.log ?? makeLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const { assembled, cleanup } = await assembleForTest({ ...options, log });
  const { operator, helm, watches } = assembled;
  await operator.startGateway();
  const requested: Request[] = [];
  const sources: RequeueSource[] = [];
  const names = controllerNames(watches);
  const kinds: Kind[] = [];
  try {
    for (const [i, listed] of watches.entries()) {
      const watch = withDefaultServiceAccount(listed, options.defaultServiceAccount);
      kinds.push(await kindOf(operator, watch, names[i] ?? watch.kind, { namespaces: options.namespaces, requested, sources }));
    }
  } catch (err) {
    await stopAll(operator, kinds, sources, cleanup);
    throw err;
  }

  let reconcileCount = 0;
  const kindFor = (kind: TestKind | undefined): Kind => {
    const found = kind === undefined ? kinds[0] : kinds.find((k) => k.watch.group === kind.group && k.watch.kind === kind.kind);
    if (found === undefined) throw new Error(`no watch of ${kind?.kind ?? 'any kind'} in this harness`);
    return found;
  };
  const read = async (k: Kind, request: Request): Promise<CR | undefined> => {
    const { group, version } = k.watch;
    try {
      return (await custom.getNamespacedCustomObject({
        group,
        version,
        plural: k.plural,
        namespace: request.namespace,
        name: request.name,
      })) as CR;
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  };
  const liveObject = (entry: InventoryEntry): Promise<KubernetesObject | undefined> =>
    objects
      .read({
        apiVersion: entry.apiVersion,
        kind: entry.kind,
        metadata: { name: entry.name, ...(entry.namespace === '' ? {} : { namespace: entry.namespace }) },
      })
      .catch((err: unknown) => {
        if (isStatus(err, 404)) return undefined;
        throw err;
      });
  /**
   * Waits until the dependents' cache holds each object of the release as the API server does (a
   * change made by hand has reached it, as its watch event would have woken the controller), and
   * says which version of each it saw.
   */
  const dependentsCaughtUp = async (cr: CR | undefined): Promise<Map<string, string | undefined>> => {
    const seen = new Map<string, string | undefined>();
    for (const entry of cr?.status?.inventory ?? []) {
      const live = await liveObject(entry);
      await waitFor(
        `the dependents cache to hold ${entry.kind} ${entry.namespace}/${entry.name} as the API server does`,
        () => {
          const cached = operator.dependents.get(entry);
          // Not covered (dependent watches off, or a kind not watched yet): the reconcile GETs it.
          // An object without the chart label (a helm upgrade by hand took it off) is outside the
          // informers' label selector: their cache holds nothing for it, as the controller's would.
          const selected = live?.metadata?.labels?.[CHART_LABEL] === undefined ? undefined : live;
          return Promise.resolve(!cached.known || atLeast(cached.object, selected));
        },
        { timeoutMs: 30_000, intervalMs: 20 },
      );
      seen.set(entryKey(entry), live?.metadata?.resourceVersion);
    }
    return seen;
  };
  /**
   * Waits until the watch of helm's storage holds the release's Secrets as the API server does (a
   * revision made by hand has reached it), or covers nothing yet: a reconcile then reads the storage.
   */
  const storageCaughtUp = async (request: Request): Promise<void> => {
    const live = await core.listNamespacedSecret({ namespace: request.namespace, labelSelector: `owner=helm,name=${request.name}` });
    const want = new Map(live.items.map((s) => [s.metadata?.name ?? '', s]));
    await waitFor(
      `the release storage watch to hold ${request.namespace}/${request.name}'s Secrets as the API server does`,
      () => {
        const cached = operator.releaseStorage.cachedSecrets(request.namespace, request.name);
        if (cached === undefined) return Promise.resolve(true);
        const held = new Map(cached.map((s) => [s.metadata?.name ?? '', s]));
        return Promise.resolve(held.size === want.size && [...want].every(([name, s]) => atLeast(held.get(name), s)));
      },
      { timeoutMs: 30_000, intervalMs: 20 },
    );
  };
  /** Whether an object of the release changed since `seen` (its event would reconcile the CR again). */
  const dependentChanged = async (cr: CR | undefined, seen: ReadonlyMap<string, string | undefined>): Promise<boolean> => {
    for (const entry of cr?.status?.inventory ?? []) {
      if ((await liveObject(entry))?.metadata?.resourceVersion !== seen.get(entryKey(entry))) return true;
    }
    return false;
  };
  /**
   * The same question asked of the dependents' cache, for a wait that may last (a Deployment rolling
   * out): a poll that sends no request while nothing moves. The API server is asked only about an
   * object no informer covers; the settle that follows catches up with the API server.
   */
  const dependentChangedInCache = async (cr: CR | undefined, seen: ReadonlyMap<string, string | undefined>): Promise<boolean> => {
    for (const entry of cr?.status?.inventory ?? []) {
      const cached = operator.dependents.get(entry);
      const version = cached.known ? cached.object?.metadata?.resourceVersion : (await liveObject(entry))?.metadata?.resourceVersion;
      if (version !== seen.get(entryKey(entry))) return true;
    }
    return false;
  };
  /** One reconcile, once the caches have caught up with the API server (a controller reconciles after the event). */
  const once = async (k: Kind, request: Request): Promise<Outcome> => {
    const live = await read(k, request);
    if (!options.namespaces.includes(request.namespace)) {
      throw new Error(`namespace ${request.namespace} is not one of this harness's (${options.namespaces.join(', ')})`);
    }
    const cache = await k.cacheOf(request.namespace);
    const cached = await waitFor(
      `the cache of ${k.watch.kind} to hold ${request.namespace}/${request.name} as the API server does`,
      () => {
        const c = cache.get(request.name, request.namespace);
        return Promise.resolve(atLeast(c, live) ? { obj: c } : undefined);
      },
      { timeoutMs: 30_000, intervalMs: 20 },
    );
    const seen = await dependentsCaughtUp(live);
    await storageCaughtUp(request);
    const reconcileID = `harness-${++reconcileCount}`;
    const context = {
      signal: new AbortController().signal,
      reconcileID,
      log: log.child({ namespace: request.namespace, name: request.name, reconcileID }),
      cached: cached.obj,
    };
    let outcome: { result?: Result; error?: Error };
    try {
      outcome = { result: await k.reconciler.reconcile(request, context) };
    } catch (err) {
      outcome = { error: err instanceof Error ? err : new Error(String(err)) };
    }
    const after = await read(k, request);
    // What the reconcile wrote to its own CR (a finalizer, an annotation) comes back to its
    // controller as a watch event, which it reconciles: so does the harness. So does a change of
    // the release's objects: the reconcile's own (an ownership stamp, a repair), or another
    // controller's (a Deployment rolling out), which may have made a repair miss.
    const eventDue =
      after !== undefined &&
      (live === undefined ||
        isMeaningfulUpdate(after as KubernetesObject, objectSummary(live as KubernetesObject)) ||
        (await dependentChanged(after, seen)));
    return { ...outcome, cr: after, eventDue, seen };
  };
  /** Reconciles until nothing more is due (see reconcileUntilSettled); the last outcome. */
  const settle = async (k: Kind, key: string, options: SettleOptions): Promise<{ last: Outcome; reconciles: number }> => {
    const request = parseKey(key);
    const pollBelowMs = options.pollBelowMs ?? 5_000;
    const max = options.maxReconciles ?? 30;
    let last: Outcome | undefined;
    for (let n = 1; n <= max; n++) {
      last = await once(k, request);
      const wait = options.stopAtError === true && last.error !== undefined ? undefined : nextReconcileInMs(last, pollBelowMs);
      if (wait === undefined) return { last, reconciles: n };
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    throw new Error(`${k.watch.kind} ${key} did not settle in ${max} reconciles; ${describeLast(last)}`);
  };
  const settled = ({ last, reconciles }: { last: Outcome; reconciles: number }): Settled => {
    const { eventDue: _eventDue, seen: _seen, ...outcome } = last;
    return { ...outcome, reconciles };
  };

  return {
    helm,
    requested,
    async reconcile(key, kind) {
      const k = kindFor(kind);
      const request = parseKey(key);
      return settled({ last: await once(k, request), reconciles: 1 });
    },
    async reconcileUntilSettled(key, kind, options = {}) {
      return settled(await settle(kindFor(kind), key, options));
    },
    async reconcileUntil(key, want, kind, options = {}) {
      const k = kindFor(kind);
      const rounds = options.rounds ?? 20;
      let reconciles = 0;
      for (let round = 1; ; round++) {
        const run = await settle(k, key, options);
        reconciles += run.reconciles;
        if (want.accept(run.last.cr)) return settled({ last: run.last, reconciles });
        if (round >= rounds) throw new Error(`${k.watch.kind} ${key}: not ${want.what} after ${rounds} settles; ${describeLast(run.last)}`);
        // The controller sleeps until an event: the next change of an object of the release.
        await waitFor(
          `an object of ${k.watch.kind} ${key}'s release to change (${want.what})`,
          () => dependentChangedInCache(run.last.cr, run.last.seen),
          { timeoutMs: 60_000, intervalMs: 100 },
        );
      }
    },
    dependentInformers: () => operator.dependentInformers(),
    stop: () => stopAll(operator, kinds, sources, cleanup),
  };
}

/**
 * When a controller would reconcile again after `o`: undefined, it would not (settled: a result
 * asking for nothing sooner than `pollBelowMs`, or a TerminalError, and no watch event due); 0, at
 * once (an event, a retryable error); else the poll the result asks for.
 */
function nextReconcileInMs(o: Outcome, pollBelowMs: number): number | undefined {
  if (o.eventDue) return 0;
  if (o.error instanceof TerminalError) return undefined;
  if (o.error !== undefined) return 0;
  const after = o.result?.requeueAfterMs;
  return after === undefined || after >= pollBelowMs ? undefined : Math.max(0, after);
}

/** The last reconcile's result or error and the CR's conditions, for a case that did not settle. */
function describeLast(o: Outcome | undefined): string {
  const conditions = (o?.cr?.status?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}: ${c.message}`).join('; ');
  const last = o?.error === undefined ? `result ${JSON.stringify(o?.result)}` : `error: ${o.error.message}`;
  return `last ${last}; conditions: ${conditions}`;
}

interface Versioned {
  readonly metadata?: { readonly resourceVersion?: string };
}

/**
 * Whether `cached` is `live`'s version or a later one (both absent alike). The control plane's
 * resourceVersions are etcd revisions, so they order; an object that keeps changing (a
 * Deployment's status) is past the read by the time the cache is looked at.
 */
const atLeast = (cached: Versioned | undefined, live: Versioned | undefined): boolean => {
  if (live === undefined || cached === undefined) return live === cached;
  return Number(cached.metadata?.resourceVersion) >= Number(live.metadata?.resourceVersion);
};

const entryKey = (e: InventoryEntry): string => `${e.apiVersion}|${e.kind}|${e.namespace}|${e.name}`;

const parseKey = (key: string): Request => {
  const slash = key.indexOf('/');
  if (slash < 0) throw new Error(`key ${key}: want namespace/name (the middle tier's cases are namespaced)`);
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
};

async function kindOf(
  operator: Operator,
  watch: Watch,
  name: string,
  on: { namespaces: readonly string[]; requested: Request[]; sources: RequeueSource[] },
): Promise<Kind> {
  const kc = testKubeConfig();
  const resource = await new RestMapper(kc).mapping(watch);
  const caches = new Map<string, Promise<Informer>>();
  const synced = new Map<string, Informer>();
  const cacheOf = (namespace: string): Promise<Informer> => {
    let started = caches.get(namespace);
    if (started === undefined) {
      // As the operator's controllers cache their CRs (Operator: cacheTransform).
      const informer = new Informer(kc, {
        resource: { group: resource.group, version: resource.version, plural: resource.plural, namespace },
        transform: keepForRollout,
      });
      started = informer.start().then(() => {
        synced.set(namespace, informer);
        return informer;
      });
      caches.set(namespace, started);
    }
    return started;
  };
  await Promise.all(on.namespaces.map(cacheOf));
  const cache: CacheReader = {
    get: (namespace, n) => synced.get(namespace)?.get(n, namespace),
    list: (namespace) =>
      namespace === undefined || namespace === ''
        ? [...synced.values()].flatMap((c) => c.list())
        : (synced.get(namespace)?.list(namespace) ?? []),
  };
  const wakeups = new RequeueSource();
  wakeups.start((request) => on.requested.push(request));
  on.sources.push(wakeups);
  return { watch, plural: resource.plural, reconciler: operator.reconcilerOf(watch, name, { resource, cache, wakeups }), cacheOf, caches };
}

async function stopAll(
  operator: Operator,
  kinds: readonly Kind[],
  sources: readonly RequeueSource[],
  cleanup: () => Promise<void>,
): Promise<void> {
  for (const s of sources) s.stop();
  await Promise.all(kinds.flatMap((k) => [...k.caches.values()].map(async (c) => (await c).stop())));
  await operator.stop();
  await cleanup();
}

/**
 * One case of the middle tier: a namespace of its own (`prefix-<random>`) and the reconcilers of
 * `options.watches` on it, both gone afterwards, so cases that share nothing run concurrently.
 */
export async function withReconcilers(
  prefix: string,
  options: Omit<HarnessOptions, 'namespaces'>,
  run: (namespace: string, h: ReconcilerHarness) => Promise<void>,
): Promise<void> {
  const kc = testKubeConfig();
  const ns = await createNamespace(kc, prefix);
  try {
    const h = await startReconcilers({ ...options, namespaces: [ns.name] });
    try {
      await run(ns.name, h);
    } finally {
      await h.stop();
    }
  } finally {
    await ns.remove();
  }
}

/** A namespace for each case of a file, made before the file's one harness (see {@link caseNamespaces}). */
export interface CaseNamespaces<P extends string> {
  /** The namespace of each case, by its prefix. */
  readonly of: Readonly<Record<P, string>>;
  /** All of them: the harness's `namespaces`. */
  readonly names: readonly string[];
  remove(): Promise<void>;
}

/**
 * A namespace of its own (`prefix-<random>`) for each case of a file that shares one harness, made
 * up front so that the harness watches these alone; `remove` deletes them (and lets go of the CRs
 * left in them).
 */
export async function caseNamespaces<const P extends string>(prefixes: readonly P[]): Promise<CaseNamespaces<P>> {
  const kc = testKubeConfig();
  const made = await Promise.all(prefixes.map((p) => createNamespace(kc, p)));
  return {
    of: Object.fromEntries(prefixes.map((p, i) => [p, made[i]?.name ?? ''])) as Record<P, string>,
    names: made.map((m) => m.name),
    remove: async () => {
      await Promise.all(made.map((m) => m.remove()));
    },
  };
}
