/**
 * Maps a group/version/kind to its REST resource (plural, scope) through API discovery, with a
 * per-group-version cache that is refetched when a kind misses (a CRD installed after start): at
 * once for a kind's first miss, then at most once per `refreshIntervalMs` (see refetchOnMiss).
 */
import type { V1APIResource, V1APIResourceList } from '@kubernetes/client-node';
import { HttpMethod, type KubeConfig } from './client-node.js';
import { isNotFound } from './errors.js';
import { RawClient } from './raw-client.js';
import { apiVersionOf, parseApiVersion } from '../util/group-kind.js';

export interface GroupVersionKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

export interface ResourceMapping extends GroupVersionKind {
  readonly plural: string;
  readonly namespaced: boolean;
}

export class NoKindMatchError extends Error {
  override readonly name = 'NoKindMatchError';
  constructor(readonly gvk: GroupVersionKind) {
    super(`no resource of kind "${gvk.kind}" is served at ${apiVersionOf(gvk)}: is its CustomResourceDefinition installed?`);
  }
}

/**
 * Pure: whether a lookup that missed `kind` refetches its group-version. A kind missing for the
 * first time may have just been created (helm installs a chart's crds/ right before the objects
 * that use them, maybe in a group-version fetched a moment earlier for other kinds): refetch at
 * once, unless this very lookup fetched the list. A kind that keeps missing refetches at most once
 * per `intervalMs`, so a kind that is not served costs one discovery request per interval.
 */
export function refetchOnMiss(o: {
  readonly justFetched: boolean;
  readonly lastRefetchAt: number | undefined;
  readonly now: number;
  readonly intervalMs: number;
}): boolean {
  if (o.justFetched) return false;
  return o.lastRefetchAt === undefined || o.now - o.lastRefetchAt >= o.intervalMs;
}

export class RestMapper {
  readonly #raw: RawClient;
  /** apiVersion → its resources (undefined: the API server does not serve that group-version). */
  readonly #cache = new Map<string, V1APIResourceList | undefined>();
  /** `apiVersion/kind` → when its last miss refetched the group-version. */
  readonly #misses = new Map<string, number>();

  constructor(
    kc: KubeConfig,
    private readonly refreshIntervalMs = 5_000,
    private readonly now: () => number = Date.now,
  ) {
    this.#raw = kc.makeApiClient(RawClient);
  }

  /** @throws NoKindMatchError when the API server does not serve the kind. */
  async mapping(gvk: GroupVersionKind): Promise<ResourceMapping> {
    const first = await this.#lookup(gvk, false);
    if (first.mapping !== undefined) return first.mapping;
    const key = `${apiVersionOf(gvk)}/${gvk.kind}`;
    const now = this.now();
    if (refetchOnMiss({ justFetched: first.fetched, lastRefetchAt: this.#misses.get(key), now, intervalMs: this.refreshIntervalMs })) {
      this.#misses.set(key, now);
      const refetched = await this.#lookup(gvk, true);
      if (refetched.mapping !== undefined) {
        this.#misses.delete(key);
        return refetched.mapping;
      }
    }
    throw new NoKindMatchError(gvk);
  }

  /**
   * The kind and scope of a resource (its plural) as discovery serves it; undefined when the API
   * server does not serve it. A miss refetches as {@link mapping} does.
   */
  async scope(group: string, version: string, plural: string): Promise<{ kind: string; namespaced: boolean } | undefined> {
    const apiVersion = apiVersionOf({ group, version });
    const find = (list: V1APIResourceList | undefined): V1APIResource | undefined => list?.resources.find((r) => r.name === plural);
    const first = await this.#resources(apiVersion, false);
    let resource = find(first.list);
    if (resource === undefined) {
      const key = `${apiVersion}/resource:${plural}`;
      const now = this.now();
      if (refetchOnMiss({ justFetched: first.fetched, lastRefetchAt: this.#misses.get(key), now, intervalMs: this.refreshIntervalMs })) {
        this.#misses.set(key, now);
        resource = find((await this.#resources(apiVersion, true)).list);
      }
    }
    return resource === undefined ? undefined : { kind: resource.kind, namespaced: resource.namespaced };
  }

  async #lookup(gvk: GroupVersionKind, refetch: boolean): Promise<{ mapping?: ResourceMapping; fetched: boolean }> {
    const { list, fetched } = await this.#resources(apiVersionOf(gvk), refetch);
    const resource = list?.resources.find((r) => r.kind === gvk.kind && !r.name.includes('/'));
    return resource === undefined ? { fetched } : { mapping: { ...gvk, plural: resource.name, namespaced: resource.namespaced }, fetched };
  }

  /** The group-version's resources, from the cache unless `refetch` or never fetched; `fetched` says which. */
  async #resources(apiVersion: string, refetch: boolean): Promise<{ list: V1APIResourceList | undefined; fetched: boolean }> {
    if (this.#cache.has(apiVersion) && !refetch) return { list: this.#cache.get(apiVersion), fetched: false };
    const { group, version } = parseApiVersion(apiVersion);
    let list: V1APIResourceList | undefined;
    try {
      list = (await this.#raw.request(HttpMethod.GET, group === '' ? `/api/${version}` : `/apis/${group}/${version}`)) as V1APIResourceList;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.#cache.set(apiVersion, list);
    return { list, fetched: true };
  }
}
