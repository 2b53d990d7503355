/**
 * `plan diff -f cr.yaml` (docs/plans.md): the plan of a CR manifest that is not applied, made as a
 * reconcile would make it: the same desired state (spec, overrideValues, values from Secrets and
 * ConfigMaps, redaction), the same identity and gateway for helm, the same planner (a server-side
 * render, then per object a GET and dry-run server-side applies). Against the deployed revision of
 * the CR's release when there is one, else as an install. Nothing is written: no status, no event,
 * no plan ConfigMap, no finalizer.
 */
import type { CustomResource } from '../../k8s/custom-resources.js';
import type { Logger } from '../../telemetry/logger.js';
import { planUpgrade } from '../actions/plan-upgrade.js';
import { desiredState, invalidInput } from '../desired/desired.js';
import type { ValuesSourcePort } from '../desired/values-from.js';
import type { UpgradePlan } from '../plan/upgrade-plan.js';
import type { ReleaseRecord } from '../decide/state.js';
import { readRecords } from './observe.js';
import { beginReconcile, type ScopePorts } from './reconcile-scope.js';
import { missingServiceAccount } from './service-account.js';
import type { ObjectReaderPort } from './ports.js';

/** What the CR's reconcile would refuse before planning (an invalid spec, a values reference it cannot read). */
export class PlanPreviewRefused extends Error {
  override readonly name = 'PlanPreviewRefused';
}

/**
 * The UID a CR not yet on the cluster is planned with: the ownerReferences helm's objects get must
 * name one, and a dry run keeps nothing, so no object ever points at it.
 */
export const UNAPPLIED_UID = '00000000-0000-0000-0000-000000000000';

export interface PreviewPorts extends ScopePorts {
  readonly reader: ObjectReaderPort;
  readonly valuesSources?: ValuesSourcePort;
}

export async function previewPlan(
  ports: PreviewPorts,
  cr: CustomResource,
  on: { readonly signal: AbortSignal; readonly log: Logger; readonly ownerKind: string; readonly fingerprintKey: Uint8Array },
): Promise<UpgradePlan> {
  const namespace = cr.metadata.namespace ?? '';
  const name = cr.metadata.name;
  const planned = structuredClone(cr);
  planned.metadata.uid ??= UNAPPLIED_UID;
  const records = { decide: () => Promise.resolve([]), remembered: false, read: () => Promise.resolve([]), sinceMs: 0 };
  const rc = { signal: on.signal, log: on.log, reconcileID: 'plan-diff', cached: undefined };
  // The reconcile's view of the CR; its status writer is never asked to write.
  const { ctx, status } = beginReconcile(ports, planned, { request: { namespace, name }, rc, records, annotationFloorMs: 0 });
  const refused = invalidInput(planned, name) ?? (await missingServiceAccount(ports.reader, namespace, ports.watch.serviceAccountName));
  if (refused !== undefined) throw new PlanPreviewRefused(refused.message);
  const desired = await desiredState({
    cr: planned,
    namespace,
    name,
    watch: ports.watch,
    ownerKind: on.ownerKind,
    helmMajor: await ports.helm.major(),
    identity: ctx.identity,
    valuesSources: ports.valuesSources,
    redact: status.redactor,
    fingerprintKey: on.fingerprintKey,
  });
  if ('kind' in desired) throw new PlanPreviewRefused(desired.message);
  return planUpgrade(ctx, desired, deployedOf(await readRecords(ports, namespace, name)));
}

/** Pure: the revision an upgrade would start from: the latest deployed one; none, an install. */
function deployedOf(records: readonly ReleaseRecord[]): ReleaseRecord | undefined {
  return records.filter((r) => r.status === 'deployed').sort((a, b) => b.revision - a.revision)[0];
}
