/**
 * The shard group's Leases in one namespace (shard-coordinator.ts `ShardLeaseStore`): labelled with
 * the group and their role, so one LIST per round reads every peer and fence.
 */
import type { V1Lease } from '@kubernetes/client-node';
import { HttpMethod, type KubeConfig } from '../k8s/client-node.js';
import { isConflict } from '../k8s/errors.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import { LeaseConflictError, type VersionedLease } from './leader.js';
import { LEGACY_SHARD_HASH, SHARD_BUCKETS, SHARD_HASH } from './shard-assignment.js';
import { decodeWeights, encodeWeights, SHARD_BALANCE } from './shard-balance.js';
import { leaseRecordFromSpec, leaseSpecFromRecord } from './lease-lock.js';
import type { ShardLease, ShardLeaseRole, ShardLeaseStore, ShardLeaseWrite } from './shard-coordinator.js';

export const SHARD_LABELS = {
  group: 'helm.sdk.operatorframework.io/shard-group',
  role: 'helm.sdk.operatorframework.io/shard-role',
  /** The writer's bucket function (docs/adr/0110); absent on Leases of releases before it. */
  hash: 'helm.sdk.operatorframework.io/shard-hash',
  /** The writer's balance rule (docs/adr/0113); absent on Leases of releases before it. */
  balance: 'helm.sdk.operatorframework.io/shard-balance',
} as const;

/** On the balance Lease: the CRs per bucket the group assigns by (docs/adr/0113). */
export const SHARD_WEIGHTS_ANNOTATION = 'helm.sdk.operatorframework.io/shard-weights';

const ROLES: readonly string[] = ['peer', 'fence', 'balance'] satisfies ShardLeaseRole[];

export class KubeShardLeaseStore implements ShardLeaseStore {
  readonly description: string;
  readonly #raw: RawClient;
  readonly #collection: string;

  constructor(
    kc: KubeConfig,
    readonly namespace: string,
    readonly group: string,
    readonly buckets = SHARD_BUCKETS,
  ) {
    this.#raw = kc.makeApiClient(RawClient);
    this.#collection = resourcePath({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace });
    this.description = `${namespace}/${group}-*`;
  }

  async list(): Promise<ShardLease[]> {
    const body = (await this.#raw.request(HttpMethod.GET, this.#collection, {
      query: { labelSelector: `${SHARD_LABELS.group}=${this.group}` },
    })) as { items?: V1Lease[] };
    return (body.items ?? []).flatMap((lease) => {
      const labels = lease.metadata?.labels ?? {};
      const role = labels[SHARD_LABELS.role];
      const name = lease.metadata?.name;
      if (name === undefined || role === undefined || !ROLES.includes(role)) return [];
      const balance = labels[SHARD_LABELS.balance];
      const weights = decodeWeights(lease.metadata?.annotations?.[SHARD_WEIGHTS_ANNOTATION], this.buckets);
      return [
        {
          name,
          role: role as ShardLeaseRole,
          hash: labels[SHARD_LABELS.hash] ?? LEGACY_SHARD_HASH,
          ...(balance === undefined ? {} : { balance }),
          ...(weights === undefined ? {} : { weights }),
          ...versioned(lease),
        },
      ];
    });
  }

  async create(name: string, lease: ShardLeaseWrite): Promise<VersionedLease> {
    const body: V1Lease = { metadata: this.#metadata(name, lease), spec: leaseSpecFromRecord(lease.record) };
    try {
      return versioned((await this.#raw.request(HttpMethod.POST, this.#collection, { body })) as V1Lease);
    } catch (err) {
      if (isConflict(err)) throw new LeaseConflictError(`lease ${this.namespace}/${name} was created by another replica`, { cause: err });
      throw err;
    }
  }

  async update(name: string, lease: ShardLeaseWrite, resourceVersion: string): Promise<VersionedLease> {
    const body: V1Lease = { metadata: this.#metadata(name, lease, resourceVersion), spec: leaseSpecFromRecord(lease.record) };
    try {
      return versioned((await this.#raw.request(HttpMethod.PUT, `${this.#collection}/${encodeURIComponent(name)}`, { body })) as V1Lease);
    } catch (err) {
      if (isConflict(err)) throw new LeaseConflictError(`lease ${this.namespace}/${name} was updated by another replica`, { cause: err });
      throw err;
    }
  }

  #metadata(name: string, { role, weights }: ShardLeaseWrite, resourceVersion?: string): NonNullable<V1Lease['metadata']> {
    return {
      name,
      namespace: this.namespace,
      labels: {
        [SHARD_LABELS.group]: this.group,
        [SHARD_LABELS.role]: role,
        [SHARD_LABELS.hash]: SHARD_HASH,
        [SHARD_LABELS.balance]: SHARD_BALANCE,
      },
      ...(weights === undefined ? {} : { annotations: { [SHARD_WEIGHTS_ANNOTATION]: encodeWeights(weights) } }),
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
    };
  }
}

const versioned = (lease: V1Lease): VersionedLease => ({
  record: leaseRecordFromSpec(lease.spec),
  resourceVersion: lease.metadata?.resourceVersion ?? '',
});
