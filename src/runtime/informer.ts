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
 *   does not keep (its `update` carries the new object only);
 * - idle watches held open: client-node ends a watch after 30 s without a byte, so an informer of a
 *   quiet namespace reopened its watch twice a minute (800 requests a minute for 400 informers).
 *   Here the server ends each watch after 5 to 10 minutes (client-go's reflector's choice, spread so
 *   that informers started together do not reopen together) and sends a bookmark about once a
 *   minute, which keeps the inactivity timeout, now 90 s, for a server that stopped answering;
 * - metadata-only LIST and WATCH (the PartialObjectMetadata form), for caches that read labels
 *   only and whose objects carry large payloads (helm's release Secrets).
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
import type { WatchShare } from './watch-share.js';

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
  /**
   * Sharded (docs/adr/0103): only the objects of the share's namespaces are listed, watched and
   * cached; the informer relists when the share changes (deletes for what left, adds for what came).
   */
  readonly share?: WatchShare;
  /**
   * Ask the server for metadata only (`PartialObjectMetadata`): the objects cached and handed to
   * handlers have `apiVersion: meta.k8s.io/v1`, `kind: PartialObjectMetadata` and `metadata`.
   */
  readonly metadataOnly?: boolean;
}

const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
const METADATA_OBJECT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/** The server ends a watch after this long, or up to twice as long (client-go's minWatchTimeout, jittered). */
export const MIN_WATCH_TIMEOUT_S = 300;
/**
 * A watch that has sent nothing for this long is taken for dead and reopened. Above the API
 * server's bookmark interval (one minute, to watches that allow bookmarks) with room for its
 * scheduling, so a live idle watch is never cut.
 */
export const WATCH_INACTIVITY_MS = 90_000;

/** The query parameters that keep a watch open: the server's timeout (`random` in [0, 1)) and bookmarks. */
export function longWatchParams(random: number): Record<string, string> {
  return { timeoutSeconds: String(MIN_WATCH_TIMEOUT_S + Math.floor(random * MIN_WATCH_TIMEOUT_S)), allowWatchBookmarks: 'true' };
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

/** One watch request, as the informer sees it: ended early (with a 410) to relist after a share change. */
interface OpenWatch {
  readonly controller: AbortController;
  readonly end: (err: unknown) => void;
}

/** What the informer's watch asks of it: extra query parameters, what to keep, and where the request stands. */
interface WatchHooks<T> {
  readonly transform: ((obj: T) => T) | undefined;
  /** The Accept header; undefined: client-node's (JSON). */
  readonly accept: string | undefined;
  readonly params: () => Record<string, string>;
  /** false: the object is dropped before ListWatch caches it (client-side sharding). */
  readonly keep: (obj: T) => boolean;
  readonly opened: (w: OpenWatch) => void;
  readonly closed: (w: OpenWatch) => void;
}

/**
 * client-node's Watch, handing ListWatch transformed objects (its cache stores what it is given),
 * with the share's `shardSelector` (server-side sharding) or without the others' objects
 * (client-side), and ended on demand with a 410 Gone, which makes ListWatch relist.
 */
class InformerWatch<T extends KubernetesObject> extends Watch {
  constructor(
    kubeConfig: KubeConfig,
    private readonly hooks: WatchHooks<T>,
  ) {
    super(hooks.accept === undefined ? kubeConfig : accepting(kubeConfig, hooks.accept));
    // Declared private in client-node's types, yet the one way it offers to set the timeout.
    (this as unknown as { requestTimeoutMs: number }).requestTimeoutMs = WATCH_INACTIVITY_MS;
  }

  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    const { transform, keep } = this.hooks;
    // Set from the callbacks below (TypeScript does not follow writes made there).
    const state: { ended: boolean; open?: OpenWatch } = { ended: false };
    // Once: an early end aborts the request, whose own end must not reach ListWatch a second time.
    const endOnce = (err: unknown): void => {
      if (state.ended) return;
      state.ended = true;
      if (state.open !== undefined) this.hooks.closed(state.open);
      done(err);
    };
    const controller = await super.watch(
      path,
      { ...queryParams, ...longWatchParams(Math.random()), ...this.hooks.params() },
      (phase: string, apiObj: unknown, watchObj?: unknown) => {
        // ERROR carries a v1.Status, BOOKMARK only a resourceVersion: nothing to drop.
        if (phase === 'ERROR' || phase === 'BOOKMARK') {
          callback(phase, apiObj, watchObj);
          return;
        }
        const obj = apiObj as T;
        if (phase !== 'DELETED' && !keep(obj)) {
          // Not ours: never cached, but its resourceVersion still moves the watch on.
          callback('BOOKMARK', { metadata: { resourceVersion: obj.metadata?.resourceVersion } }, watchObj);
          return;
        }
        callback(phase, transform === undefined ? obj : transform(obj), watchObj);
      },
      endOnce,
    );
    if (!state.ended) {
      state.open = { controller, end: endOnce };
      this.hooks.opened(state.open);
    }
    return controller;
  }
}

/**
 * `kubeConfig` with `accept` as the Accept header of every request it authenticates: client-node's
 * Watch builds its request from the config and offers no header of its own.
 */
function accepting(kubeConfig: KubeConfig, accept: string): KubeConfig {
  const view = Object.create(kubeConfig) as KubeConfig;
  view.applySecurityAuthentication = async (context) => {
    await kubeConfig.applySecurityAuthentication(context);
    context.setHeaderParam('Accept', accept);
  };
  return view;
}

/** What ListWatch takes for 410 Gone: it forgets its resourceVersion and lists again. */
const relistError = (): Error => Object.assign(new Error('the watched share changed: relist'), { statusCode: 410 });

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
  readonly #share: WatchShare | undefined;
  #unsubscribe: (() => void) | undefined;
  /** Bumped by each change of the share; the cache is current when its last LIST was of the latest. */
  #shareGeneration = 0;
  #listedGeneration = 0;
  #open: OpenWatch | undefined;

  constructor(kubeConfig: KubeConfig, options: InformerOptions<T>) {
    this.path = resourcePath(options.resource);
    this.#clock = options.clock ?? systemClock;
    this.#backoff = new Backoff({ clock: this.#clock, ...options.backoff });
    this.#log = options.log;
    this.#lastSeen = options.trackPrevious === false ? undefined : new Map();
    this.#share = options.share;
    const list = makeListFn<T>(kubeConfig, this.path, {
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      pageSize: options.pageSize ?? 500,
      apiVersion: apiVersionOf(options.resource),
      ...(options.transform === undefined ? {} : { transform: options.transform }),
      shardSelector: this.#serverSelector,
      keep: this.#keeps,
      ...(options.metadataOnly === true ? { accept: METADATA_LIST } : {}),
    });
    const listFn = async (): Promise<KubernetesListObject<T>> => {
      let result: KubernetesListObject<T>;
      // A share that changed while the LIST ran is listed again: ListWatch caches this one snapshot.
      let generation: number;
      do {
        generation = this.#shareGeneration;
        result = await list();
      } while (generation !== this.#shareGeneration);
      this.#listedGeneration = generation;
      this.#listedThisAttempt = true;
      return result;
    };
    const watch = new InformerWatch<T>(kubeConfig, {
      transform: options.transform,
      accept: options.metadataOnly === true ? METADATA_OBJECT : undefined,
      params: (): Record<string, string> => {
        const selector = this.#serverSelector();
        return selector === undefined ? {} : { shardSelector: selector };
      },
      keep: this.#keeps,
      opened: (w) => {
        this.#open = w;
        // A watch resumed from an older LIST (after a failure) must not serve a share it did not list.
        if (this.#listedGeneration !== this.#shareGeneration) this.#relistNow();
      },
      closed: (w) => {
        if (this.#open === w) this.#open = undefined;
      },
    });
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
      this.#unsubscribe ??= this.#share?.onChange(() => {
        this.relist();
      });
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
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    const waiters = this.#syncWaiters;
    this.#syncWaiters = [];
    for (const w of waiters) w.reject(new InformerStoppedError(`informer for ${this.path} stopped before it synced`));
    await this.#inner.stop();
  }

  hasSynced(): boolean {
    return this.#synced;
  }

  /**
   * Whether the cache is being kept current now: it synced and a watch is open. Between a watch's
   * end and the next one (a failure and its backoff, a relist) the cache may lag the server.
   */
  isWatching(): boolean {
    return this.#synced && this.#open !== undefined;
  }

  get(name: string, namespace?: string): T | undefined {
    return this.#inner.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.#inner.list(namespace);
  }

  /** Objects in the cache now (the informer-objects metric). */
  size(): number {
    return this.#inner.list().length;
  }

  /**
   * Whether the cache holds every object of `namespace`: sharded, the namespace is in the share and
   * the cache was listed for the share as it is now (not while a relist is due or running, when a
   * namespace just taken is not in it yet). A reader told no asks the API server instead.
   */
  covers(namespace: string): boolean {
    if (this.#share === undefined || namespace === '') return true;
    return this.#listedGeneration === this.#shareGeneration && this.#share.covers(namespace);
  }

  /**
   * Lists again with the share as it is now (ListWatch then deletes what left it and adds what
   * came): a watch in progress is ended as if the server said 410 Gone, a LIST in progress is
   * repeated, and a watch that opens before the next LIST is ended at once.
   */
  relist(): void {
    this.#shareGeneration++;
    if (this.#open !== undefined) this.#relistNow();
  }

  #relistNow(): void {
    const open = this.#open;
    if (open === undefined) return;
    this.#open = undefined;
    open.controller.abort();
    open.end(relistError());
  }

  /** `server` mode: the share's selector for LIST and WATCH. */
  readonly #serverSelector = (): string | undefined => (this.#share?.mode() === 'server' ? this.#share.selector() : undefined);

  /**
   * Whether an object belongs to the share (cluster-scoped objects always do): in `client` mode the
   * server sent everything; in `server` mode a selector capped in ranges may let others through
   * (shard-selector.ts), and a watch opened before a change of the share runs until its relist.
   */
  readonly #keeps = (obj: T): boolean => {
    const share = this.#share;
    if (share === undefined) return true;
    const namespace = obj.metadata?.namespace ?? '';
    return namespace === '' || share.covers(namespace);
  };

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
  /** Asked for each LIST: KEP-5866's `shardSelector` (server-side sharding); undefined: none. */
  readonly shardSelector?: () => string | undefined;
  /** false: the item is dropped before the transform (client-side sharding). */
  readonly keep?: (obj: T) => boolean;
  /** The Accept header; default JSON. */
  readonly accept?: string;
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
    const { items, last } = await listPages(client, path, options);
    const kind = last.kind?.replace(/List$/, '');
    const transform = options.transform;
    for (const [i, item] of items.entries()) {
      item.apiVersion ??= options.apiVersion;
      if (kind !== undefined) item.kind ??= kind;
      if (transform !== undefined) items[i] = transform(item);
    }
    // ListWatch reads only items and metadata.resourceVersion (the snapshot all pages belong to).
    const metadata: V1ListMeta = { resourceVersion: last.metadata?.resourceVersion };
    return { apiVersion: last.apiVersion, kind: last.kind, metadata, items };
  };
}

/** Every page of a LIST, the items `keep` refuses left out; and the last page (its kind and resourceVersion). */
async function listPages<T extends KubernetesObject>(
  client: RawClient,
  path: string,
  options: ListOptions<T>,
): Promise<{ items: T[]; last: RawList<T> }> {
  const items: T[] = [];
  let continueToken: string | undefined;
  let page: RawList<T>;
  const shardSelector = options.shardSelector?.();
  const keep = options.keep ?? (() => true);
  do {
    const query: Record<string, string | undefined> = {
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      shardSelector,
      limit: String(options.pageSize),
      continue: continueToken,
    };
    page = await getList<T>(client, path, query, options.accept);
    // Others' objects go as each page arrives: never more than one page of them in memory.
    for (const item of page.items) if (keep(item)) items.push(item);
    continueToken = page.metadata?.continue;
  } while (continueToken !== undefined && continueToken !== '');
  return { items, last: page };
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

/** An empty PartialObjectMetadataList arrives with `items: null`. */
function withItems(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || (body as { items?: unknown }).items !== null) return body;
  return { ...body, items: [] };
}

async function getList<T>(
  client: RawClient,
  path: string,
  query: Record<string, string | undefined>,
  accept: string | undefined,
): Promise<RawList<T>> {
  const body = withItems(await client.request(HttpMethod.GET, path, { query, ...(accept === undefined ? {} : { accept }) }));
  if (!isList(body)) throw new ApiException(200, `GET ${path}: unexpected response body`, JSON.stringify(body).slice(0, 200), {});
  return body as RawList<T>;
}
