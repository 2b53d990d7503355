/**
 * The Secrets and ConfigMaps CRs take values from: read on each reconcile (so a reconcile always
 * sees their current content), and watched so that a change reconciles the CRs that refer to them.
 *
 * Never all Secrets of the cluster: the watch is filtered server-side to objects labelled
 * `helm.sdk.operatorframework.io/values-source: "true"`, and only started once some CR refers to
 * a Secret or ConfigMap. An unlabelled reference still works (unless the watch sets a
 * ServiceAccount: then the label is the object's opt-in, and it is read as that ServiceAccount);
 * its changes are picked up at the CR's reconcile period. Which CR refers to which object is an
 * index kept from each controller's CR events (as Flux indexes its cache): an add or update
 * re-reads the CR's values-from annotation, a delete drops it, and a re-list rebuilds it.
 */
import { HttpMethod, type KubeConfig, type KubernetesObject } from '../k8s/client-node.js';
import { isNotFound } from '../k8s/errors.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import {
  parseValuesFrom,
  VALUES_FROM_ANNOTATION,
  VALUES_SOURCE_LABEL,
  type ValuesReference,
  type ValuesSource,
  type ValuesSourcePort,
} from '../reconciler/index.js';
import { Informer } from '../runtime/informer.js';
import type { Request } from '../runtime/reconcile.js';
import type { Logger } from '../telemetry/logger.js';
import type { WatchShare } from '../runtime/watch-share.js';

export interface ValuesSourcesOptions {
  readonly kubeConfig: KubeConfig;
  /** Empty: every namespace. */
  readonly namespaces: readonly string[];
  readonly log: Logger;
  /** Reconcile this CR of this controller. */
  readonly route: (controller: string, request: Request) => void;
  /** Sharded (docs/adr/0103): only this replica's share is watched (a CR refers to objects of its own namespace). */
  readonly share?: WatchShare;
}

type Kind = ValuesReference['kind'];
const objectKey = (kind: Kind, namespace: string, name: string): string => `${kind}/${namespace}/${name}`;
const crKey = (controller: string, namespace: string, name: string): string => `${controller}\u0000${namespace}\u0000${name}`;

export class ValuesSources implements ValuesSourcePort {
  readonly #raw: RawClient;
  /** Referenced object → the CRs (controller, namespace, name) that refer to it. */
  readonly #referrers = new Map<string, Set<string>>();
  /** CR → the objects it refers to, to undo on the next track. */
  readonly #references = new Map<string, string[]>();
  #informers: Informer[] | undefined;

  constructor(private readonly o: ValuesSourcesOptions) {
    this.#raw = o.kubeConfig.makeApiClient(RawClient);
  }

  /**
   * Keeps the index of one controller's CRs: given each CR its cache adds, updates or deletes. A
   * CR whose annotation does not parse refers to nothing (its reconcile says why).
   */
  indexer(controller: string): (cr: KubernetesObject, deleted: boolean) => void {
    return (cr, deleted) => {
      const { namespace = '', name = '', annotations } = cr.metadata ?? {};
      const parsed = deleted ? { refs: [] } : parseValuesFrom(annotations?.[VALUES_FROM_ANNOTATION]);
      this.#track(controller, { namespace, name }, 'refs' in parsed ? parsed.refs : []);
    };
  }

  async read(kind: Kind, namespace: string, name: string, as?: string): Promise<ValuesSource | undefined> {
    try {
      const plural = kind === 'ConfigMap' ? 'configmaps' : 'secrets';
      const path = `${resourcePath({ group: '', version: 'v1', plural, namespace })}/${encodeURIComponent(name)}`;
      const { data, metadata } = (await this.#raw.request(HttpMethod.GET, path, as === undefined ? {} : { impersonate: as })) as {
        data?: Record<string, string>;
        metadata?: { labels?: Record<string, string> };
      };
      const optedIn = metadata?.labels?.[VALUES_SOURCE_LABEL] === 'true';
      if (kind === 'ConfigMap') return { data: data ?? {}, optedIn };
      return {
        data: Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])),
        optedIn,
      };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  #track(controller: string, cr: Request, refs: readonly ValuesReference[]): void {
    const who = crKey(controller, cr.namespace, cr.name);
    for (const key of this.#references.get(who) ?? []) {
      const set = this.#referrers.get(key);
      set?.delete(who);
      if (set?.size === 0) this.#referrers.delete(key);
    }
    const keys = refs.map((r) => objectKey(r.kind, cr.namespace, r.name));
    if (keys.length === 0) {
      this.#references.delete(who);
      return;
    }
    this.#references.set(who, keys);
    for (const key of keys) {
      let set = this.#referrers.get(key);
      if (set === undefined) this.#referrers.set(key, (set = new Set()));
      set.add(who);
    }
    this.#startWatching();
  }

  /** Objects cached per kind (Secret, ConfigMap), summed over the watched namespaces; none before the first reference. */
  cachedObjects(): { kind: string; objects: number }[] {
    const informers = this.#informers ?? [];
    if (informers.length === 0) return [];
    const count = (plural: string): number => informers.filter((i) => i.path.endsWith(`/${plural}`)).reduce((n, i) => n + i.size(), 0);
    return [
      { kind: 'Secret', objects: count('secrets') },
      { kind: 'ConfigMap', objects: count('configmaps') },
    ];
  }

  async stop(): Promise<void> {
    const informers = this.#informers ?? [];
    this.#informers = [];
    await Promise.allSettled(informers.map((i) => i.stop()));
  }

  #startWatching(): void {
    if (this.#informers !== undefined) return;
    const scopes = this.o.namespaces.length > 0 ? this.o.namespaces : [''];
    this.#informers = [];
    for (const kind of ['Secret', 'ConfigMap'] as const) {
      for (const ns of scopes) {
        const informer = new Informer(this.o.kubeConfig, {
          resource: {
            group: '',
            version: 'v1',
            plural: kind === 'Secret' ? 'secrets' : 'configmaps',
            ...(ns === '' ? {} : { namespace: ns }),
          },
          labelSelector: `${VALUES_SOURCE_LABEL}=true`,
          log: this.o.log,
          ...(this.o.share === undefined ? {} : { share: this.o.share }),
        });
        const changed = (obj: KubernetesObject): void => {
          this.#changed(kind, obj);
        };
        informer.onAdd(changed);
        informer.onUpdate(changed);
        informer.onDelete(changed);
        this.#informers.push(informer);
        informer.start().catch((err: unknown) => {
          this.o.log.warn(
            { kind, namespace: ns === '' ? 'all' : ns, error: err },
            'Values source watch not started; changes are seen at the reconcile period',
          );
        });
      }
    }
  }

  #changed(kind: Kind, obj: KubernetesObject): void {
    const key = objectKey(kind, obj.metadata?.namespace ?? '', obj.metadata?.name ?? '');
    for (const who of this.#referrers.get(key) ?? []) {
      const [controller = '', namespace = '', name = ''] = who.split('\u0000');
      this.o.route(controller, { namespace, name });
    }
  }
}
