/**
 * Any Kubernetes object by apiVersion/kind: read, patch and server-side apply, as plain JSON (see
 * raw-client.ts for why not client-node's typed models). Kinds are resolved through the shared
 * discovery cache, which refetches a group-version on a miss, so CRDs installed later resolve too.
 */
import { HttpMethod, PatchStrategy, type KubeConfig, type KubernetesObject } from './client-node.js';
import { isNotFound, isStatus } from './errors.js';
import { RawClient, resourcePath, type RawRequest } from './raw-client.js';
import type { RestMapper } from './restmapper.js';
import { parseApiVersion } from '../util/group-kind.js';

export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  /** Empty for cluster-scoped objects. */
  readonly namespace: string;
  readonly name: string;
}

export interface JsonPatchOperation {
  readonly op: 'add' | 'replace' | 'remove' | 'test';
  readonly path: string;
  readonly value?: unknown;
}

export interface ApplyOptions {
  readonly fieldManager: string;
  /** Take over fields another manager owns. */
  readonly force: boolean;
  /** Ask the API server what the result would be, changing nothing. */
  readonly dryRun?: boolean;
}

export class ObjectClient {
  readonly #raw: RawClient;
  readonly #identities = new Map<string, ObjectClient>();

  /** With `impersonate`, every request acts as that user (its RBAC applies, not ours). */
  constructor(
    private readonly kc: KubeConfig,
    private readonly mapper: RestMapper,
    private readonly impersonate?: string,
  ) {
    this.#raw = kc.makeApiClient(RawClient);
  }

  /** The same client acting as `user`; itself for undefined. */
  as(user: string | undefined): ObjectClient {
    if (user === undefined || user === this.impersonate) return this;
    let client = this.#identities.get(user);
    if (client === undefined) {
      client = new ObjectClient(this.kc, this.mapper, user);
      this.#identities.set(user, client);
    }
    return client;
  }

  /** undefined when the object does not exist. */
  async get(ref: ObjectRef): Promise<KubernetesObject | undefined> {
    try {
      return (await this.#raw.request(HttpMethod.GET, await this.#path(ref), this.#as({}))) as KubernetesObject;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Deletes the object with background propagation, as `helm uninstall` does: the API server
   * removes it at once (unless it has finalizers) and the garbage collector its dependents. False
   * when it was gone already.
   */
  async delete(ref: ObjectRef): Promise<boolean> {
    try {
      await this.#raw.request(HttpMethod.DELETE, await this.#path(ref), this.#as({ query: { propagationPolicy: 'Background' } }));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /**
   * JSON merge patch of an existing object; never creates one. With `metadata.resourceVersion` in
   * the body it is also a compare-and-swap. Resolves with the patched object, or undefined when
   * the object is gone or changed.
   */
  async mergePatch(body: KubernetesObject, fieldManager: string): Promise<KubernetesObject | undefined> {
    try {
      const path = await this.#path(refOf(body));
      return (await this.#raw.request(
        HttpMethod.PATCH,
        path,
        this.#as({ query: { fieldManager }, body, contentType: PatchStrategy.MergePatch }),
      )) as KubernetesObject;
    } catch (err) {
      if (isNotFound(err) || isStatus(err, 409)) return undefined;
      throw err;
    }
  }

  /**
   * Replaces `metadata.managedFields` of the object at `resourceVersion` (a JSON patch with a
   * `test`, so a concurrent change wins). Resolves with the updated object, or undefined when
   * the object is gone or changed since.
   */
  async replaceManagedFields(
    ref: ObjectRef,
    resourceVersion: string,
    managedFields: readonly unknown[],
    fieldManager: string,
  ): Promise<KubernetesObject | undefined> {
    const ops: JsonPatchOperation[] = [
      { op: 'test', path: '/metadata/resourceVersion', value: resourceVersion },
      { op: 'replace', path: '/metadata/managedFields', value: managedFields },
    ];
    return this.jsonPatch(ref, ops, fieldManager);
  }

  /**
   * A JSON patch (RFC 6902). Resolves with the patched object, or undefined when the object is
   * gone or the patch does not apply (a failed `test`, a path that is not there).
   */
  async jsonPatch(ref: ObjectRef, ops: readonly JsonPatchOperation[], fieldManager: string): Promise<KubernetesObject | undefined> {
    try {
      return (await this.#raw.request(
        HttpMethod.PATCH,
        await this.#path(ref),
        this.#as({ query: { fieldManager }, body: ops, contentType: PatchStrategy.JsonPatch }),
      )) as KubernetesObject;
    } catch (err) {
      // A failed `test` is 422 (older servers: 409).
      if (isNotFound(err) || isStatus(err, 409) || isStatus(err, 422)) return undefined;
      throw err;
    }
  }

  /** Server-side apply: creates the object or updates the fields in `body` owned by `fieldManager`. */
  async apply(body: KubernetesObject, options: ApplyOptions): Promise<KubernetesObject> {
    const query = {
      fieldManager: options.fieldManager,
      force: String(options.force),
      ...(options.dryRun === true ? { dryRun: 'All' } : {}),
    };
    return (await this.#raw.request(
      HttpMethod.PATCH,
      await this.#path(refOf(body)),
      this.#as({ query, body, contentType: PatchStrategy.ServerSideApply }),
    )) as KubernetesObject;
  }

  #as(req: RawRequest): RawRequest {
    return this.impersonate === undefined ? req : { ...req, impersonate: this.impersonate };
  }

  async #path(ref: ObjectRef): Promise<string> {
    const mapping = await this.mapper.mapping({ ...parseApiVersion(ref.apiVersion), kind: ref.kind });
    const namespace = mapping.namespaced ? ref.namespace : '';
    return `${resourcePath({ group: mapping.group, version: mapping.version, plural: mapping.plural, namespace })}/${encodeURIComponent(ref.name)}`;
  }
}

function refOf(obj: KubernetesObject): ObjectRef {
  return {
    apiVersion: obj.apiVersion ?? '',
    kind: obj.kind ?? '',
    namespace: obj.metadata?.namespace ?? '',
    name: obj.metadata?.name ?? '',
  };
}
