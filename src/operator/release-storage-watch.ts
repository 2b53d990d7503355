/**
 * helm's release storage, read through a watch where one covers the namespace (ADR 0111): a
 * metadata-only informer over the `owner=helm` Secrets of the watched namespaces (this replica's
 * share when sharded), started by the first reconcile that asks. A reconcile of a release in sync
 * (every periodic one) then learns that the revision it last saw is still the latest and deployed
 * from the cache: two map lookups instead of two GETs. Every other read, and every read before a
 * write, still goes to the API server.
 *
 * Every helm Secret, not only this operator's: a revision made by hand (`helm upgrade`,
 * `rollback`) carries none of our labels, and it is exactly the one that must not be missed.
 * Only names and labels are kept: the release payloads never reach this process.
 */
import type { KubeConfig, KubernetesObject } from '../k8s/client-node.js';
import { latestDeployed, ReleaseStorage } from '../helm/storage.js';
import type { ReleaseRecord } from '../helm/types.js';
import { Informer } from '../runtime/informer.js';
import type { WatchShare } from '../runtime/watch-share.js';
import type { Logger } from '../telemetry/logger.js';
import { storageSecretName } from '../util/release-storage-name.js';

export interface ReleaseStorageWatchOptions {
  readonly kubeConfig: KubeConfig;
  /** Empty: every namespace. */
  readonly namespaces: readonly string[];
  readonly log: Logger;
  /** Sharded (docs/adr/0103): the share's namespaces only. */
  readonly share?: WatchShare;
}

/** What the cache keeps of a storage Secret: what a record and ListWatch's bookkeeping need. */
export function storageMetadata(obj: KubernetesObject): KubernetesObject {
  const { name, namespace, resourceVersion, labels } = obj.metadata ?? {};
  return { metadata: { name, namespace, resourceVersion, labels } };
}

/** ReleaseStorage's reads and deletes, and `watched` from the cache. */
export class ReleaseStorageWatch extends ReleaseStorage {
  /** Keyed by namespace; '' = all namespaces. Undefined until the first `watched`. */
  #informers: Map<string, Informer> | undefined;
  #stopped = false;

  constructor(private readonly o: ReleaseStorageWatchOptions) {
    super(o.kubeConfig);
  }

  /** `deployed`'s answer from the cache, when a watching informer covers the namespace (ReleaseStoragePort.watched). */
  watched(namespace: string, release: string, revision: number): ReleaseRecord | undefined {
    const informer = this.#covering(namespace);
    if (informer === undefined) return undefined;
    const current = informer.get(storageSecretName(release, revision), namespace);
    if (current === undefined) return undefined;
    const successor = informer.get(storageSecretName(release, revision + 1), namespace);
    return latestDeployed(release, revision, current.metadata?.labels ?? {}, successor !== undefined);
  }

  /**
   * The storage Secrets of `release` the cache holds, as `watched` would read them; undefined when
   * it would not. The middle test tier waits until they are the API server's before a reconcile, as
   * it does for the dependents' cache.
   */
  cachedSecrets(namespace: string, release: string): KubernetesObject[] | undefined {
    return this.#covering(namespace)
      ?.list(namespace)
      .filter((s) => s.metadata?.labels?.name === release);
  }

  /** Storage Secrets cached (helm_operator_informer_objects{cache="release"}). */
  cachedObjects(): number {
    return [...(this.#informers?.values() ?? [])].reduce((n, i) => n + i.size(), 0);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const informers = [...(this.#informers?.values() ?? [])];
    this.#informers = new Map();
    await Promise.allSettled(informers.map((i) => i.stop()));
  }

  /** The informer that keeps `namespace`'s Secrets current now, if any (started by the first call). */
  #covering(namespace: string): Informer | undefined {
    const informers = this.#start();
    const informer = informers.get(informers.has(namespace) ? namespace : '');
    return informer?.isWatching() === true && informer.covers(namespace) ? informer : undefined;
  }

  #start(): Map<string, Informer> {
    if (this.#informers !== undefined) return this.#informers;
    const informers = new Map<string, Informer>();
    this.#informers = informers;
    if (this.#stopped) return informers;
    const scopes = this.o.namespaces.length > 0 ? this.o.namespaces : [''];
    for (const ns of scopes) {
      const informer = new Informer(this.o.kubeConfig, {
        resource: { group: '', version: 'v1', plural: 'secrets', ...(ns === '' ? {} : { namespace: ns }) },
        labelSelector: 'owner=helm',
        metadataOnly: true,
        transform: storageMetadata,
        trackPrevious: false,
        log: this.o.log,
        ...(this.o.share === undefined ? {} : { share: this.o.share }),
      });
      informers.set(ns, informer);
      // Retries with backoff until it syncs (the informer logs each failure); rejects only when stop() came first.
      informer.start().catch(() => undefined);
    }
    return informers;
  }
}
