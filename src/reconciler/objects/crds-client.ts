/**
 * The CrdsPort on the API server: a chart's CRDs read, server-side applied under their own field
 * manager (acting as the watch's ServiceAccount when it has one), and waited on until Established.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ObjectClient, ObjectRef } from '../../k8s/objects.js';
import { isPlainObject } from '../../util/plain-object.js';
import { CRD_FIELD_MANAGER } from '../desired/chart-crds.js';
import type { CrdsPort } from '../core/ports.js';

const API_VERSION = 'apiextensions.k8s.io/v1';
const KIND = 'CustomResourceDefinition';
/** How long a CRD may take to be Established (the API server names it in well under a second). */
const ESTABLISHED_WITHIN_MS = 30_000;
const POLL_MS = 200;

const ref = (name: string): ObjectRef => ({ apiVersion: API_VERSION, kind: KIND, namespace: '', name });

/** Pure: whether a CRD's `status.conditions` say Established. */
export function isEstablished(crd: unknown): boolean {
  const status = isPlainObject(crd) && isPlainObject(crd.status) ? crd.status : {};
  const conditions = Array.isArray(status.conditions) ? status.conditions : [];
  return conditions.some((c) => isPlainObject(c) && c.type === 'Established' && c.status === 'True');
}

export class CrdsClient implements CrdsPort {
  constructor(
    private readonly client: ObjectClient,
    private readonly withinMs = ESTABLISHED_WITHIN_MS,
  ) {}

  async get(name: string): Promise<Readonly<Record<string, unknown>> | undefined> {
    const crd = await this.client.get(ref(name));
    return crd === undefined ? undefined : { ...crd };
  }

  async apply(identity: string | undefined, crd: Readonly<Record<string, unknown>>): Promise<void> {
    // status is the API server's: an apply of it is ignored, and a chart's is stale anyway.
    const { status: _status, ...body } = crd;
    await this.client.as(identity).apply(body, { fieldManager: CRD_FIELD_MANAGER, force: true });
  }

  async established(name: string, signal: AbortSignal): Promise<boolean> {
    const deadline = Date.now() + this.withinMs;
    for (;;) {
      if (isEstablished(await this.get(name))) return true;
      if (Date.now() >= deadline) return false;
      await sleep(POLL_MS, undefined, { signal });
    }
  }
}
