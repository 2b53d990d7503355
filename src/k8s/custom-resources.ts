/**
 * Typed access to one custom resource kind: read, status writes and finalizer edits, each with the
 * content type the API server needs (client-node's generated methods pick the wrong one by default).
 * What it read or wrote last of each CR is kept (version-memo.ts), so a read of the version the
 * informer cache holds, or of one before our own last write, is answered without a request
 * (ADR 0069, ADR 0071).
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { HttpMethod, PatchStrategy, type KubeConfig, type KubernetesObject } from './client-node.js';
import { isNotFound, isStatus } from './errors.js';
import { RawClient, resourcePath } from './raw-client.js';
import type { ResourceMapping } from './restmapper.js';
import { VersionMemo, type VersionMemoLimits } from './version-memo.js';

export interface CustomResource extends KubernetesObject {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta & { name: string; namespace?: string; uid?: string };
  spec?: unknown;
  status?: Record<string, unknown>;
}

/** A CR as a metadata-only cache keeps it (see runtime/informer.ts keepMetadataOnly). */
export type CachedCustomResource = Pick<CustomResource, 'apiVersion' | 'kind' | 'metadata'>;

/** A JSON patch whose `test` failed (someone else changed the list first): re-read and retry. */
const isTestFailed = (err: unknown): boolean => isStatus(err, 422) || isStatus(err, 409);

const memoKey = (namespace: string, name: string): string => `${namespace}/${name}`;

export class CustomResourceClient {
  readonly #raw: RawClient;
  readonly #memo: VersionMemo<CustomResource>;

  constructor(
    kc: KubeConfig,
    readonly mapping: ResourceMapping,
    private readonly fieldManager: string,
    memoLimits?: VersionMemoLimits,
  ) {
    this.#raw = kc.makeApiClient(RawClient);
    this.#memo = new VersionMemo(memoLimits);
  }

  #path(namespace: string, name: string): string {
    const { group, version, plural } = this.mapping;
    return `${resourcePath({ group, version, plural, namespace })}/${encodeURIComponent(name)}`;
  }

  /** A JSON patch or merge patch of the object (or of `path`/status) with our field manager; the CR as written is kept. */
  async #patch(at: { namespace: string; name: string; status?: true }, contentType: PatchStrategy, body: unknown): Promise<CustomResource> {
    const { namespace, name } = at;
    const query = { fieldManager: this.fieldManager };
    const path = `${this.#path(namespace, name)}${at.status === true ? '/status' : ''}`;
    const written = (await this.#raw.request(HttpMethod.PATCH, path, { query, body, contentType })) as CustomResource;
    this.#memo.remember(memoKey(namespace, name), written);
    return written;
  }

  /**
   * undefined when the object no longer exists. `version`: the resourceVersion the caller's cache
   * holds; when this client last read or wrote that very version, or saw it before its last read or
   * write, that last one is returned without a request.
   */
  async get(namespace: string, name: string, version?: string): Promise<CustomResource | undefined> {
    const key = memoKey(namespace, name);
    const known = this.#memo.recall(key, version);
    if (known !== undefined) return known;
    try {
      const read = (await this.#raw.request(HttpMethod.GET, this.#path(namespace, name))) as CustomResource;
      this.#memo.remember(key, read);
      return read;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.#memo.forget(key);
      return undefined;
    }
  }

  /** Drops what is kept of the CR (it is gone). */
  forget(namespace: string, name: string): void {
    this.#memo.forget(memoKey(namespace, name));
  }

  /**
   * Merge-patches the status subresource with only the fields this operator owns (null removes a
   * field). A merge patch carries no resourceVersion, so it cannot conflict, and it leaves status
   * fields written by others alone (operator-sdk replaces the whole status). Returns false when the
   * object is gone.
   */
  async patchStatus(namespace: string, name: string, status: Record<string, unknown>): Promise<boolean> {
    try {
      await this.#patch({ namespace, name, status: true }, PatchStrategy.MergePatch, { status });
      return true;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      if ((await this.get(namespace, name)) === undefined) return false;
      const { group, plural } = this.mapping;
      throw new Error(
        `cannot write the status of ${this.mapping.kind} ${namespace}/${name}: the CustomResourceDefinition ` +
          `${plural}.${group} has no status subresource (add "subresources: {status: {}}" to version ${this.mapping.version})`,
        { cause: err },
      );
    }
  }

  /** Adds `finalizer` unless present, guarded by a `test` of the current list. */
  async addFinalizer(cr: CachedCustomResource, finalizer: string): Promise<void> {
    let current = cr;
    for (let attempt = 0; ; attempt++) {
      const list = current.metadata.finalizers;
      if (list?.includes(finalizer) === true) return;
      const body =
        list === undefined
          ? [
              { op: 'test', path: '/metadata/finalizers', value: null },
              { op: 'add', path: '/metadata/finalizers', value: [finalizer] },
            ]
          : [
              { op: 'test', path: '/metadata/finalizers', value: list },
              { op: 'add', path: '/metadata/finalizers/-', value: finalizer },
            ];
      try {
        await this.#patch({ namespace: current.metadata.namespace ?? '', name: current.metadata.name }, PatchStrategy.JsonPatch, body);
        return;
      } catch (err) {
        if (!isTestFailed(err) || attempt >= 4) throw err;
        const fresh = await this.get(current.metadata.namespace ?? '', current.metadata.name);
        if (fresh === undefined) throw err;
        current = fresh;
      }
    }
  }

  /**
   * Removes every one of `finalizers` present from this instance of the object (its UID): a vanished
   * object, or one replaced by a new object of the same name, counts as done. The new object's
   * finalizer guards its own release, which this caller knows nothing of.
   */
  async removeFinalizers(cr: CachedCustomResource, finalizers: readonly string[]): Promise<void> {
    const { uid } = cr.metadata;
    let current: CachedCustomResource | undefined = cr;
    for (let attempt = 0; current !== undefined && current.metadata.uid === uid; attempt++) {
      const list = current.metadata.finalizers ?? [];
      const kept = list.filter((f) => !finalizers.includes(f));
      if (kept.length === list.length) return;
      const body = [
        ...(uid === undefined ? [] : [{ op: 'test', path: '/metadata/uid', value: uid }]),
        { op: 'test', path: '/metadata/finalizers', value: list },
        { op: 'replace', path: '/metadata/finalizers', value: kept },
      ];
      const { namespace = '', name } = current.metadata;
      try {
        await this.#patch({ namespace, name }, PatchStrategy.JsonPatch, body);
        // Its last finalizer gone, the CR is about to vanish: nothing of it is worth keeping.
        this.forget(namespace, name);
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isTestFailed(err) || attempt >= 4) throw err;
        current = await this.get(namespace, name);
      }
    }
  }
}
