/**
 * The Lease I/O of leader election: {@link LeaseLock} over a `coordination.k8s.io/v1` Lease, with
 * the apiserver's optimistic concurrency mapped to {@link LeaseConflictError}.
 */
import type { V1Lease, V1LeaseSpec } from '@kubernetes/client-node';
import { HttpMethod, V1MicroTime, type KubeConfig } from '../k8s/client-node.js';
import { isConflict, isNotFound } from '../k8s/errors.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import { LeaseConflictError, type LeaseLock, type LeaseRecord, type VersionedLease } from './leader.js';

const micro = (ms: number): V1MicroTime => new V1MicroTime(ms);

/** A MicroTime arrives as a string even though the model types it as V1MicroTime (a Date). */
function epochMs(raw: unknown): number {
  if (raw instanceof Date) return raw.getTime();
  if (typeof raw !== 'string') return 0;
  const ms = Date.parse(raw);
  return Number.isNaN(ms) ? 0 : ms;
}

export function leaseRecordFromSpec(spec: V1LeaseSpec | undefined): LeaseRecord {
  return {
    holderIdentity: spec?.holderIdentity ?? '',
    leaseDurationSeconds: spec?.leaseDurationSeconds ?? 0,
    acquireTime: epochMs(spec?.acquireTime),
    renewTime: epochMs(spec?.renewTime),
    leaseTransitions: spec?.leaseTransitions ?? 0,
  };
}

export function leaseSpecFromRecord(r: LeaseRecord): V1LeaseSpec {
  return {
    holderIdentity: r.holderIdentity,
    leaseDurationSeconds: r.leaseDurationSeconds,
    acquireTime: micro(r.acquireTime),
    renewTime: micro(r.renewTime),
    leaseTransitions: r.leaseTransitions,
  };
}

/** The Lease `namespace/name` through the coordination.k8s.io/v1 API. */
export class KubeLeaseLock implements LeaseLock {
  readonly description: string;
  readonly #raw: RawClient;
  readonly #collection: string;

  constructor(
    kc: KubeConfig,
    readonly namespace: string,
    readonly name: string,
  ) {
    this.#raw = kc.makeApiClient(RawClient);
    this.#collection = resourcePath({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace });
    this.description = `${namespace}/${name}`;
  }

  async get(): Promise<VersionedLease | undefined> {
    try {
      return this.#versioned((await this.#raw.request(HttpMethod.GET, this.#path())) as V1Lease);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async create(record: LeaseRecord): Promise<VersionedLease> {
    const body: V1Lease = { metadata: { name: this.name, namespace: this.namespace }, spec: leaseSpecFromRecord(record) };
    try {
      return this.#versioned((await this.#raw.request(HttpMethod.POST, this.#collection, { body })) as V1Lease);
    } catch (err) {
      if (isConflict(err)) throw new LeaseConflictError(`lease ${this.description} was created by another candidate`, { cause: err });
      throw err;
    }
  }

  async update(record: LeaseRecord, resourceVersion: string): Promise<VersionedLease> {
    const body: V1Lease = {
      metadata: { name: this.name, namespace: this.namespace, resourceVersion },
      spec: leaseSpecFromRecord(record),
    };
    try {
      return this.#versioned((await this.#raw.request(HttpMethod.PUT, this.#path(), { body })) as V1Lease);
    } catch (err) {
      if (isConflict(err)) throw new LeaseConflictError(`lease ${this.description} was updated by another candidate`, { cause: err });
      throw err;
    }
  }

  #path(): string {
    return `${this.#collection}/${encodeURIComponent(this.name)}`;
  }

  #versioned(lease: V1Lease): VersionedLease {
    return { record: leaseRecordFromSpec(lease.spec), resourceVersion: lease.metadata?.resourceVersion ?? '' };
  }
}
