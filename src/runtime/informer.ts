/**
 * A resilient informer for any resource (custom or built-in, namespaced or not) over client-node's
 * `ListWatch`, which already lists, watches from the list's resourceVersion, reconnects after the
 * 30 s inactivity timeout and re-lists on 410 Gone. What it does not do, this adds:
 *
 * - restart with our own {@link Backoff} when `ListWatch` gives up and emits `error` (failed LIST,
 *   403, network reset); the `AbortError` that `stop()` emits is ignored;
 * - a generic, paginated LIST that works for every group/version/plural, core group included;
 * - `hasSynced()` after the first successful LIST;
 * - an `update` callback that also receives a summary of the previous version, which client-node
 *   does not keep (its `update` carries the new object only).
 *
 * Objects are plain JSON as the API server sent them (timestamps are strings), after the optional
 * `transform` (controller-runtime's cache TransformFunc: drop what no reader needs, such as
 * `metadata.managedFields`, before it is cached), and shared with the cache: `structuredClone`
 * before mutating.
 */
import { apiVersionOf } from '../util/group-kind.js';
import type { V1ListMeta } from '@kubernetes/client-node';
import {
  ApiException,
  HttpMethod,
  ListWatch,
  Watch,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
} from '../k8s/client-node.js';
import { RawClient, resourcePath, type ResourceRef } from '../k8s/raw-client.js';
import type { Logger } from '../telemetry/logger.js';
import { systemClock, type Clock, type Timer } from '../util/clock.js';
import { Backoff, type BackoffOptions } from './backoff.js';

export { resourcePath, type ResourceRef };

/** What an update handler needs to know about the previous version of an object. */
export interface ObjectSummary {
  readonly resourceVersion?: string;
  readonly generation?: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly finalizers: readonly string[];
  readonly deletionTimestamp?: string;
}

export function objectSummary(obj: KubernetesObject): ObjectSummary {
  const m = obj.metadata;
  // Watch events carry JSON strings; the generated clients would give a Date. Normalize to a string.
  const deletion = m?.deletionTimestamp as unknown;
  return {
    resourceVersion: m?.resourceVersion,
    generation: m?.generation,
    labels: { ...m?.labels },
    annotations: { ...m?.annotations },
    finalizers: [...(m?.finalizers ?? [])],
    deletionTimestamp: deletion instanceof Date ? deletion.toISOString() : (deletion as string | undefined),
  };
}

export const objectKey = (obj: KubernetesObject): string => {
  const ns = obj.metadata?.namespace ?? '';
  const name = obj.metadata?.name ?? '';
  return ns === '' ? name : `${ns}/${name}`;
};

/**
 * A stream of object events plus a read cache: what a controller consumes. {@link Informer}
 * implements it; unit tests use an in-memory fake.
 */
export interface EventSource<T extends KubernetesObject = KubernetesObject> {
  /** Starts listing and watching; resolves after the first successful LIST (see hasSynced). */
  start(): Promise<void>;
  /** Stops watching; no events are delivered afterwards. Idempotent. */
  stop(): Promise<void>;
  hasSynced(): boolean;
  get(name: string, namespace?: string): T | undefined;
  list(namespace?: string): readonly T[];
  onAdd(handler: (obj: T) => void): void;
  /** `old` is undefined only if the previous version was never seen, or the informer tracks none (`trackPrevious: false`). */
  onUpdate(handler: (obj: T, old: ObjectSummary | undefined) => void): void;
  /** The object's last known state (the watch's DELETED object, or the cached one after a re-list). */
  onDelete(handler: (obj: T) => void): void;
}

/** `stop()` was called before the informer ever synced. */
export class InformerStoppedError extends Error {
  override readonly name = 'InformerStoppedError';
}

export interface InformerOptions<T extends KubernetesObject = KubernetesObject> {
  readonly resource: ResourceRef;
  /** Applied server-side to LIST and WATCH. */
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Objects per LIST page. Default 500, like client-go's reflector. */
  readonly pageSize?: number;
  /** Restart backoff; defaults 1 s → 30 s, reset after a quiet minute. */
  readonly backoff?: BackoffOptions;
  readonly clock?: Clock;
  readonly log?: Logger;
  /**
   * Applied to every listed and watched object before it is cached or handed to handlers; may
   * mutate and return its argument (each object is freshly parsed JSON). See {@link dropManagedFields}.
   */
  readonly transform?: (obj: T) => T;
  /**
   * Keep a summary of each object's last version for `onUpdate`'s `old` (default true). Handlers
   * that ignore `old` save one summary per cached object: `old` is then always undefined.
   */
  readonly trackPrevious?: boolean;
}

/**
 * A cache transform that drops `metadata.managedFields`: often a third of an object's JSON, and
 * read only where a fresh GET is made anyway (field take-over before a drift repair).
 */
export function dropManagedFields<T extends KubernetesObject>(obj: T): T {
  if (obj.metadata?.managedFields !== undefined) delete obj.metadata.managedFields;
  return obj;
}

/**
 * A cache transform for caches read only for metadata (controller-runtime's metadata-only
 * watches, done client-side): keeps `apiVersion`, `kind` and `metadata` without `managedFields`.
 */
export function keepMetadataOnly<T extends KubernetesObject>(obj: T): T {
  const { apiVersion, kind, metadata } = obj;
  const kept: KubernetesObject = {
    ...(apiVersion === undefined ? {} : { apiVersion }),
    ...(kind === undefined ? {} : { kind }),
    ...(metadata === undefined ? {} : { metadata }),
  };
  // Not a T any more, but every reader of such a cache reads only what T's metadata declares.
  return dropManagedFields(kept) as T;
}

/** client-node's Watch, handing ListWatch transformed objects (its cache stores what it is given). */
class TransformingWatch<T extends KubernetesObject> extends Watch {
  constructor(
    kubeConfig: KubeConfig,
    private readonly transform: (obj: T) => T,
  ) {
    super(kubeConfig);
  }

  override watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    return super.watch(
      path,
      queryParams,
      (phase: string, apiObj: unknown, watchObj?: unknown) => {
        // ERROR carries a v1.Status, BOOKMARK only a resourceVersion: nothing to drop.
        const obj = phase === 'ERROR' || phase === 'BOOKMARK' ? apiObj : this.transform(apiObj as T);
        callback(phase, obj, watchObj);
      },
      done,
    );
  }
}

type Handler<A extends unknown[]> = (...args: A) => void;

export class Informer<T extends KubernetesObject = KubernetesObject> implements EventSource<T> {
  readonly path: string;
  readonly #inner: ListWatch<T>;
  readonly #clock: Clock;
  readonly #backoff: Backoff;
  readonly #log: Logger | undefined;
  /** Undefined when the options turn tracking off. */
  readonly #lastSeen: Map<string, ObjectSummary> | undefined;
  readonly #addHandlers: Handler<[T]>[] = [];
  readonly #updateHandlers: Handler<[T, ObjectSummary | undefined]>[] = [];
  readonly #deleteHandlers: Handler<[T]>[] = [];
  #running = false;
  #synced = false;
  #listedThisAttempt = false;
  #restartTimer: Timer | undefined;
  #syncWaiters: { resolve: () => void; reject: (err: Error) => void }[] = [];

  constructor(kubeConfig: KubeConfig, options: InformerOptions<T>) {
    this.path = resourcePath(options.resource);
    this.#clock = options.clock ?? systemClock;
    this.#backoff = new Backoff({ clock: this.#clock, ...options.backoff });
    this.#log = options.log;
    this.#lastSeen = options.trackPrevious === false ? undefined : new Map();
    const list = makeListFn<T>(kubeConfig, this.path, {
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      pageSize: options.pageSize ?? 500,
      apiVersion: apiVersionOf(options.resource),
      ...(options.transform === undefined ? {} : { transform: options.transform }),
    });
    const listFn = async (): Promise<KubernetesListObject<T>> => {
      const result = await list();
      this.#listedThisAttempt = true;
      return result;
    };
    const watch = options.transform === undefined ? new Watch(kubeConfig) : new TransformingWatch<T>(kubeConfig, options.transform);
    this.#inner = new ListWatch<T>(this.path, watch, listFn, false, options.labelSelector, options.fieldSelector);
    this.#inner.on('add', this.#added);
    this.#inner.on('update', this.#updated);
    this.#inner.on('delete', this.#deleted);
    this.#inner.on('error', this.#failed);
  }

  onAdd(handler: (obj: T) => void): void {
    this.#addHandlers.push(handler);
  }

  onUpdate(handler: (obj: T, old: ObjectSummary | undefined) => void): void {
    this.#updateHandlers.push(handler);
  }

  onDelete(handler: (obj: T) => void): void {
    this.#deleteHandlers.push(handler);
  }

  /**
   * Starts the informer and resolves after the first successful LIST. Failures before that are
   * retried with backoff, so this waits as long as the API keeps failing: bound it with a timeout.
   * Rejects with {@link InformerStoppedError} if `stop()` comes first.
   */
  async start(): Promise<void> {
    if (!this.#running) {
      this.#running = true;
      this.#attempt();
    }
    if (this.#synced) return;
    await new Promise<void>((resolve, reject) => this.#syncWaiters.push({ resolve, reject }));
  }

  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    this.#restartTimer?.cancel();
    this.#restartTimer = undefined;
    const waiters = this.#syncWaiters;
    this.#syncWaiters = [];
    for (const w of waiters) w.reject(new InformerStoppedError(`informer for ${this.path} stopped before it synced`));
    await this.#inner.stop();
  }

  hasSynced(): boolean {
    return this.#synced;
  }

  get(name: string, namespace?: string): T | undefined {
    return this.#inner.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.#inner.list(namespace);
  }

  /** One (re)start of the inner ListWatch; it resumes from the last resourceVersion if it has one. */
  #attempt(): void {
    this.#listedThisAttempt = false;
    this.#inner.start().then(
      () => {
        if (this.#listedThisAttempt && this.#running) this.#markSynced();
      },
      // Only credential or config failures reject here (they happen before any request).
      this.#failed,
    );
  }

  #markSynced(): void {
    if (this.#synced) return;
    this.#synced = true;
    const waiters = this.#syncWaiters;
    this.#syncWaiters = [];
    for (const w of waiters) w.resolve();
  }

  readonly #failed = (err: unknown): void => {
    // stop() aborts the watch request, and ListWatch reports that as an error: not a failure.
    if (!this.#running || errorName(err) === 'AbortError') return;
    if (this.#restartTimer !== undefined) return; // one restart at a time
    const delayMs = this.#backoff.next();
    this.#log?.warn({ error: err, path: this.path, delayMs }, 'informer failed; restarting');
    this.#restartTimer = this.#clock.setTimeout(() => {
      this.#restartTimer = undefined;
      if (this.#running) this.#attempt();
    }, delayMs);
  };

  readonly #added = (obj: T): void => {
    this.#lastSeen?.set(objectKey(obj), objectSummary(obj));
    this.#emit(this.#addHandlers, [obj]);
  };

  readonly #updated = (obj: T): void => {
    let old: ObjectSummary | undefined;
    if (this.#lastSeen !== undefined) {
      const key = objectKey(obj);
      old = this.#lastSeen.get(key);
      this.#lastSeen.set(key, objectSummary(obj));
    }
    this.#emit(this.#updateHandlers, [obj, old]);
  };

  readonly #deleted = (obj: T): void => {
    this.#lastSeen?.delete(objectKey(obj));
    this.#emit(this.#deleteHandlers, [obj]);
  };

  /** A throwing handler must not starve the others, nor surface inside client-node's callbacks. */
  #emit<A extends unknown[]>(handlers: readonly Handler<A>[], args: A): void {
    for (const handler of handlers) {
      try {
        handler(...args);
      } catch (err) {
        this.#log?.error({ error: err, path: this.path }, 'informer event handler failed');
      }
    }
  }
}

/** DOMException (AbortError, TimeoutError) is an Error in Node, but don't rely on it. */
const errorName = (err: unknown): string | undefined =>
  typeof err === 'object' && err !== null && 'name' in err && typeof err.name === 'string' ? err.name : undefined;

interface ListOptions<T> {
  readonly labelSelector: string | undefined;
  readonly fieldSelector: string | undefined;
  readonly pageSize: number;
  /** Filled into items that lack it: built-in LIST responses omit apiVersion/kind per item. */
  readonly apiVersion: string;
  readonly transform?: (obj: T) => T;
}

/**
 * A paginated LIST of any resource path, with the KubeConfig's server, credentials and user agent.
 * The generated clients can't do this generically (CustomObjectsApi builds `/apis/{group}/…`, so
 * not the core group), and KubernetesObjectApi needs a discovery round trip per call.
 */
export function makeListFn<T extends KubernetesObject>(
  kubeConfig: KubeConfig,
  path: string,
  options: ListOptions<T>,
): () => Promise<KubernetesListObject<T>> {
  const client = kubeConfig.makeApiClient(RawClient);
  return async () => {
    const items: T[] = [];
    let continueToken: string | undefined;
    let page: RawList<T>;
    do {
      const query: Record<string, string | undefined> = {
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
        limit: String(options.pageSize),
        continue: continueToken,
      };
      page = await getList<T>(client, path, query);
      items.push(...page.items);
      continueToken = page.metadata?.continue;
    } while (continueToken !== undefined && continueToken !== '');
    const kind = page.kind?.replace(/List$/, '');
    const transform = options.transform;
    for (const [i, item] of items.entries()) {
      item.apiVersion ??= options.apiVersion;
      if (kind !== undefined) item.kind ??= kind;
      if (transform !== undefined) items[i] = transform(item);
    }
    // ListWatch reads only items and metadata.resourceVersion (the snapshot all pages belong to).
    const metadata: V1ListMeta = { resourceVersion: page.metadata?.resourceVersion };
    return { apiVersion: page.apiVersion, kind: page.kind, metadata, items };
  };
}

/** A LIST response as JSON: the generated `V1ListMeta` names `continue` `_continue`, the wire does not. */
interface RawList<T> {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: { readonly resourceVersion?: string; readonly continue?: string };
  readonly items: T[];
}

function isList(body: unknown): body is RawList<KubernetesObject> {
  return typeof body === 'object' && body !== null && Array.isArray((body as { items?: unknown }).items);
}

async function getList<T>(client: RawClient, path: string, query: Record<string, string | undefined>): Promise<RawList<T>> {
  const body = await client.request(HttpMethod.GET, path, { query });
  if (!isList(body)) throw new ApiException(200, `GET ${path}: unexpected response body`, JSON.stringify(body).slice(0, 200), {});
  return body as RawList<T>;
}
