/**
 * Where upgrade plans are kept and platform approvals are read (docs/adr/0083).
 *
 * - The whole plan: a ConfigMap `plan.<kind>.<name>` in the CR's namespace, owned by the CR (it
 *   goes with it), written by the operator itself with a server-side apply. Who can read it is who
 *   can read ConfigMaps there: the namespace's viewers, the CR's readers under the aggregated
 *   roles. It holds nothing they could not read already: sensitive values and values from Secrets
 *   are redacted, a Secret's data is never in it. Who can write ConfigMaps there can rewrite it,
 *   so nothing reads it back to decide: the operator decides from the plan it makes and the
 *   plans it holds in memory (`held`, docs/adr/0097), never from the CR's status either, which
 *   the status subresource's writers can set. `plan show` checks the ConfigMap against the
 *   digest in the CR's status, which the operator rewrites on each look at a held CR.
 * - Platform approvals: the annotation `helm-operator.io/approved-plans` (JSON, `ns/name` to a
 *   digest) of a Lease `plan-approvals.<kind>.<group>` in the operator's namespace, as the rollout
 *   pause is (rollout-control.ts): tenants who may edit CRs have no rights there, and the operator
 *   already holds the Lease verbs there for leader election. `helm-operator plan approve` writes it.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { HttpMethod, PatchStrategy } from '../k8s/client-node.js';
import { isStatus } from '../k8s/errors.js';
import { RawClient, resourcePath } from '../k8s/raw-client.js';
import { HeldPlans, type Owner, type PlansPort, type UpgradePlan } from '../reconciler/index.js';
import { SwitchLease } from './switch-lease.js';
import { canonicalJson } from '../util/canonical-json.js';
import { isPlainObject } from '../util/plain-object.js';

export const APPROVED_PLANS_ANNOTATION = 'helm-operator.io/approved-plans';
/** The key of the whole plan in its ConfigMap. */
export const PLAN_KEY = 'plan.json';
/** Names the CR a plan ConfigMap is of. */
export const PLAN_OF_LABEL = 'helm-operator.io/plan-of';
const FIELD_MANAGER = 'helm-operator-plan';

export function approvalsLeaseName(kind: string, group: string): string {
  return group === '' ? `plan-approvals.${kind.toLowerCase()}` : `plan-approvals.${kind.toLowerCase()}.${group}`;
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
  readonly #lease: SwitchLease;

  constructor(kubeConfig: KubeConfig, namespace: string, kind: { kind: string; group: string }) {
    this.#lease = new SwitchLease(kubeConfig, namespace, approvalsLeaseName(kind.kind, kind.group));
  }

  async approved(namespace: string, name: string): Promise<string | undefined> {
    return parseApprovals((await this.#lease.annotations())[APPROVED_PLANS_ANNOTATION])[`${namespace}/${name}`];
  }

  /** Records `digest` as approved for the CR (creates the Lease on first use); a concurrent write is retried. */
  async approve(namespace: string, name: string, digest: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const lease = await this.#lease.read();
      const approvals = { ...parseApprovals(lease?.annotations[APPROVED_PLANS_ANNOTATION]), [`${namespace}/${name}`]: digest };
      try {
        await this.#lease.write({ [APPROVED_PLANS_ANNOTATION]: JSON.stringify(approvals) }, lease, { guarded: true });
        return;
      } catch (err) {
        if (attempt >= 4 || !isStatus(err, 409)) throw err;
      }
    }
  }
}

/** The operator's PlansPort: plans into the CR's namespace, approvals from the operator's (none without one). */
export class PlanStore implements PlansPort {
  readonly #raw: RawClient;
  readonly held = new HeldPlans();

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
