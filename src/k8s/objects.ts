/**
 * Any Kubernetes object by apiVersion/kind: read and server-side apply. Kinds are resolved through
 * discovery (client-node refetches a group-version's resources on a miss, so CRDs installed later
 * resolve too).
 */
import { KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { isNotFound, isStatus } from './errors.js';

export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  /** Empty for cluster-scoped objects. */
  readonly namespace: string;
  readonly name: string;
}

export interface ApplyOptions {
  readonly fieldManager: string;
  /** Take over fields another manager owns. */
  readonly force: boolean;
  /** Ask the API server what the result would be, changing nothing. */
  readonly dryRun?: boolean;
}

export class ObjectClient {
  readonly #api: KubernetesObjectApi;

  constructor(kc: KubeConfig) {
    this.#api = KubernetesObjectApi.makeApiClient(kc);
  }

  /** undefined when the object does not exist. */
  async get(ref: ObjectRef): Promise<KubernetesObject | undefined> {
    const metadata = ref.namespace === '' ? { name: ref.name } : { name: ref.name, namespace: ref.namespace };
    try {
      return await this.#api.read({ apiVersion: ref.apiVersion, kind: ref.kind, metadata });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * JSON merge patch of an existing object; never creates one. With `metadata.resourceVersion` in
   * the body it is also a compare-and-swap. Resolves false when the object is gone or changed.
   */
  async mergePatch(body: KubernetesObject, fieldManager: string): Promise<boolean> {
    try {
      await this.#api.patch(body, undefined, undefined, fieldManager, undefined, PatchStrategy.MergePatch);
      return true;
    } catch (err) {
      if (isNotFound(err) || isStatus(err, 409)) return false;
      throw err;
    }
  }

  /** Server-side apply: creates the object or updates the fields in `body` owned by `fieldManager`. */
  async apply(body: KubernetesObject, options: ApplyOptions): Promise<KubernetesObject> {
    return this.#api.patch(
      body,
      undefined,
      options.dryRun === true ? 'All' : undefined,
      options.fieldManager,
      options.force,
      PatchStrategy.ServerSideApply,
    );
  }
}
