/**
 * Maps a group/version/kind to its REST resource (plural, scope) through API discovery, with a
 * per-group-version cache that is refreshed on a miss (a CRD installed after start) at most once
 * per `refreshIntervalMs`.
 */
import type { V1APIResourceList } from '@kubernetes/client-node';
import { HttpMethod, type KubeConfig } from './client-node.js';
import { isNotFound } from './errors.js';
import { RawClient } from './raw-client.js';

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
    const gv = gvk.group === '' ? gvk.version : `${gvk.group}/${gvk.version}`;
    super(`no resource of kind "${gvk.kind}" is served at ${gv}: is its CustomResourceDefinition installed?`);
  }
}

export const apiVersionOf = (gvk: { group: string; version: string }): string =>
  gvk.group === '' ? gvk.version : `${gvk.group}/${gvk.version}`;

export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

interface CacheEntry {
  readonly fetchedAt: number;
  readonly list?: V1APIResourceList;
}

export class RestMapper {
  readonly #raw: RawClient;
  readonly #cache = new Map<string, CacheEntry>();

  constructor(
    kc: KubeConfig,
    private readonly refreshIntervalMs = 5_000,
    private readonly now: () => number = Date.now,
  ) {
    this.#raw = kc.makeApiClient(RawClient);
  }

  /** @throws NoKindMatchError when the API server does not serve the kind. */
  async mapping(gvk: GroupVersionKind): Promise<ResourceMapping> {
    const found = await this.#lookup(gvk, false);
    if (found !== undefined) return found;
    const refreshed = await this.#lookup(gvk, true);
    if (refreshed !== undefined) return refreshed;
    throw new NoKindMatchError(gvk);
  }

  async #lookup(gvk: GroupVersionKind, refresh: boolean): Promise<ResourceMapping | undefined> {
    const list = await this.#resources(apiVersionOf(gvk), refresh);
    const resource = list?.resources.find((r) => r.kind === gvk.kind && !r.name.includes('/'));
    return resource === undefined ? undefined : { ...gvk, plural: resource.name, namespaced: resource.namespaced };
  }

  async #resources(apiVersion: string, refresh: boolean): Promise<V1APIResourceList | undefined> {
    const cached = this.#cache.get(apiVersion);
    const stale = cached === undefined || (refresh && this.now() - cached.fetchedAt >= this.refreshIntervalMs);
    if (!stale) return cached.list;
    const { group, version } = parseApiVersion(apiVersion);
    let list: V1APIResourceList | undefined;
    try {
      list = (await this.#raw.request(HttpMethod.GET, group === '' ? `/api/${version}` : `/apis/${group}/${version}`)) as V1APIResourceList;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.#cache.set(apiVersion, { fetchedAt: this.now(), ...(list === undefined ? {} : { list }) });
    return list;
  }
}
