/**
 * The admin's switch over a kind's rollout: a Lease `rollout.<kind>.<group>` in the operator's
 * own namespace whose annotation pauses it (docs/adr/0056). Tenants who may create CRs have no
 * rights there, so no CR can pause, resume or speed a rollout; the operator already holds the
 * Lease verbs in that namespace for leader election, so no new RBAC is needed. `helm-operator
 * rollout pause|resume` writes it, every replica reads it: a new leader sees the same switch.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { HttpMethod } from '../k8s/client-node.js';
import { isNotFound } from '../k8s/errors.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import type { RolloutControlPort } from '../reconciler/index.js';

export const ROLLOUT_PAUSED_ANNOTATION = 'helm.sdk.operatorframework.io/rollout-paused';

/** How long a read of the switch is reused: waiting CRs look often, the switch changes rarely. */
const READ_TTL_MS = 2_000;

export function rolloutLeaseName(kind: string, group: string): string {
  return group === '' ? `rollout.${kind.toLowerCase()}` : `rollout.${kind.toLowerCase()}.${group}`;
}

interface LeaseMeta {
  readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> };
}

export class RolloutControl implements RolloutControlPort {
  readonly #raw: RawClient;
  readonly #collection: string;
  readonly #name: string;
  #read: { atMs: number; paused: Promise<boolean> } | undefined;

  constructor(kubeConfig: KubeConfig, namespace: string, kind: { kind: string; group: string }) {
    this.#raw = kubeConfig.makeApiClient(RawClient);
    this.#collection = resourcePath({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace });
    this.#name = rolloutLeaseName(kind.kind, kind.group);
  }

  paused(): Promise<boolean> {
    const now = Date.now();
    if (this.#read === undefined || now - this.#read.atMs > READ_TTL_MS) {
      const paused = this.#get().then((lease) => lease?.metadata?.annotations?.[ROLLOUT_PAUSED_ANNOTATION] === 'true');
      // A failed read is not kept: the next look asks again.
      paused.catch(() => {
        this.#read = undefined;
      });
      this.#read = { atMs: now, paused };
    }
    return this.#read.paused;
  }

  /** Pauses or resumes (creates the Lease on first use). */
  async set(paused: boolean): Promise<void> {
    const annotations = { [ROLLOUT_PAUSED_ANNOTATION]: paused ? 'true' : 'false' };
    if ((await this.#get()) === undefined) {
      await this.#raw.request(HttpMethod.POST, this.#collection, { body: { metadata: { name: this.#name, annotations }, spec: {} } });
    } else {
      await this.#raw.request(HttpMethod.PATCH, this.#path(), {
        body: { metadata: { annotations } },
        contentType: 'application/merge-patch+json',
      });
    }
    this.#read = undefined;
  }

  async #get(): Promise<LeaseMeta | undefined> {
    try {
      return (await this.#raw.request(HttpMethod.GET, this.#path())) as LeaseMeta;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  #path(): string {
    return `${this.#collection}/${encodeURIComponent(this.#name)}`;
  }
}
