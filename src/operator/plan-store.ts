/**
 * Where upgrade plans are kept and platform approvals are read (docs/adr/0083).
 *
 * - The whole plan: a ConfigMap `plan.<kind>.<name>` in the CR's namespace, owned by the CR (it
 *   goes with it), written by the operator itself with a server-side apply. Who can read it is who
 *   can read ConfigMaps there: the namespace's viewers, the CR's readers under the aggregated
 *   roles. It holds nothing they could not read already: sensitive values and values from Secrets
 *   are redacted, a Secret's data is never in it. Who can write ConfigMaps there can rewrite it,
 *   so nothing reads it back to decide: the operator decides from the plan it makes, and `plan
 *   show` checks the ConfigMap against the digest in the CR's status, which only the status
 *   subresource's writers can set.
 * - Platform approvals: the annotation `helm-operator.io/approved-plans` (JSON, `ns/name` to a
 *   digest) of a Lease `plan-approvals.<kind>.<group>` in the operator's namespace, as the rollout
 *   pause is (rollout-control.ts): tenants who may edit CRs have no rights there, and the operator
 *   already holds the Lease verbs there for leader election. `helm-operator plan approve` writes it.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { HttpMethod, PatchStrategy } from '../k8s/client-node.js';
import { isNotFound, isStatus } from '../k8s/errors.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import type { Owner, PlansPort, UpgradePlan } from '../reconciler/index.js';
import { canonicalJson } from '../util/canonical-json.js';
import { isPlainObject } from '../util/plain-object.js';

export const APPROVED_PLANS_ANNOTATION = 'helm-operator.io/approved-plans';
/** The key of the whole plan in its ConfigMap. */
export const PLAN_KEY = 'plan.json';
/** Names the CR a plan ConfigMap is of. */
export const PLAN_OF_LABEL = 'helm-operator.io/plan-of';
const FIELD_MANAGER = 'helm-operator-plan';
/** How long a read of the approvals is reused: held CRs look often, approvals change rarely. */
const READ_TTL_MS = 2_000;

export function approvalsLeaseName(kind: string, group: string): string {
  return group === '' ? `plan-approvals.${kind.toLowerCase()}` : `plan-approvals.${kind.toLowerCase()}.${group}`;
}

interface LeaseMeta {
  readonly metadata?: { readonly resourceVersion?: string; readonly annotations?: Readonly<Record<string, string>> };
}

/** Pure: the approvals an annotation holds (`ns/name` to digest); a malformed one holds none. */
export function parseApprovals(text: string | undefined): Record<string, string> {
  if (text === undefined) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (!isPlainObject(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}

/** The platform's approvals of one kind's plans, in the operator's namespace. */
export class PlanApprovals {
  readonly #raw: RawClient;
  readonly #collection: string;
  readonly #name: string;
  #read: { atMs: number; approvals: Promise<Record<string, string>> } | undefined;

  constructor(kubeConfig: KubeConfig, namespace: string, kind: { kind: string; group: string }) {
    this.#raw = kubeConfig.makeApiClient(RawClient);
    this.#collection = resourcePath({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace });
    this.#name = approvalsLeaseName(kind.kind, kind.group);
  }

  async approved(namespace: string, name: string): Promise<string | undefined> {
    const now = Date.now();
    if (this.#read === undefined || now - this.#read.atMs > READ_TTL_MS) {
      const approvals = this.#get().then((lease) => parseApprovals(lease?.metadata?.annotations?.[APPROVED_PLANS_ANNOTATION]));
      approvals.catch(() => {
        this.#read = undefined;
      });
      this.#read = { atMs: now, approvals };
    }
    return (await this.#read.approvals)[`${namespace}/${name}`];
  }

  /** Records `digest` as approved for the CR (creates the Lease on first use); a concurrent write is retried. */
  async approve(namespace: string, name: string, digest: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const lease = await this.#get();
      const approvals = { ...parseApprovals(lease?.metadata?.annotations?.[APPROVED_PLANS_ANNOTATION]), [`${namespace}/${name}`]: digest };
      const annotations = { [APPROVED_PLANS_ANNOTATION]: JSON.stringify(approvals) };
      try {
        if (lease === undefined)
          await this.#raw.request(HttpMethod.POST, this.#collection, { body: { metadata: { name: this.#name, annotations }, spec: {} } });
        else {
          // The resourceVersion makes the merge patch fail on a concurrent approval instead of losing it.
          const body = { metadata: { resourceVersion: lease.metadata?.resourceVersion, annotations } };
          await this.#raw.request(HttpMethod.PATCH, this.#path(), { body, contentType: PatchStrategy.MergePatch });
        }
        this.#read = undefined;
        return;
      } catch (err) {
        if (attempt >= 4 || !isStatus(err, 409)) throw err;
      }
    }
  }

  async #get(): Promise<LeaseMeta | undefined> {
    try {
      return (await this.#raw.request(HttpMethod.GET, this.#path())) as LeaseMeta;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  #path(): string {
    return `${this.#collection}/${encodeURIComponent(this.#name)}`;
  }
}

/** The operator's PlansPort: plans into the CR's namespace, approvals from the operator's (none without one). */
export class PlanStore implements PlansPort {
  readonly #raw: RawClient;

  constructor(
    kubeConfig: KubeConfig,
    private readonly approvals: PlanApprovals | undefined,
  ) {
    this.#raw = kubeConfig.makeApiClient(RawClient);
  }

  async save(owner: Owner, configMap: string, plan: UpgradePlan): Promise<void> {
    const body = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: configMap,
        namespace: owner.namespace,
        labels: { [PLAN_OF_LABEL]: owner.name },
        ownerReferences: [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid, blockOwnerDeletion: false }],
      },
      data: { [PLAN_KEY]: canonicalJson(plan) },
    };
    const path = `${resourcePath({ group: '', version: 'v1', plural: 'configmaps', namespace: owner.namespace })}/${encodeURIComponent(configMap)}`;
    await this.#raw.request(HttpMethod.PATCH, path, {
      query: { fieldManager: FIELD_MANAGER, force: 'true' },
      body,
      contentType: PatchStrategy.ServerSideApply,
    });
  }

  platformApproval(namespace: string, name: string): Promise<string | undefined> {
    return this.approvals?.approved(namespace, name) ?? Promise.resolve(undefined);
  }
}
