/** The cluster side of the OLM commands: typed-enough access to OLM's objects through the raw client. */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { HttpMethod, type KubeConfig, type KubernetesObject } from '../k8s/client-node.js';
import { isNotFound } from '../k8s/errors.js';
import { ObjectClient } from '../k8s/objects.js';
import { RawClient, resourcePath, type ResourceRef } from '../k8s/raw-client.js';
import { RestMapper } from '../k8s/restmapper.js';

export const OLM_GROUP = 'operators.coreos.com';
export const FIELD_MANAGER = 'helm-operator-olm';

export const olmResource = (plural: string, namespace?: string, version: 'v1' | 'v1alpha1' = 'v1alpha1'): ResourceRef => ({
  group: OLM_GROUP,
  version,
  plural,
  ...(namespace === undefined ? {} : { namespace }),
});

export interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

/** The status fields OLM's objects report that these commands read. */
export interface ObjStatus {
  readonly [field: string]: unknown;
  readonly phase?: string;
  readonly reason?: string;
  readonly message?: string;
  readonly conditions?: Condition[];
  readonly installedCSV?: string;
  readonly currentCSV?: string;
}

export type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: ObjStatus };

export class Cluster {
  readonly raw: RawClient;
  readonly objects: ObjectClient;

  constructor(readonly kc: KubeConfig) {
    this.raw = kc.makeApiClient(RawClient);
    this.objects = new ObjectClient(kc, new RestMapper(kc));
  }

  get server(): string {
    return this.kc.getCurrentCluster()?.server ?? '';
  }

  /** The context's namespace, else `default` (kubectl's rule). */
  get namespace(): string {
    const ctx = this.kc.getContextObject(this.kc.getCurrentContext());
    return ctx?.namespace ?? 'default';
  }

  async get(ref: ResourceRef, name: string): Promise<Obj | undefined> {
    try {
      return (await this.raw.request(HttpMethod.GET, `${resourcePath(ref)}/${encodeURIComponent(name)}`)) as Obj;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Every object of a resource (an unserved resource is an empty list). */
  async list(ref: ResourceRef, labelSelector?: string): Promise<Obj[]> {
    try {
      const list = (await this.raw.request(HttpMethod.GET, resourcePath(ref), { query: { labelSelector } })) as { items: Obj[] };
      return list.items;
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
  }

  /** Deletes in the background (dependents by the garbage collector); true when it existed. */
  async delete(ref: ResourceRef, name: string): Promise<boolean> {
    try {
      await this.raw.request(HttpMethod.DELETE, `${resourcePath(ref)}/${encodeURIComponent(name)}`, {
        body: { propagationPolicy: 'Background' },
      });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  apply(obj: KubernetesObject): Promise<KubernetesObject> {
    return this.objects.apply(obj, { fieldManager: FIELD_MANAGER, force: true });
  }

  /**
   * Nodes that run no containers: kwok's fake nodes (the local control plane). There OLM's
   * operators and catalogs run as local processes instead of pods.
   */
  async runsPods(): Promise<boolean> {
    const nodes = await this.list({ group: '', version: 'v1', plural: 'nodes' });
    return nodes.some((n) => n.metadata?.annotations?.['kwok.x-k8s.io/node'] !== 'fake');
  }

  /** This context alone, in a file of its own: processes left running keep talking to this cluster when the user switches context. */
  async writeKubeconfig(dir: string): Promise<string> {
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, 'kubeconfig');
    await writeFile(file, this.kc.exportConfig(), { mode: 0o600 });
    await chmod(file, 0o600);
    return file;
  }
}

/** Polls `check` every `intervalMs` until it yields a value or `timeoutMs` passes (then undefined). */
export async function poll<T>(check: () => Promise<T | undefined>, timeoutMs: number, intervalMs = 1000): Promise<T | undefined> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() >= until) return undefined;
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, Math.max(0, until - Date.now()))));
  }
}
