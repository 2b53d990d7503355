/**
 * Watches the objects releases created: one informer per dependent kind (per watched namespace for
 * namespaced kinds when WATCH_NAMESPACE limits them), shared by every controller, started lazily the
 * first time a release contains that kind, and filtered server-side to objects carrying the chart
 * label, so unrelated objects are never cached. Each event is routed to the CR that owns the object.
 * The number of informers grows with the number of distinct kinds, never with the number of CRs.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { RestMapper } from '../k8s/restmapper.js';
import { parseApiVersion } from '../util/group-kind.js';
import { type InventoryEntry, CHART_LABEL, ownersOf, type CachedObject, type DependentsPort } from '../reconciler/index.js';
import { TIMED_OUT, withDeadline } from '../util/clock.js';
import { dropManagedFields, Informer } from '../runtime/informer.js';
import type { Priority } from '../runtime/workqueue.js';
import type { Logger } from '../telemetry/logger.js';
import type { WatchShare } from '../runtime/watch-share.js';

export interface DependentOwner {
  /** `Kind` (from an owner reference, with apiVersion) or `Kind.group` (from owner annotations). */
  readonly type: string;
  readonly apiVersion?: string;
  readonly namespace: string;
  readonly name: string;
}

export interface DependentsOptions {
  readonly kubeConfig: KubeConfig;
  readonly mapper: RestMapper;
  /** Empty: every namespace. */
  readonly namespaces: readonly string[];
  readonly log: Logger;
  /** Called for every event with each owner of the object, and the queue priority it deserves. */
  readonly route: (owner: DependentOwner, priority: Priority) => void;
  /** How long `watch` waits for a new informer's first LIST before reconciles fall back to GETs. */
  readonly syncTimeoutMs?: number;
  /**
   * Sharded (docs/adr/0103): namespaced kinds are watched for this replica's share only; an object
   * of another namespace (a release reaching outside its CR's) is then read with a GET.
   */
  readonly share?: WatchShare;
}

interface KindWatch {
  readonly namespaced: boolean;
  /** Keyed by namespace; '' = all namespaces. */
  readonly informers: Map<string, Informer>;
  readonly started: Promise<void>;
}

const kindKey = (apiVersion: string, kind: string): string => `${apiVersion}|${kind}`;

export type DependentEvent = 'added' | 'updated' | 'deleted';

/**
 * The queue priority of the owner's reconcile (docs/adr/0024). A deleted object is drift to repair
 * at once. Adds and updates mostly refresh readiness (a Deployment's status moves several times as
 * it rolls out): they wait behind new and edited CRs. An edit of a release object's spec is drift
 * too, but looks like any status update here: it is repaired when the queue reaches it.
 */
export function dependentEventPriority(event: DependentEvent): Priority {
  return event === 'deleted' ? 'normal' : 'low';
}

export class DependentWatcher implements DependentsPort {
  readonly #kinds = new Map<string, KindWatch>();
  #stopped = false;

  constructor(private readonly o: DependentsOptions) {}

  /** Starts watching these kinds (idempotent); resolves once synced or after the sync timeout. */
  async watch(kinds: readonly { apiVersion: string; kind: string }[]): Promise<void> {
    await Promise.all(kinds.map((k) => this.#ensure(k.apiVersion, k.kind)));
  }

  /** The cached state of `entry`, when an informer that covers it has synced. */
  get(entry: InventoryEntry): CachedObject {
    const w = this.#kinds.get(kindKey(entry.apiVersion, entry.kind));
    if (w === undefined) return { known: false };
    const informer = w.informers.get(w.namespaced && w.informers.has(entry.namespace) ? entry.namespace : '');
    if (informer === undefined || !informer.hasSynced() || !informer.covers(entry.namespace)) return { known: false };
    return { known: true, object: informer.get(entry.name, entry.namespace === '' ? undefined : entry.namespace) };
  }

  /** Objects cached per dependent kind, summed over its informers (one per watched namespace). */
  cachedObjects(): { kind: string; objects: number }[] {
    return [...this.#kinds.entries()].map(([key, w]) => ({
      kind: key.slice(key.indexOf('|') + 1),
      objects: [...w.informers.values()].reduce((n, i) => n + i.size(), 0),
    }));
  }

  informerCount(): number {
    let n = 0;
    for (const w of this.#kinds.values()) n += w.informers.size;
    return n;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const all = [...this.#kinds.values()].flatMap((w) => [...w.informers.values()]);
    this.#kinds.clear();
    await Promise.allSettled(all.map((i) => i.stop()));
  }

  async #ensure(apiVersion: string, kind: string): Promise<void> {
    const key = kindKey(apiVersion, kind);
    let w = this.#kinds.get(key);
    if (w === undefined) {
      if (this.#stopped) return;
      const started = await this.#start(apiVersion, kind);
      if (started === undefined) return;
      w = started;
      const existing = this.#kinds.get(key);
      if (existing !== undefined) {
        await Promise.allSettled([...w.informers.values()].map((i) => i.stop()));
        w = existing;
      } else {
        this.#kinds.set(key, w);
      }
    }
    await w.started;
  }

  /** undefined: stop() ran while the kind was being mapped, and no informer may start after it. */
  async #start(apiVersion: string, kind: string): Promise<KindWatch | undefined> {
    const mapping = await this.o.mapper.mapping({ ...parseApiVersion(apiVersion), kind });
    if (this.#stopped) return undefined;
    const scopes = mapping.namespaced && this.o.namespaces.length > 0 ? this.o.namespaces : [''];
    const informers = new Map<string, Informer>();
    for (const ns of scopes) {
      const informer = new Informer(this.o.kubeConfig, {
        resource: { group: mapping.group, version: mapping.version, plural: mapping.plural, ...(ns === '' ? {} : { namespace: ns }) },
        labelSelector: CHART_LABEL,
        log: this.o.log,
        // Readers: ownership (metadata), drift comparison (the chart's fields) and readiness
        // (status). Field take-over reads managedFields from a fresh GET (release-objects.ts).
        transform: dropManagedFields,
        // Every event is routed to the owners the object names now; the previous version is never asked.
        trackPrevious: false,
        // Cluster-scoped objects have no namespace to cut by: every replica keeps them.
        ...(mapping.namespaced && this.o.share !== undefined ? { share: this.o.share } : {}),
      });
      const route =
        (event: DependentEvent) =>
        (obj: KubernetesObject): void => {
          for (const owner of ownersOf(obj)) this.o.route(owner, dependentEventPriority(event));
        };
      informer.onAdd(route('added'));
      informer.onUpdate(route('updated'));
      informer.onDelete(route('deleted'));
      informers.set(ns, informer);
    }
    this.o.log.info({ apiVersion, kind, informers: informers.size }, 'Watching dependent kind');
    const started = this.#started(apiVersion, kind, [...informers.values()]);
    return { namespaced: mapping.namespaced, informers, started };
  }

  /** Never rejects: a kind that cannot be listed (RBAC, say) is read with GETs instead. */
  async #started(apiVersion: string, kind: string, informers: readonly Informer[]): Promise<void> {
    const timeout = this.o.syncTimeoutMs ?? 10_000;
    // Settles either way, so a stop() before the first LIST leaves no unhandled rejection behind.
    const synced = Promise.all(informers.map((i) => i.start())).then(
      () => 'synced' as const,
      (err: unknown) => err,
    );
    const outcome = await withDeadline(synced, timeout);
    if (outcome !== 'synced') {
      this.o.log.warn(
        { apiVersion, kind, error: outcome === TIMED_OUT ? `not synced within ${timeout}ms` : outcome },
        'Dependent watch not ready; reading objects directly',
      );
    }
  }
}
