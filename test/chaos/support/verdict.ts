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
import { replaceSpec } from './harness.js';
import { cpuUse } from './processes.js';

const run = promisify(execFile);

/** What the tests put in a CR's spec, and how it shows in the Deployment. */
export interface FleetSpec {
  readonly replicaCount: number;
  readonly podAnnotations: Record<string, string>;
}

export const specFor = (rev: number, replicaCount = 0): FleetSpec => ({
  replicaCount,
  podAnnotations: { 'chaos.example.com/rev': String(rev) },
});

/** The nginx chart's Deployment name for release `name` (see its nginx.fullname helper). */
export function deploymentName(release: string, nameOverride?: unknown): string {
  const name = typeof nameOverride === 'string' && nameOverride !== '' ? nameOverride : 'nginx';
  return release.includes(name) ? release : `${release}-${name}`;
}

export interface HelmRelease {
  readonly name: string;
  readonly namespace: string;
  readonly status: string;
  readonly revision: string;
}

let listArgs: Promise<string[]> | undefined;

/** `helm list -a -A` (helm 3); helm 4 dropped `-a` and lists every status by default. Both page at 256 unless told. */
async function helmListArgs(): Promise<string[]> {
  listArgs ??= run(inject('helmBin'), ['version', '--short']).then(({ stdout }) =>
    stdout.startsWith('v3.') ? ['list', '-a', '-A'] : ['list', '-A'],
  );
  return [...(await listArgs), '--max', '100000', '-o', 'json', '--kubeconfig', inject('kubeconfigPath')];
}

/** Every release in every namespace and status, by the real helm. */
export async function helmListAll(): Promise<HelmRelease[]> {
  const { stdout } = await run(inject('helmBin'), await helmListArgs(), {
    timeout: 20_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(stdout) as HelmRelease[];
}

interface DeploymentView {
  readonly replicas: number | undefined;
  readonly annotations: Record<string, string>;
}

interface Snapshot {
  readonly crs: Map<string, CR>;
  readonly deployments: Map<string, DeploymentView>;
  readonly releases: HelmRelease[];
}

function releaseProblems(r: HelmRelease, hasCr: boolean): string[] {
  const key = `${r.namespace}/${r.name}`;
  if (r.status.startsWith('pending-')) return [`release ${key} is ${r.status}`];
  if (!hasCr) return [`release ${key} (${r.status}) has no CR: orphaned`];
  return r.status === 'deployed' ? [] : [`release ${key} is ${r.status}`];
}

function crProblems(key: string, spec: FleetSpec | undefined, snap: Snapshot): string[] {
  const cr = snap.crs.get(key);
  if (spec === undefined) {
    if (cr !== undefined) return [`CR ${key} should be gone${cr.metadata.deletionTimestamp === undefined ? '' : ' (deleting)'}`];
    // Its release's objects went with it (helm uninstall deletes them before the release record).
    const [namespace = '', name = ''] = key.split('/');
    return snap.deployments.has(`${namespace}/${deploymentName(name)}`) ? [`CR ${key} is gone but its Deployment is left`] : [];
  }
  if (cr === undefined) return [`CR ${key} is lost`];
  const problems = statusProblems(key, cr);
  if (!snap.releases.some((r) => `${r.namespace}/${r.name}` === key)) problems.push(`CR ${key} has no release`);
  problems.push(...deploymentProblems(key, spec, snap.deployments.get(`${cr.metadata.namespace}/${deploymentName(cr.metadata.name)}`)));
  return problems;
}

function statusProblems(key: string, cr: CR): string[] {
  const deployed = cr.status?.conditions?.find((c) => c.type === 'Deployed');
  if (deployed === undefined) return [`CR ${key}: no Deployed condition`];
  if (deployed.status !== 'True') return [`CR ${key}: Deployed=${deployed.status} ${deployed.reason} ${deployed.message}`];
  const observed = cr.status?.observedGeneration;
  return observed === cr.metadata.generation
    ? []
    : [`CR ${key}: observedGeneration ${String(observed)} of ${String(cr.metadata.generation)}`];
}

function deploymentProblems(key: string, spec: FleetSpec, d: DeploymentView | undefined): string[] {
  if (d === undefined) return [`CR ${key}: no Deployment`];
  const matches = d.replicas === spec.replicaCount && Object.entries(spec.podAnnotations).every(([k, v]) => d.annotations[k] === v);
  return matches
    ? []
    : [`CR ${key}: Deployment has replicas=${String(d.replicas)} ${JSON.stringify(d.annotations)}, spec wants ${JSON.stringify(spec)}`];
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
    await replaceSpec(this.#custom, namespace, name, spec);
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
    return [...this.#want]
      .filter(([key, spec]) => spec !== undefined && key.startsWith(`${namespace}/`))
      .map(([key]) => key.slice(namespace.length + 1));
  }

  get size(): number {
    return [...this.#want.values()].filter((s) => s !== undefined).length;
  }

  /** What keeps the fleet from the verdict right now; empty when it holds. */
  async problems(): Promise<string[]> {
    const snap = await this.#snapshot();
    const problems = snap.releases.flatMap((r) => releaseProblems(r, this.#want.get(`${r.namespace}/${r.name}`) !== undefined));
    for (const [key, spec] of this.#want) problems.push(...crProblems(key, spec, snap));
    return problems;
  }

  async #snapshot(): Promise<Snapshot> {
    const crs = new Map<string, CR>();
    const deployments = new Map<string, DeploymentView>();
    for (const ns of this.namespaces) {
      const list = (await this.#custom.listNamespacedCustomObject(this.#ref(ns))) as { items: CR[] };
      for (const cr of list.items) crs.set(`${ns}/${cr.metadata.name}`, cr);
      const ds = await this.#apps.listNamespacedDeployment({ namespace: ns });
      for (const d of ds.items) {
        deployments.set(`${ns}/${d.metadata?.name ?? ''}`, {
          replicas: d.spec?.replicas,
          annotations: d.spec?.template.metadata?.annotations ?? {},
        });
      }
    }
    const releases = (await helmListAll()).filter((r) => this.namespaces.has(r.namespace));
    return { crs, deployments, releases };
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
    throw new Error(
      `no convergence within ${timeoutMs} ms:\n  ${last.slice(0, 20).join('\n  ')}${last.length > 20 ? `\n  … ${last.length - 20} more` : ''}`,
    );
  }
}

/**
 * The operator `pid` goes idle after convergence: under 10 % of a core over one of up to `windows`
 * windows of a few seconds. Convergence is read from status, so the last events (dependents'
 * status, the status writes' own watch events) may still be handled in the first window; a hot loop
 * never idles.
 */
export async function expectIdle(pid: number, ms = 4_000, windows = 5): Promise<number> {
  const seen: number[] = [];
  for (let i = 0; i < windows; i++) {
    const use = await cpuUse(pid, ms);
    if (use <= 0.1) return use;
    seen.push(use);
  }
  throw new Error(
    `operator ${pid} never idles after convergence (a hot loop): ${seen.map((u) => `${(u * 100).toFixed(0)}%`).join(', ')} of a core over ${windows} windows of ${ms} ms`,
  );
}
