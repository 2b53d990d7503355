/**
 * Typed access to one custom resource kind: read, status writes and finalizer edits, each with the
 * content type the API server needs (client-node's generated methods pick the wrong one by default).
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { HttpMethod, PatchStrategy, type KubeConfig, type KubernetesObject } from './client-node.js';
import { isNotFound, isStatus } from './errors.js';
import { RawClient, resourcePath } from './raw-client.js';
import type { ResourceMapping } from './restmapper.js';

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

export class CustomResourceClient {
  readonly #raw: RawClient;

  constructor(
    kc: KubeConfig,
    readonly mapping: ResourceMapping,
    private readonly fieldManager: string,
  ) {
    this.#raw = kc.makeApiClient(RawClient);
  }

  #path(namespace: string, name: string): string {
    const { group, version, plural } = this.mapping;
    return `${resourcePath({ group, version, plural, namespace })}/${encodeURIComponent(name)}`;
  }

  /** A JSON patch or merge patch of the object (or of `path`/status) with our field manager. */
  async #patch(path: string, contentType: PatchStrategy, body: unknown): Promise<CustomResource> {
    const query = { fieldManager: this.fieldManager };
    return (await this.#raw.request(HttpMethod.PATCH, path, { query, body, contentType })) as CustomResource;
  }

  /** undefined when the object no longer exists. */
  async get(namespace: string, name: string): Promise<CustomResource | undefined> {
    try {
      return (await this.#raw.request(HttpMethod.GET, this.#path(namespace, name))) as CustomResource;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Merge-patches the status subresource with only the fields this operator owns (null removes a
   * field). A merge patch carries no resourceVersion, so it cannot conflict, and it leaves status
   * fields written by others alone (operator-sdk replaces the whole status). Returns false when the
   * object is gone.
   */
  async patchStatus(namespace: string, name: string, status: Record<string, unknown>): Promise<boolean> {
    try {
      await this.#patch(`${this.#path(namespace, name)}/status`, PatchStrategy.MergePatch, { status });
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
        await this.#patch(this.#path(current.metadata.namespace ?? '', current.metadata.name), PatchStrategy.JsonPatch, body);
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
        await this.#patch(this.#path(namespace, name), PatchStrategy.JsonPatch, body);
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isTestFailed(err) || attempt >= 4) throw err;
        current = await this.get(namespace, name);
      }
    }
  }
}
