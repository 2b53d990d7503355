/**
 * Reads a release's revisions from helm's storage (the `secret` driver's Secrets) without running
 * helm: the steady state of a reconcile must not spawn a process. Only metadata is fetched (the
 * apiserver's PartialObjectMetadata form), so the gzipped release payloads, which hold the values,
 * never reach this process.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { HttpMethod, type KubeConfig } from '../k8s/client-node.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import { RELEASE_STATUSES, type ReleaseRecord, type ReleaseStatus } from './types.js';

const HELM_OWNED_LABELS = new Set(['owner', 'name', 'status', 'version', 'createdAt', 'modifiedAt']);
const METADATA_ONLY = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

const STATUSES: ReadonlySet<string> = new Set<string>(RELEASE_STATUSES);

/** Pure: one storage Secret's labels → a record, or undefined when they are not helm's. */
export function recordFromLabels(labels: Readonly<Record<string, string>> | undefined): ReleaseRecord | undefined {
  if (labels?.owner !== 'helm') return undefined;
  const revision = Number(labels.version);
  const status = labels.status ?? '';
  if (!Number.isInteger(revision) || revision < 1 || !STATUSES.has(status)) return undefined;
  const own = Object.fromEntries(Object.entries(labels).filter(([k]) => !HELM_OWNED_LABELS.has(k)));
  return { revision, status: status as ReleaseStatus, labels: own };
}

export class ReleaseStorage {
  readonly #raw: RawClient;

  constructor(kc: KubeConfig) {
    this.#raw = kc.makeApiClient(RawClient);
  }

  /** Every stored revision of `release` in `namespace` (none when it was never installed). */
  async records(namespace: string, release: string): Promise<ReleaseRecord[]> {
    const list = (await this.#raw.request(HttpMethod.GET, resourcePath({ group: '', version: 'v1', plural: 'secrets', namespace }), {
      query: { labelSelector: `owner=helm,name=${release}` },
      accept: METADATA_ONLY,
    })) as { items?: { metadata?: V1ObjectMeta }[] | null };
    // An empty PartialObjectMetadataList arrives with `items: null`.
    const items = list.items ?? [];
    return items.flatMap((s) => {
      const r = recordFromLabels(s.metadata?.labels);
      return r === undefined ? [] : [r];
    });
  }
}
