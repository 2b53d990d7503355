/**
 * The reconciler as the layers above it see it (the operator wires it, the CLI reads the status it
 * writes): the only module of src/reconciler they may import (.dependency-cruiser.mjs,
 * `reconciler-index-only`). Its folders:
 *
 *   core/     one reconcile: reads its CR and release, runs one action, writes status once; the ports
 *   decide/   pure decisions over what a reconcile observed (no port is called from here)
 *   actions/  one action a file, run by core/ only
 *   desired/  the release a CR asks for: values, values from Secrets and ConfigMaps, the fleet part, CRDs
 *   objects/  the objects a release made: inventory, ownership, readiness, fields held by others
 *   drift/    drift, its ignore rules, fights and repair budget
 *   rollout/  a watch's waved rollout
 *   plan/     an upgrade's plan, its digest, its approval and how it is reported
 *   status/   the CR's status, its conditions, and redaction of what people read
 */
export { Uninstaller } from './actions/uninstall.js';
export type { HelmFailure, HelmPort, Identity } from './core/helm-port.js';
export { releaseOwnerOf } from './core/observe.js';
export type { PlansPort, ReconcilerMetrics } from './core/ports.js';
export { HelmReconciler, type HelmReconcilerOptions } from './core/reconciler.js';
export { PlanPreviewRefused, UNAPPLIED_UID } from './core/plan-preview.js';
export { ANNOTATIONS } from './decide/annotations.js';
export {
  parseValuesFrom,
  VALUES_FROM_ANNOTATION,
  VALUES_SOURCE_LABEL,
  type ValuesReference,
  type ValuesSource,
  type ValuesSourcePort,
} from './desired/values-from.js';
export { CrdsClient } from './objects/crds-client.js';
export { healthRules } from './objects/health-rules.js';
export type { InventoryEntry } from './objects/inventory.js';
export { ManifestCache } from './objects/manifest-cache.js';
export { CHART_LABEL, ownersOf, ownerType, type Owner } from './objects/ownership.js';
export { ReleaseObjects, type CachedObject, type DependentsPort } from './objects/release-objects.js';
export { approveStepOf, planConfigMapName } from './plan/plan-approval.js';
export type { PlanStatus } from './plan/plan-status.js';
export { HeldPlans } from './plan/held-plans.js';
export { describePlan, planCounts, planDigest, planRisks, planSeals, type PlanObject, type UpgradePlan } from './plan/upgrade-plan.js';
export type { RolloutControlPort } from './rollout/rollout.js';
export { keepForRollout, sealVerdictOf } from './rollout/rollout-members.js';
export type { SealVerdict } from './rollout/rollout-seal.js';
export { ConditionType } from './status/conditions.js';
export { readStatus, type HelmStatus } from './status/status.js';
