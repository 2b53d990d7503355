/**
 * What the scenarios observe on the cluster: the CRs and Deployments of one namespace through
 * watches (so waiting costs no polling requests that would show up in the API server's counters),
 * and the API server's own request counter.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { Informer } from '../../src/runtime/informer.js';

const run = promisify(execFile);

export const NGINX = { group: 'example.com', version: 'v1alpha1', plural: 'nginxes', kind: 'Nginx' } as const;

interface Condition {
  readonly type: string;
  readonly status: string;
}

export const isDeployed = (cr: KubernetesObject): boolean =>
  ((cr as { status?: { conditions?: Condition[] } }).status?.conditions ?? []).some((c) => c.type === 'Deployed' && c.status === 'True');

interface DeploymentLike {
  readonly metadata?: { readonly generation?: number };
  readonly spec?: { readonly replicas?: number };
  readonly status?: {
    readonly observedGeneration?: number;
    readonly replicas?: number;
    readonly updatedReplicas?: number;
    readonly availableReplicas?: number;
  };
}

/**
 * Whether the cluster has finished acting on a Deployment: its controller saw the latest spec, and
 * exactly `spec.replicas` Pods exist, all of the latest ReplicaSet, all available. Until then the
 * controller-manager, the scheduler and kwok are still creating or removing Pods.
 */
export function deploymentSettled(d: KubernetesObject): boolean {
  const { metadata, spec, status } = d as DeploymentLike;
  if (status === undefined || (status.observedGeneration ?? 0) < (metadata?.generation ?? 1)) return false;
  const want = spec?.replicas ?? 1;
  return [status.replicas, status.updatedReplicas, status.availableReplicas].every((n) => (n ?? 0) === want);
}

/** Watches a namespace's Nginx CRs, Deployments and Services; `until` resolves when a predicate over them holds. */
export class NamespaceWatch {
  readonly crs: Informer;
  readonly deployments: Informer;
  readonly services: Informer;
  readonly #waiters = new Set<() => void>();

  constructor(kc: KubeConfig, namespace: string) {
    this.crs = new Informer(kc, { resource: { ...NGINX, namespace } });
    this.deployments = new Informer(kc, { resource: { group: 'apps', version: 'v1', plural: 'deployments', namespace } });
    this.services = new Informer(kc, { resource: { group: '', version: 'v1', plural: 'services', namespace } });
    for (const i of this.#all()) {
      const wake = (): void => {
        for (const w of this.#waiters) w();
      };
      i.onAdd(wake);
      i.onUpdate(wake);
      i.onDelete(wake);
    }
  }

  #all(): Informer[] {
    return [this.crs, this.deployments, this.services];
  }

  async start(): Promise<void> {
    await Promise.all(this.#all().map(async (i) => i.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.#all().map(async (i) => i.stop()));
  }

  /** Resolves with performance.now() at the first event after which `holds()` is true. */
  until(what: string, holds: () => boolean, timeoutMs: number): Promise<number> {
    return untilHolds(this.#waiters, what, holds, timeoutMs);
  }
}

/**
 * Resolves with performance.now() at the first wake-up (a watch event calls every function in
 * `waiters`) after which `holds()` is true; rejects after `timeoutMs`.
 */
export function untilHolds(waiters: Set<() => void>, what: string, holds: () => boolean, timeoutMs: number): Promise<number> {
  if (holds()) return Promise.resolve(performance.now());
  return new Promise<number>((resolve, reject) => {
    const check = (): void => {
      if (!holds()) return;
      done();
      resolve(performance.now());
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`));
    }, timeoutMs);
    const done = (): void => {
      clearTimeout(timer);
      waiters.delete(check);
    };
    waiters.add(check);
  });
}

/**
 * The API server's /metrics text. Tried four times: an API server with two cores' worth of
 * operator behind it can time a TLS handshake out, and a bench that loses its last scrape loses
 * the whole configuration's row.
 */
export async function apiServerMetrics(kubectl: string, kubeconfig: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await run(kubectl, ['--kubeconfig', kubeconfig, 'get', '--raw', '/metrics'], { maxBuffer: 256 * 1024 * 1024 })).stdout;
    } catch (err) {
      if (attempt >= 4) throw err;
      await new Promise((resolve) => setTimeout(resolve, 5_000 * attempt));
    }
  }
}

/** Pure: each sample of metric `name` in /metrics text, with its labels. */
function* samples(metricsText: string, name: string): Generator<{ readonly labels: ReadonlyMap<string, string>; readonly value: number }> {
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const labels = new Map([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1] ?? '', m[2] ?? '']));
    yield { labels, value: Number(line.slice(line.lastIndexOf(' ') + 1)) };
  }
}

/** `apiserver_request_total` by `verb resource`, from the API server's /metrics. */
export async function apiRequests(kubectl: string, kubeconfig: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const { labels, value } of samples(await apiServerMetrics(kubectl, kubeconfig), 'apiserver_request_total')) {
    const sub = labels.get('subresource') ?? '';
    const key = `${labels.get('verb') ?? ''} ${labels.get('resource') ?? ''}${sub === '' ? '' : `/${sub}`}`;
    counts.set(key, (counts.get(key) ?? 0) + value);
  }
  return counts;
}

/** Pure: the WATCH requests open on `resource` (`apiserver_longrunning_requests`), in an API server's /metrics text. */
export function openWatches(metricsText: string, resource: string): number {
  let open = 0;
  for (const { labels, value } of samples(metricsText, 'apiserver_longrunning_requests')) {
    if (labels.get('resource') === resource && labels.get('verb') === 'WATCH') open += value || 0;
  }
  return open;
}

/**
 * Waits until the cluster's controllers watch `resource` (a CRD's plural) while no operator runs:
 * the controller-manager's metadata informer, started at its discovery resync (every 30 s) after the
 * CRD appears. Until then the garbage collector reads the owner named by each dependent's
 * ownerReference with a GET, which the first operator measured would be charged with (about half
 * of N GETs of the CRs in a converge). Returns how long it waited; undefined when it gave up.
 */
export async function controllersWatch(
  kubectl: string,
  kubeconfig: string,
  resource: string,
  timeoutMs = 120_000,
): Promise<number | undefined> {
  const start = Date.now();
  for (;;) {
    if (openWatches(await apiServerMetrics(kubectl, kubeconfig), resource) > 0) return Date.now() - start;
    if (Date.now() - start > timeoutMs) return undefined;
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

/** after − before, per key, leaving out zeros. */
export function delta(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

export const total = (counts: Readonly<Record<string, number>>): number => Object.values(counts).reduce((a, b) => a + b, 0);
