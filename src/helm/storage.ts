/**
 * Reads a release's revisions from helm's storage (the `secret` driver's Secrets) without running
 * helm: the steady state of a reconcile must not spawn a process; and deletes them, for an
 * uninstall made without helm (ADR 0066). Only metadata is fetched (the
 * apiserver's PartialObjectMetadata form), so the gzipped release payloads, which hold the values,
 * never reach this process.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { HttpMethod, type KubeConfig } from '../k8s/client-node.js';
import { isNotFound } from '../k8s/errors.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import { storageSecretName } from '../util/release-storage-name.js';
import { RELEASE_STATUSES, type ReleaseRecord, type ReleaseStatus } from './types.js';

export { storageSecretName };

const HELM_OWNED_LABELS = new Set(['owner', 'name', 'status', 'version', 'createdAt', 'modifiedAt']);
const METADATA_ONLY = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
const OBJECT_METADATA_ONLY = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/**
 * Pure: the release's latest record, from the labels of its revision `revision` (undefined: no
 * such Secret) and whether revision `revision + 1` exists; undefined when that does not settle it
 * (a newer revision, none at all, or a latest revision that is not deployed, whose state depends
 * on older ones). helm numbers each new revision one above the highest stored, so a stored
 * revision with no successor is the latest.
 */
export function latestDeployed(
  release: string,
  revision: number,
  labels: Readonly<Record<string, string>> | undefined,
  successorExists: boolean,
): ReleaseRecord | undefined {
  if (successorExists || labels?.name !== release) return undefined;
  const record = recordFromLabels(labels);
  return record?.revision === revision && record.status === 'deployed' ? record : undefined;
}

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

  /**
   * Deletes the storage Secrets of revisions `revisions` of `release`, as `helm uninstall` does
   * last, once its objects are deleted; a revision already gone is no error. The caller asks the
   * leader fence first (HelmClient.mayChangeReleases), as for the objects.
   */
  async deleteRevisions(namespace: string, release: string, revisions: readonly number[]): Promise<void> {
    for (const revision of revisions) {
      try {
        await this.#raw.request(
          HttpMethod.DELETE,
          `${resourcePath({ group: '', version: 'v1', plural: 'secrets', namespace })}/${storageSecretName(release, revision)}`,
        );
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }

  /** Every stored revision of `release` in `namespace` (none when it was never installed). */
  async records(namespace: string, release: string): Promise<ReleaseRecord[]> {
    return (await this.#list(namespace, `owner=helm,name=${release}`)).get(release) ?? [];
  }

  /**
   * The release's record when revision `revision` (the one this operator last saw deployed) is
   * still the latest and deployed: two GETs by name, each a single key for the API server, instead
   * of a LIST that filters every Secret of the namespace by label (and, read consistently from the
   * API server's cache, may first wait for it to catch up). undefined when that does not settle
   * it: read all records then.
   */
  async deployed(namespace: string, release: string, revision: number): Promise<ReleaseRecord[] | undefined> {
    const [current, successor] = await Promise.all([
      this.#labels(namespace, storageSecretName(release, revision)),
      this.#labels(namespace, storageSecretName(release, revision + 1)),
    ]);
    const record = latestDeployed(release, revision, current, successor !== undefined);
    return record === undefined ? undefined : [record];
  }

  /** A storage Secret's labels ({} when it has none); undefined when there is no such Secret. */
  async #labels(namespace: string, name: string): Promise<Record<string, string> | undefined> {
    try {
      const secret = (await this.#raw.request(
        HttpMethod.GET,
        `${resourcePath({ group: '', version: 'v1', plural: 'secrets', namespace })}/${name}`,
        {
          accept: OBJECT_METADATA_ONLY,
        },
      )) as { metadata?: V1ObjectMeta };
      return secret.metadata?.labels ?? {};
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** The stored revisions of each of `releases` in `namespace`, with one request (a release never installed has none). */
  async recordsOf(namespace: string, releases: readonly string[]): Promise<Map<string, ReleaseRecord[]>> {
    if (releases.length === 0) return new Map();
    return this.#list(namespace, `owner=helm,name in (${releases.join(',')})`);
  }

  async #list(namespace: string, labelSelector: string): Promise<Map<string, ReleaseRecord[]>> {
    const list = (await this.#raw.request(HttpMethod.GET, resourcePath({ group: '', version: 'v1', plural: 'secrets', namespace }), {
      query: { labelSelector },
      accept: METADATA_ONLY,
    })) as { items?: { metadata?: V1ObjectMeta }[] | null };
    const byRelease = new Map<string, ReleaseRecord[]>();
    // An empty PartialObjectMetadataList arrives with `items: null`.
    for (const s of list.items ?? []) {
      const labels = s.metadata?.labels;
      const r = recordFromLabels(labels);
      const release = labels?.name;
      if (r === undefined || release === undefined) continue;
      const ownerUids = (s.metadata?.ownerReferences ?? []).map((o) => o.uid);
      byRelease.set(release, [...(byRelease.get(release) ?? []), ownerUids.length === 0 ? r : { ...r, ownerUids }]);
    }
    return byRelease;
  }
}
