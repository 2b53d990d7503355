/**
 * The verdict after a fault: every CR converged to its spec (Deployed=True for its generation, the
 * spec's values in the Deployment), `helm list -a -A` (the real helm) shows no pending-* release, no
 * release without its CR, no CR lost, and the operator idles.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AppsV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { NGINX, type CR } from '../../support/operator.js';
import { cpuUse } from './processes.js';

const run = promisify(execFile);

/** What the tests put in a CR's spec, and how it shows in the Deployment. */
export interface FleetSpec {
  readonly replicaCount: number;
  readonly podAnnotations: Record<string, string>;
}

export const specFor = (rev: number, replicaCount = 0): FleetSpec => ({ replicaCount, podAnnotations: { 'chaos.example.com/rev': String(rev) } });

/** The nginx chart's Deployment name for release `name` (see its nginx.fullname helper). */
export const deploymentName = (release: string): string => (release.includes('nginx') ? release : `${release}-nginx`);

export interface HelmRelease {
  readonly name: string;
  readonly namespace: string;
  readonly status: string;
  readonly revision: string;
}

export async function helmListAll(): Promise<HelmRelease[]> {
  const { stdout } = await run(inject('helmBin'), ['list', '-a', '-A', '-o', 'json', '--kubeconfig', inject('kubeconfigPath')], {
    timeout: 20_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(stdout) as HelmRelease[];
}

/** The CRs a scenario owns and the spec each should converge to (undefined: deleted). */
export class Fleet {
  readonly #want = new Map<string, FleetSpec | undefined>();
  readonly namespaces = new Set<string>();
  readonly #custom: CustomObjectsApi;
  readonly #apps: AppsV1Api;

  constructor(kc: KubeConfig) {
    this.#custom = kc.makeApiClient(CustomObjectsApi);
    this.#apps = kc.makeApiClient(AppsV1Api);
  }

  #ref(namespace: string) {
    return { group: NGINX.group, version: NGINX.version, plural: NGINX.plural, namespace };
  }

  async create(namespace: string, name: string, spec: FleetSpec): Promise<void> {
    this.namespaces.add(namespace);
    this.#want.set(`${namespace}/${name}`, spec);
    const body = { apiVersion: `${NGINX.group}/${NGINX.version}`, kind: NGINX.kind, metadata: { name, namespace }, spec };
    await this.#custom.createNamespacedCustomObject({ ...this.#ref(namespace), body });
  }

  /** Replaces the spec (a merge patch would keep stale annotation keys). */
  async setSpec(namespace: string, name: string, spec: FleetSpec): Promise<void> {
    this.#want.set(`${namespace}/${name}`, spec);
    const cr = (await this.#custom.getNamespacedCustomObject({ ...this.#ref(namespace), name })) as CR;
    await this.#custom.replaceNamespacedCustomObject({ ...this.#ref(namespace), name, body: { ...cr, spec } });
  }

  async delete(namespace: string, name: string): Promise<void> {
    this.#want.set(`${namespace}/${name}`, undefined);
    await this.#custom.deleteNamespacedCustomObject({ ...this.#ref(namespace), name });
  }

  /** Every CR of a namespace that is being deleted is expected gone with it. */
  forgetNamespace(namespace: string): void {
    for (const key of this.#want.keys()) if (key.startsWith(`${namespace}/`)) this.#want.set(key, undefined);
  }

  /** Names of the CRs of `namespace` that should exist, oldest first. */
  names(namespace: string): string[] {
    return [...this.#want].filter(([key, spec]) => spec !== undefined && key.startsWith(`${namespace}/`)).map(([key]) => key.slice(namespace.length + 1));
  }

  get size(): number {
    return [...this.#want.values()].filter((s) => s !== undefined).length;
  }

  /** What keeps the fleet from the verdict right now; empty when it holds. */
  async problems(): Promise<string[]> {
    const problems: string[] = [];
    const crs = new Map<string, CR>();
    const deployments = new Map<string, { replicas: number | undefined; annotations: Record<string, string> }>();
    for (const ns of this.namespaces) {
      const list = (await this.#custom.listNamespacedCustomObject(this.#ref(ns))) as { items: CR[] };
      for (const cr of list.items) crs.set(`${ns}/${cr.metadata.name}`, cr);
      const ds = await this.#apps.listNamespacedDeployment({ namespace: ns });
      for (const d of ds.items) {
        deployments.set(`${ns}/${d.metadata?.name ?? ''}`, { replicas: d.spec?.replicas, annotations: d.spec?.template.metadata?.annotations ?? {} });
      }
    }
    const releases = (await helmListAll()).filter((r) => this.namespaces.has(r.namespace));
    for (const r of releases) {
      const key = `${r.namespace}/${r.name}`;
      if (r.status.startsWith('pending-')) problems.push(`release ${key} is ${r.status}`);
      if (this.#want.get(key) === undefined) problems.push(`release ${key} (${r.status}) has no CR: orphaned`);
      else if (r.status !== 'deployed') problems.push(`release ${key} is ${r.status}`);
    }
    for (const [key, spec] of this.#want) {
      const cr = crs.get(key);
      if (spec === undefined) {
        if (cr !== undefined) problems.push(`CR ${key} should be gone${cr.metadata.deletionTimestamp === undefined ? '' : ' (deleting)'}`);
        continue;
      }
      if (cr === undefined) {
        problems.push(`CR ${key} is lost`);
        continue;
      }
      const deployed = cr.status?.conditions?.find((c) => c.type === 'Deployed');
      if (deployed?.status !== 'True') problems.push(`CR ${key}: Deployed=${deployed?.status ?? 'unset'} ${deployed?.reason ?? ''} ${deployed?.message ?? ''}`);
      else if (cr.status?.observedGeneration !== cr.metadata.generation) problems.push(`CR ${key}: observedGeneration ${cr.status?.observedGeneration} of ${cr.metadata.generation}`);
      if (!releases.some((r) => `${r.namespace}/${r.name}` === key)) problems.push(`CR ${key} has no release`);
      const [ns, name] = key.split('/') as [string, string];
      const d = deployments.get(`${ns}/${deploymentName(name)}`);
      if (d === undefined) problems.push(`CR ${key}: no Deployment`);
      else if (d.replicas !== spec.replicaCount || Object.entries(spec.podAnnotations).some(([k, v]) => d.annotations[k] !== v)) {
        problems.push(`CR ${key}: Deployment has replicas=${d.replicas} ${JSON.stringify(d.annotations)}, spec wants ${JSON.stringify(spec)}`);
      }
    }
    return problems;
  }

  /** Waits (bounded) for the verdict; resolves with the ms it took, rejects listing what is off. */
  async converge(timeoutMs: number, since = Date.now()): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    let last: string[] = ['not checked yet'];
    while (Date.now() < deadline) {
      try {
        last = await this.problems();
        if (last.length === 0) return Date.now() - since;
      } catch (err) {
        last = [`cannot check: ${(err as Error).message}`];
      }
      await new Promise((r) => setTimeout(r, 1_000));
    }
    throw new Error(`no convergence within ${timeoutMs} ms:\n  ${last.slice(0, 20).join('\n  ')}${last.length > 20 ? `\n  … ${last.length - 20} more` : ''}`);
  }
}

/** The operator `pid` is idle: under 10 % of a core over a few seconds after convergence. */
export async function expectIdle(pid: number, ms = 4_000): Promise<number> {
  const use = await cpuUse(pid, ms);
  if (use > 0.1) throw new Error(`operator ${pid} uses ${(use * 100).toFixed(0)}% of a core after convergence: a hot loop`);
  return use;
}
