/**
 * Small in-memory fakes of the ports an action acts through, and an ActionContext built from them.
 * Each fake records what it was asked; helm can be told to fail a given call with a given error.
 * FakeHelm keeps FakeStorage as helm keeps its storage Secrets: an install, upgrade or rollback that
 * succeeds stores its revision (the one before it superseded), an uninstall removes the release. A call
 * made to fail stores nothing: the test sets what a failed helm left behind, as that differs by case.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ActionContext, Desired } from '../../../../src/reconciler/core/action-context.js';
import { planSealer } from '../../../../src/reconciler/plan/upgrade-plan.js';
import { parseReleaseAnnotations } from '../../../../src/reconciler/decide/annotations.js';
import type { HelmFailure, HelmPort, ReleaseInfo, ReleaseRequest, ReleaseTestResult } from '../../../../src/reconciler/core/helm-port.js';
import type { InventoryEntry } from '../../../../src/reconciler/objects/inventory.js';
import { FIELD_CONFLICT, NAME_IN_USE } from '../../../../src/helm/errors.js';
import type { FieldConflict } from '../../../../src/k8s/errors.js';
import type { ObjectRef } from '../../../../src/k8s/objects.js';
import { NoKindMatchError } from '../../../../src/k8s/restmapper.js';
import { ManifestCache } from '../../../../src/reconciler/objects/manifest-cache.js';
import type { CrEvent, Outcome } from '../../../../src/reconciler/core/outcome.js';
import type { ReleaseObjectsPort, ReleaseStoragePort } from '../../../../src/reconciler/core/ports.js';
import type {
  DesiredObject,
  DriftReport,
  DryRunApply,
  SeenObjects,
  Subject,
} from '../../../../src/reconciler/objects/release-object-types.js';
import type { ReadinessSummary } from '../../../../src/reconciler/objects/readiness.js';
import { latestRecord, RELEASE_LABELS, type ReleaseRecord, type ReleaseStatus } from '../../../../src/reconciler/decide/state.js';
import type { HelmStatus } from '../../../../src/reconciler/status/status.js';
import type { CacheReader, Request } from '../../../../src/runtime/reconcile.js';
import type { Requeue } from '../../../../src/runtime/requeue-source.js';
import { silentLogger } from '../../../../src/telemetry/logger.js';

export const NAMESPACE = 'apps';
export const NAME = 'web';
export const UID = 'uid-web';
export const OWNER_KIND = 'Nginx.example.com';
export const CHART = {
  path: '/charts/nginx',
  format: 'directory',
  name: 'nginx',
  version: '1.2.3',
  appVersion: '1.25',
  digest: 'sha256:abc',
} as const;

/** A revision of a release of ours (owner-kind label set to OWNER_KIND). */
export const record = (
  revision: number,
  status: ReleaseStatus,
  labels: Readonly<Record<string, string>> = { [RELEASE_LABELS.ownerKind]: OWNER_KIND },
): ReleaseRecord => ({
  revision,
  status,
  labels,
});

export const desired = (fingerprint = 'fp-1'): Desired => ({
  values: { replicas: 2 },
  fingerprint,
  keyedFingerprint: `keyed-${fingerprint}`,
  fleetRevision: 'fleet-1',
  ownDigest: 'own-1',
  labels: { [RELEASE_LABELS.fingerprint]: fingerprint, [RELEASE_LABELS.ownerKind]: OWNER_KIND },
  seal: planSealer(Buffer.alloc(32, 7)),
});

/** A multi-document manifest of the given objects (`namespace` omitted when undefined). */
export function manifestOf(objects: readonly { apiVersion: string; kind: string; name: string; namespace?: string }[]): string {
  return objects
    .map((o) => {
      const ns = o.namespace === undefined ? '' : `\n  namespace: ${o.namespace}`;
      return `apiVersion: ${o.apiVersion}\nkind: ${o.kind}\nmetadata:\n  name: ${o.name}${ns}\n`;
    })
    .join('---\n');
}

export const DEFAULT_MANIFEST = manifestOf([
  { apiVersion: 'v1', kind: 'ConfigMap', name: 'web-config' },
  { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
]);

// ---------------------------------------------------------------------------------------------
// helm

type UninstallRequest = Parameters<HelmPort['uninstall']>[0];
type RollbackRequest = Parameters<HelmPort['rollback']>[0];
type RenderRequest = Parameters<HelmPort['render']>[0];
type UpgradeRequest = Parameters<HelmPort['upgrade']>[0];
type TestRequest = Parameters<HelmPort['test']>[0];

export interface HelmRequests {
  readonly install: ReleaseRequest;
  readonly upgrade: UpgradeRequest;
  readonly uninstall: UninstallRequest;
  readonly rollback: RollbackRequest;
  readonly test: TestRequest;
  readonly status: { readonly release: string; readonly namespace: string };
  readonly render: RenderRequest;
}
export type HelmMethod = keyof HelmRequests;
export type HelmCall = { [M in HelmMethod]: { readonly method: M; readonly request: HelmRequests[M] } }[HelmMethod];

interface Failure {
  readonly error: unknown;
  /** 1-based: fail only this call of the method; undefined: every call. */
  readonly call: number | undefined;
}

export class FakeHelm implements HelmPort {
  readonly calls: HelmCall[] = [];
  /** What install, upgrade and status answer with (status: undefined when `exists` is false). */
  release: { revision: number; manifest: string; notes: string; status: ReleaseStatus; chartVersion?: string; valuesDigest?: string } = {
    revision: 1,
    manifest: DEFAULT_MANIFEST,
    notes: 'Thanks for installing',
    status: 'deployed',
  };
  exists = true;
  /** What render answers with. */
  rendered = DEFAULT_MANIFEST;
  /** What uninstall answers with (its onUninstalled is told of every release it names). */
  uninstallFound = true;
  /** Replaces what an uninstall that did not fail does (by default: removes and reports every release it names). */
  onUninstall: ((request: UninstallRequest) => { readonly found: boolean }) | undefined;
  /** Releases (`namespace/name`) with a helm process that has not exited yet (see HelmPort.running). */
  readonly live = new Set<string>();
  /** Runs as each call starts, before it fails or answers (to abort a signal mid-helm, say). */
  during: ((call: HelmCall) => void) | undefined;
  /** Each call waits for it after `during`: a helm process that lasts until the test lets it end. */
  hold: Promise<void> | undefined;
  readonly #failures = new Map<HelmMethod, Failure>();
  readonly #counts = new Map<HelmMethod, number>();

  constructor(private readonly storage?: FakeStorage) {}

  /** Makes call number `call` (1-based) of `method` reject with `error`, or every call when omitted. */
  fail(method: HelmMethod, error: unknown, call?: number): this {
    this.#failures.set(method, { error, call });
    return this;
  }

  callsOf<M extends HelmMethod>(method: M): HelmRequests[M][] {
    return this.calls.filter((c): c is Extract<HelmCall, { method: M }> => c.method === method).map((c) => c.request as HelmRequests[M]);
  }

  methods(): HelmMethod[] {
    return this.calls.map((c) => c.method);
  }

  /** What major answers (3 by default). */
  helmMajor = 3;

  major(): Promise<number> {
    return Promise.resolve(this.helmMajor);
  }

  async install(request: ReleaseRequest): Promise<ReleaseInfo> {
    await this.#enter({ method: 'install', request });
    // As helm's own check before an install: any history of the name refuses it.
    if (this.storage?.hasHistory(request.namespace, request.release) === true)
      throw new FakeHelmError('INSTALLATION FAILED: cannot re-use a name that is still in use');
    this.storage?.store(request.namespace, request.release, {
      revision: this.release.revision,
      status: this.release.status,
      labels: request.labels,
    });
    return this.#info(request.release, request.namespace);
  }

  async upgrade(request: UpgradeRequest): Promise<ReleaseInfo> {
    await this.#enter({ method: 'upgrade', request });
    this.storage?.store(request.namespace, request.release, {
      revision: this.release.revision,
      status: this.release.status,
      labels: request.labels,
    });
    return this.#info(request.release, request.namespace);
  }

  async uninstall(request: UninstallRequest): Promise<{ readonly found: boolean }> {
    await this.#enter({ method: 'uninstall', request });
    if (this.onUninstall !== undefined) return this.onUninstall(request);
    for (const release of [request.release, ...(request.also ?? [])]) {
      this.storage?.remove(request.namespace, release);
      request.onUninstalled?.(release);
    }
    return { found: this.uninstallFound };
  }

  async rollback(request: RollbackRequest): Promise<void> {
    await this.#enter({ method: 'rollback', request });
    this.storage?.rollBack(request.namespace, request.release, request.revision);
  }

  /** What test answers with. */
  testResult: ReleaseTestResult = { passed: true };

  async test(request: TestRequest): Promise<ReleaseTestResult> {
    await this.#enter({ method: 'test', request });
    return this.testResult;
  }

  async status(release: string, namespace: string): Promise<ReleaseInfo | undefined> {
    await this.#enter({ method: 'status', request: { release, namespace } });
    return this.exists ? this.#info(release, namespace) : undefined;
  }

  /** What storedStrings answers: the strings the deployed revision's values hold at the paths asked. */
  stored: string[] = [];

  storedStrings(request: { readonly paths: readonly (readonly (string | number)[])[] }): Promise<string[]> {
    return Promise.resolve(request.paths.length === 0 ? [] : this.stored);
  }

  async render(request: RenderRequest): Promise<string> {
    await this.#enter({ method: 'render', request });
    return this.rendered;
  }

  /** What mayChangeReleases answers (false: the lease is lost). */
  leaseHeld = true;

  mayChangeReleases(): boolean {
    return this.leaseHeld;
  }

  running(release: string, namespace: string): boolean {
    return this.live.has(`${namespace}/${release}`);
  }

  async #enter(call: HelmCall): Promise<void> {
    this.calls.push(call);
    const n = (this.#counts.get(call.method) ?? 0) + 1;
    this.#counts.set(call.method, n);
    this.during?.(call);
    await (this.hold ?? Promise.resolve());
    const failure = this.#failures.get(call.method);
    if (failure !== undefined && (failure.call === undefined || failure.call === n)) throw failure.error;
  }

  #info(name: string, namespace: string): ReleaseInfo {
    const { revision, manifest, notes, status, chartVersion, valuesDigest } = this.release;
    const chart = { name: CHART.name, version: chartVersion ?? CHART.version, appVersion: CHART.appVersion };
    return { name, namespace, revision, status, chart, notes, manifest, ...(valuesDigest === undefined ? {} : { valuesDigest }) };
  }
}

/** A helm error as the helm client throws it (any Error does for describeHelmError below). */
export class FakeHelmError extends Error {
  override readonly name = 'FakeHelmError';
}

export const describeHelmError = (err: unknown): HelmFailure => {
  const summary = err instanceof Error ? err.message : String(err);
  if (FIELD_CONFLICT.test(summary)) return { summary, retryable: false, fieldConflict: true };
  return { summary, retryable: true, ...(NAME_IN_USE.test(summary) ? { nameInUse: true } : {}) };
};

// ---------------------------------------------------------------------------------------------
// release storage

export class FakeStorage implements ReleaseStoragePort {
  readonly #releases = new Map<string, ReleaseRecord[]>();
  /** Releases read, as `namespace/name`, in order. */
  readonly reads: string[] = [];
  /**
   * The storage watch (ReleaseStoragePort.watched): none; live (it holds what is stored); or
   * lagging, still holding the records given (an event not yet delivered).
   */
  watch: { readonly kind: 'none' } | { readonly kind: 'live' } | { readonly kind: 'lagging'; readonly records: readonly ReleaseRecord[] } =
    {
      kind: 'none',
    };

  set(namespace: string, release: string, records: readonly ReleaseRecord[]): this {
    this.#releases.set(`${namespace}/${release}`, [...records]);
    return this;
  }

  remove(namespace: string, release: string): void {
    this.#releases.delete(`${namespace}/${release}`);
  }

  /** Revisions deleted by deleteRevisions, as `namespace/name@revision`. */
  readonly deleted: string[] = [];

  deleteRevisions(namespace: string, release: string, revisions: readonly number[]): Promise<void> {
    const key = `${namespace}/${release}`;
    this.deleted.push(...revisions.map((r) => `${key}@${r}`));
    const left = (this.#releases.get(key) ?? []).filter((r) => !revisions.includes(r.revision));
    if (left.length === 0) this.#releases.delete(key);
    else this.#releases.set(key, left);
    return Promise.resolve();
  }

  /** Whether any revision is stored, as helm's install checks (not a read of the reconciler's). */
  hasHistory(namespace: string, release: string): boolean {
    return (this.#releases.get(`${namespace}/${release}`) ?? []).length > 0;
  }

  /** Stores a new revision as helm does: a deployed one supersedes the revision that was deployed. */
  store(namespace: string, release: string, next: ReleaseRecord): void {
    const kept = (this.#releases.get(`${namespace}/${release}`) ?? []).filter((r) => r.revision !== next.revision);
    const superseded =
      next.status === 'deployed' ? kept.map((r) => (r.status === 'deployed' ? { ...r, status: 'superseded' as const } : r)) : kept;
    this.#releases.set(`${namespace}/${release}`, [...superseded, next]);
  }

  /** A rollback as helm makes it: a new deployed revision with the labels of the one rolled back to. */
  rollBack(namespace: string, release: string, to: number): void {
    const records = this.#releases.get(`${namespace}/${release}`) ?? [];
    const target = records.find((r) => r.revision === to);
    if (target === undefined) return;
    const latest = Math.max(...records.map((r) => r.revision));
    this.store(namespace, release, { ...target, revision: latest + 1, status: 'deployed' });
  }

  records(namespace: string, release: string): Promise<ReleaseRecord[]> {
    this.reads.push(`${namespace}/${release}`);
    return Promise.resolve([...(this.#releases.get(`${namespace}/${release}`) ?? [])]);
  }

  async recordsOf(namespace: string, releases: readonly string[]): Promise<Map<string, ReleaseRecord[]>> {
    const found = new Map<string, ReleaseRecord[]>();
    for (const release of releases) found.set(release, await this.records(namespace, release));
    return found;
  }

  async deployed(namespace: string, release: string, revision: number): Promise<ReleaseRecord[] | undefined> {
    const latest = latestRecord(await this.records(namespace, release));
    return latest?.revision === revision && latest.status === 'deployed' ? [latest] : undefined;
  }

  watched(namespace: string, release: string, revision: number): ReleaseRecord | undefined {
    const watch = this.watch;
    if (watch.kind === 'none') return undefined;
    const held = watch.kind === 'lagging' ? watch.records : (this.#releases.get(`${namespace}/${release}`) ?? []);
    const latest = latestRecord(held);
    return latest?.revision === revision && latest.status === 'deployed' ? latest : undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// the release's objects

export const READY: ReadinessSummary = { status: 'True', reason: 'Ready', message: 'all ready', ready: 2, total: 2 };

export class FakeObjects implements ReleaseObjectsPort {
  readonly adopted: { readonly desired: readonly DesiredObject[]; readonly options: { readonly created?: boolean } | undefined }[] = [];
  readonly repaired: (readonly DesiredObject[])[] = [];
  /** The failures each repairDrift reports. */
  repairFailures: DriftReport['failures'] = [];
  ready: ReadinessSummary = READY;
  /** What adopt answers with, handed on to readiness. */
  readonly seen: SeenObjects = new Map();
  readonly readinessSeen: SeenObjects[] = [];
  readonly order: string[] = [];
  /** Each repairDrift finds this many objects drifted and writes them, after the subject's beforeWrite. */
  drifted = 0;
  /** Objects written by repairDrift. */
  written = 0;

  adopt(_s: Subject, desired: readonly DesiredObject[], options?: { readonly created?: boolean }): Promise<SeenObjects> {
    this.order.push('adopt');
    this.adopted.push({ desired, options });
    return Promise.resolve(this.seen);
  }

  async repairDrift(s: Subject, desired: readonly DesiredObject[]): Promise<DriftReport> {
    this.order.push('repairDrift');
    this.repaired.push(desired);
    for (let i = 0; i < this.drifted; i++) {
      // As ReleaseObjects: nothing is written before the subject's check has passed.
      await s.beforeWrite?.();
      this.written++;
    }
    // As ReleaseObjects: each object restored is said in an event.
    const events = Array.from({ length: this.drifted }, () => ({ type: 'Normal' as const, reason: 'DriftCorrected', message: 'Restored' }));
    return { repaired: this.drifted, failures: this.repairFailures, events };
  }

  /** What the dependents cache holds of each object, by position: its resourceVersion; undefined: it cannot answer. */
  versions: string[] | undefined;

  cachedVersions(desired: readonly DesiredObject[]): string[] | undefined {
    const versions = this.versions;
    return versions === undefined ? undefined : desired.map((_, i) => versions[i] ?? '');
  }

  readiness(_desired: readonly DesiredObject[], seen?: SeenObjects): Promise<ReadinessSummary> {
    this.order.push('readiness');
    this.readinessSeen.push(seen ?? new Map<InventoryEntry, KubernetesObject>());
    return Promise.resolve(this.ready);
  }

  /** The live objects `current` answers with, by `kind/namespace/name`. */
  readonly live = new Map<string, KubernetesObject>();
  /** What `applyConflicts` answers, by `kind/name`; the bodies it was asked about, in order. */
  readonly conflicts = new Map<string, FieldConflict[]>();
  readonly dryRuns: KubernetesObject[] = [];

  current(ref: ObjectRef): Promise<KubernetesObject | undefined> {
    this.order.push('current');
    return Promise.resolve(this.live.get(`${ref.kind}/${ref.namespace}/${ref.name}`));
  }

  applyConflicts(_s: Subject, body: KubernetesObject): Promise<FieldConflict[]> {
    this.dryRuns.push(body);
    return Promise.resolve(this.conflicts.get(`${body.kind ?? ''}/${body.metadata?.name ?? ''}`) ?? []);
  }

  /** Answers as `applyConflicts` does; applied objects come back as sent. */
  dryRunApply(s: Subject, body: KubernetesObject): Promise<DryRunApply> {
    return this.applyConflicts(s, body).then((conflicts) => ({ kind: 'applied', after: body, conflicts }));
  }
}

/**
 * The API server's scopes: namespaced unless listed as cluster-scoped; kinds listed as unserved
 * throw NoKindMatchError, as the REST mapper does.
 */
export function fakeIsNamespaced(
  o: { clusterScoped?: readonly string[]; unserved?: readonly string[] } = {},
): (apiVersion: string, kind: string) => Promise<boolean> {
  const clusterScoped = o.clusterScoped ?? ['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition'];
  return (apiVersion, kind) => {
    if ((o.unserved ?? []).includes(kind)) {
      const slash = apiVersion.indexOf('/');
      const gvk =
        slash < 0
          ? { group: '', version: apiVersion, kind }
          : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1), kind };
      return Promise.reject(new NoKindMatchError(gvk));
    }
    return Promise.resolve(!clusterScoped.includes(kind));
  };
}

// ---------------------------------------------------------------------------------------------
// the context

export interface HarnessOptions {
  readonly name?: string;
  readonly uid?: string;
  readonly generation?: number;
  /** The CR's annotations, parsed as the reconciler parses them. */
  readonly annotations?: Readonly<Record<string, string>>;
  readonly status?: Partial<HelmStatus>;
  readonly watch?: Partial<ActionContext['watch']>;
  readonly suppressOverrideValues?: boolean;
  readonly clusterScoped?: readonly string[];
  readonly unserved?: readonly string[];
  /** Another ActionContext's ports (the same helm, storage and caches), for a second CR. */
  readonly shared?: Pick<Harness, 'helm' | 'storage' | 'objects' | 'manifests'>;
}

export interface Harness {
  readonly ctx: ActionContext;
  readonly helm: FakeHelm;
  readonly storage: FakeStorage;
  readonly objects: FakeObjects;
  readonly manifests: ManifestCache;
  /** Aborts ctx.signal. */
  readonly abort: AbortController;
  /** The kinds isNamespaced was asked about, as `apiVersion kind`. */
  readonly scopeLookups: string[];
}

type Ports = Pick<Harness, 'helm' | 'storage' | 'objects' | 'manifests'>;

function newPorts(isNamespaced: ActionContext['isNamespaced']): Ports {
  const storage = new FakeStorage();
  return { storage, helm: new FakeHelm(storage), objects: new FakeObjects(), manifests: new ManifestCache(isNamespaced) };
}

/** The API server's scopes (see fakeIsNamespaced), noting each kind asked about in `lookups`. */
function scopesNoting(o: HarnessOptions, lookups: string[]): ActionContext['isNamespaced'] {
  const scopes = fakeIsNamespaced({
    ...(o.clusterScoped === undefined ? {} : { clusterScoped: o.clusterScoped }),
    ...(o.unserved === undefined ? {} : { unserved: o.unserved }),
  });
  return (apiVersion, kind) => {
    lookups.push(`${apiVersion} ${kind}`);
    return scopes(apiVersion, kind);
  };
}

export function harness(o: HarnessOptions = {}): Harness {
  const name = o.name ?? NAME;
  const uid = o.uid ?? UID;
  const scopeLookups: string[] = [];
  const isNamespaced = scopesNoting(o, scopeLookups);
  const { helm, storage, objects, manifests } = o.shared ?? newPorts(isNamespaced);
  const abort = new AbortController();
  const log = silentLogger();
  const ctx: ActionContext = {
    namespace: NAMESPACE,
    name,
    uid,
    generation: o.generation,
    annotations: parseReleaseAnnotations(o.annotations),
    status: { conditions: [], ...o.status },
    signal: abort.signal,
    log,
    helm,
    storage,
    objects,
    identity: undefined,
    manifests,
    watch: {
      group: 'example.com',
      version: 'v1',
      kind: 'Nginx',
      chart: CHART,
      overrideValues: {},
      confineToNamespace: false,
      allowClusterScoped: [],
      dryRunOption: 'client',
      ...o.watch,
    },
    isNamespaced,
    describeHelmError,
    redact: (text) => text,
    suppressOverrideValues: o.suppressOverrideValues === true,
  };
  return { ctx, helm, storage, objects, manifests, abort, scopeLookups };
}

/** The events an action's outcome carries for the reconciler to record (none: []). */
export const eventsOf = (outcome: Outcome | undefined): readonly CrEvent[] => outcome?.events ?? [];

/** The entries of the objects a manifest cache kept, for comparing with an inventory. */
export const entries = (objects: readonly DesiredObject[] | undefined): InventoryEntry[] => (objects ?? []).map((d) => d.entry);

// ---------------------------------------------------------------------------------------------
// the kind as the reconciler sees it (for the Uninstaller and the Rollout)

/** The controller's cache of the kind (read-only to the reconciler) and the requests made into its source. */
export class FakeKind implements CacheReader {
  readonly #objects = new Map<string, KubernetesObject>();
  /** What was asked of the request source, in order. */
  readonly requested: Request[] = [];
  readonly requeue: Requeue = {
    request: (request) => {
      this.requested.push(request);
    },
  };

  get(namespace: string, name: string): KubernetesObject | undefined {
    return this.#objects.get(`${namespace}/${name}`);
  }

  list(namespace?: string): readonly KubernetesObject[] {
    const all = [...this.#objects.values()];
    return namespace === undefined || namespace === '' ? all : all.filter((o) => o.metadata?.namespace === namespace);
  }

  put(object: KubernetesObject): this {
    this.#objects.set(`${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`, object);
    return this;
  }

  delete(namespace: string, name: string): void {
    this.#objects.delete(`${namespace}/${name}`);
  }
}
