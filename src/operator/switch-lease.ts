/**
 * A Lease in the operator's own namespace used as a switch board: its annotations carry what the
 * platform decides for a kind (a rollout's pause, plan approvals). Tenants who may create CRs have
 * no rights there, and the operator already holds the Lease verbs there for leader election. Held
 * CRs look often and the annotations change rarely, so a read is reused for a short while.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { HttpMethod, PatchStrategy } from '../k8s/client-node.js';
import { isNotFound } from '../k8s/errors.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';

/** How long a read of the annotations is reused. */
const READ_TTL_MS = 2_000;

export interface SwitchLeaseState {
  readonly resourceVersion?: string;
  readonly annotations: Readonly<Record<string, string>>;
}

export class SwitchLease {
  readonly #raw: RawClient;
  readonly #collection: string;
  readonly #name: string;
  #read: { atMs: number; annotations: Promise<Readonly<Record<string, string>>> } | undefined;

  constructor(kubeConfig: KubeConfig, namespace: string, name: string) {
    this.#raw = kubeConfig.makeApiClient(RawClient);
    this.#collection = resourcePath({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace });
    this.#name = name;
  }

  /** The annotations as read at most READ_TTL_MS ago ({} while the Lease does not exist). */
  annotations(): Promise<Readonly<Record<string, string>>> {
    const now = Date.now();
    if (this.#read === undefined || now - this.#read.atMs > READ_TTL_MS) {
      const annotations = this.read().then((lease) => lease?.annotations ?? {});
      // A failed read is not kept: the next look asks again.
      annotations.catch(() => {
        this.#read = undefined;
      });
      this.#read = { atMs: now, annotations };
    }
    return this.#read.annotations;
  }

  /** The Lease as it is now; undefined when it does not exist. */
  async read(): Promise<SwitchLeaseState | undefined> {
    try {
      const lease = (await this.#raw.request(HttpMethod.GET, this.#path())) as {
        metadata?: { resourceVersion?: string; annotations?: Readonly<Record<string, string>> };
      };
      const { resourceVersion, annotations } = lease.metadata ?? {};
      return { ...(resourceVersion === undefined ? {} : { resourceVersion }), annotations: annotations ?? {} };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Sets `annotations` on the Lease `current` says exists, or creates it. With `guarded`, the
   * merge patch carries `current`'s resourceVersion, so a concurrent write fails (409) instead of
   * being lost.
   */
  async write(annotations: Record<string, string>, current: SwitchLeaseState | undefined, o: { guarded?: boolean } = {}): Promise<void> {
    if (current === undefined) {
      await this.#raw.request(HttpMethod.POST, this.#collection, { body: { metadata: { name: this.#name, annotations }, spec: {} } });
    } else {
      const guard = o.guarded === true && current.resourceVersion !== undefined ? { resourceVersion: current.resourceVersion } : {};
      await this.#raw.request(HttpMethod.PATCH, this.#path(), {
        body: { metadata: { ...guard, annotations } },
        contentType: PatchStrategy.MergePatch,
      });
    }
    this.#read = undefined;
  }

  #path(): string {
    return `${this.#collection}/${encodeURIComponent(this.#name)}`;
  }
}
