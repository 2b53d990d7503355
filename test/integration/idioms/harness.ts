/**
 * What the idiom suite reads off the cluster and the operator: release records as helm stored them,
 * release objects by inventory, events, and the operator's /metrics. Everything is read from the
 * real API server and the real operator process; nothing is faked.
 */
import { gunzipSync } from 'node:zlib';
import { CoreV1Api, type CoreV1Event, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { ObjectClient, type ObjectRef } from '../../../src/k8s/objects.js';
import { RestMapper } from '../../../src/k8s/restmapper.js';
import { total } from '../../support/prometheus.js';
import { waitFor } from '../../support/kube.js';
import type { CR } from '../../support/operator.js';
import { scrape } from '../production/support.js';

/** One hook of a stored release, as helm records it. */
export interface StoredHook {
  readonly name: string;
  readonly kind: string;
  readonly events: readonly string[];
  /** helm 3 and 4 write `last_run`; a hook never run has an empty phase. */
  readonly last_run?: { readonly phase?: string };
}

export interface StoredRelease {
  readonly name: string;
  readonly version: number;
  readonly manifest: string;
  readonly hooks?: readonly StoredHook[];
  readonly info?: { readonly status?: string };
}

/** helm's `secret` driver: base64 (inside the Secret's own base64) of gzipped JSON. */
export function decodeRelease(data: string): StoredRelease {
  const raw = Buffer.from(Buffer.from(data, 'base64').toString('utf8'), 'base64');
  const json = raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw;
  return JSON.parse(json.toString('utf8')) as StoredRelease;
}

export class Cluster {
  readonly core: CoreV1Api;
  readonly objects: ObjectClient;

  constructor(kc: KubeConfig) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.objects = new ObjectClient(kc, new RestMapper(kc));
  }

  /** The storage Secrets of `release` (helm's `secret` driver), by revision. */
  async releaseSecrets(
    namespace: string,
    release: string,
  ): Promise<{ revision: number; bytes: number; resourceVersion: string; record: () => StoredRelease }[]> {
    const list = await this.core.listNamespacedSecret({ namespace, labelSelector: `owner=helm,name=${release}` });
    return list.items
      .map((s) => {
        const data = s.data?.release ?? '';
        return {
          revision: Number(s.metadata?.labels?.version),
          // The API server limits a Secret's decoded data: what helm's base64 text takes.
          bytes: Buffer.from(data, 'base64').length,
          resourceVersion: s.metadata?.resourceVersion ?? '',
          record: () => decodeRelease(data),
        };
      })
      .sort((a, b) => a.revision - b.revision);
  }

  async get(ref: ObjectRef): Promise<KubernetesObject | undefined> {
    return this.objects.get(ref);
  }

  /** `Kind/namespace/name` → resourceVersion of every object of the CR's inventory (missing ones: "absent"). */
  async resourceVersions(cr: CR | undefined): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const e of cr?.status?.inventory ?? []) {
      const live = await this.objects.get(e);
      out[`${e.kind}/${e.namespace}/${e.name}`] = live?.metadata?.resourceVersion ?? 'absent';
    }
    return out;
  }

  /** The inventory objects of `cr` that still exist, as `Kind/name`. */
  async remaining(inventory: readonly ObjectRef[]): Promise<string[]> {
    const left: string[] = [];
    for (const e of inventory) if ((await this.objects.get(e)) !== undefined) left.push(`${e.kind}/${e.name}`);
    return left;
  }

  /** Events about objects of `kind` named `name` in `namespace`. */
  async eventsAbout(namespace: string, kind: string, name: string): Promise<CoreV1Event[]> {
    const list = await this.core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name}`,
    });
    return list.items;
  }

  /**
   * Waits until a Job named `name` has completed at least `times` times (one per distinct Job
   * object): the Job controller's `Completed` events outlive the hook Job that helm deletes once it
   * succeeded.
   */
  async waitForCompletedJobs(namespace: string, name: string, times: number): Promise<number> {
    return waitFor(
      `Job ${namespace}/${name} to have completed ${times} time(s)`,
      async () => {
        const uids = new Set(
          (await this.eventsAbout(namespace, 'Job', name)).filter((e) => e.reason === 'Completed').map((e) => e.involvedObject.uid),
        );
        return uids.size >= times ? uids.size : undefined;
      },
      { timeoutMs: 30_000 },
    );
  }
}

/** The operator's counters the idle check compares, summed over their labels. */
export interface Counters {
  /** Every helm process the operator ran, any verb and outcome. */
  readonly helm: number;
  readonly driftCorrections: number;
  /** Finished reconciles per controller, any result. */
  readonly reconciles: Readonly<Record<string, number>>;
}

export async function counters(metricsUrl: string, controllers: readonly string[]): Promise<Counters> {
  const text = await scrape(metricsUrl);
  return {
    helm: total(text, 'helm_operator_helm_executions_total'),
    driftCorrections: total(text, 'helm_operator_drift_corrections_total'),
    reconciles: Object.fromEntries(controllers.map((c) => [c, total(text, 'controller_runtime_reconcile_total', { controller: c })])),
  };
}

/** Polls `probe` every 50 ms until it holds; resolves with the milliseconds that took (printed, never asserted). */
export async function timeUntil(description: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<number> {
  const start = performance.now();
  await waitFor(description, async () => (await probe()) || undefined, { timeoutMs, intervalMs: 50 });
  return Math.round(performance.now() - start);
}
