/**
 * Whether a planned upgrade may go ahead (issue 47, docs/adr/0083): the watch's `approval` says
 * which plans wait, its `approvedBy` whose approval counts, and an approval names one plan's
 * digest. Pure: the approval is read by the caller (the CR's annotation, or the platform's record
 * in the operator's namespace, operator/plan-store.ts).
 */
import type { ApprovalMode } from '../../config/watch.js';
import { ANNOTATIONS } from '../decide/annotations.js';
import type { PlanStatus } from './plan-status.js';
import { planCounts, planRisks, type UpgradePlan } from './upgrade-plan.js';

/** Self-service approval: the digest of the plan the CR's editors approve (`approvedBy: cr` only). */
export const APPROVE_PLAN_ANNOTATION = ANNOTATIONS.approvePlan;

export type ApprovalVerdict =
  | { readonly kind: 'go'; readonly why: 'approved' | 'not-required' }
  /** `stale`: an approval was found, but of another digest. */
  | { readonly kind: 'hold'; readonly stale?: string };

/** Pure: whether `plan` waits for an approval under `mode`. */
export function approvalRequired(mode: ApprovalMode, plan: UpgradePlan): boolean {
  if (mode === 'never') return false;
  return mode === 'always' || planRisks(plan).length > 0;
}

/** Pure: what happens to `plan` given the approval found (the digest it names; undefined: none). */
export function approvalVerdict(mode: ApprovalMode, plan: UpgradePlan, approved: string | undefined): ApprovalVerdict {
  if (!approvalRequired(mode, plan)) return { kind: 'go', why: 'not-required' };
  if (approved === undefined || approved === '') return { kind: 'hold' };
  return approved.trim() === plan.digest ? { kind: 'go', why: 'approved' } : { kind: 'hold', stale: approved.trim() };
}

/**
 * Pure: the held plan as status has it, when it is still the plan of this desired state and
 * revision: a CR held for approval looks again without asking helm or the API server, until the
 * spec, the chart or the release changes, or an approval of that digest arrives.
 */
export function stillHeld(
  prior: PlanStatus | undefined,
  at: { readonly fingerprint: string; readonly fromRevision: number },
): PlanStatus | undefined {
  return prior?.state === 'AwaitingApproval' && prior.fingerprint === at.fingerprint && prior.fromRevision === at.fromRevision
    ? prior
    : undefined;
}

export function planStatus(
  plan: UpgradePlan,
  at: { readonly generation: number | undefined; readonly fingerprint: string; readonly configMap: string },
  state: PlanStatus['state'],
): PlanStatus {
  return {
    digest: plan.digest,
    ...(at.generation === undefined ? {} : { generation: at.generation }),
    fingerprint: at.fingerprint,
    fromRevision: plan.fromRevision,
    chartVersion: plan.chart.version,
    counts: planCounts(plan),
    risks: planRisks(plan),
    state,
    configMap: at.configMap,
  };
}

/** The ConfigMap of a CR's plan: one per CR, named for its kind so two kinds' CRs of one name do not meet. */
export function planConfigMapName(kind: string, name: string): string {
  return `plan.${kind.toLowerCase()}.${name}`;
}

/** How to approve, as the held condition says it. */
export function approveHint(
  approvedBy: 'cr' | 'platform',
  digest: string,
  cr: { readonly kind: string; readonly namespace: string; readonly name: string },
): string {
  return approvedBy === 'cr'
    ? `approve it with the annotation ${APPROVE_PLAN_ANNOTATION}=${digest}`
    : `a platform admin approves it with: helm-operator plan approve ${cr.kind.toLowerCase()}/${cr.name} -n ${cr.namespace} --digest ${digest}`;
}
