/**
 * Whether a planned upgrade may go ahead (issue 47, docs/adr/0083): the watch's `approval` says
 * which plans wait, its `approvedBy` whose approval counts, and an approval names one plan's
 * digest. Pure: the approval is read by the caller (the CR's annotation, or the platform's record
 * in the operator's namespace, operator/plan-store.ts).
 */
import type { ApprovalMode } from '../../config/watch.js';
import { ANNOTATIONS } from '../decide/annotations.js';
import type { PlanStatus } from './plan-status.js';
import { planCounts, planRisks, type Risk, type UpgradePlan } from './upgrade-plan.js';

/** Self-service approval: the digest of the plan the CR's editors approve (`approvedBy: cr` only). */
export const APPROVE_PLAN_ANNOTATION = ANNOTATIONS.approvePlan;

export type ApprovalVerdict =
  /** `rollout`: a later wave's plan whose risks the rollout's approved canary plan had (docs/adr/0093). */
  | { readonly kind: 'go'; readonly why: 'approved' | 'not-required' | 'rollout' }
  /** `stale`: an approval was found, but of another digest. */
  | { readonly kind: 'hold'; readonly stale?: string };

/** Pure: whether `plan` waits for an approval under `mode`. */
export function approvalRequired(mode: ApprovalMode, plan: UpgradePlan): boolean {
  if (mode === 'never') return false;
  return mode === 'always' || planRisks(plan).length > 0;
}

/** Pure: the risks of a plan not among `approved` (the risks a rollout's approval covers); empty: all covered. */
export function risksBeyond(risks: readonly Risk[], approved: readonly Risk[]): Risk[] {
  return risks.filter((r) => !approved.includes(r));
}

/**
 * Pure: what happens to `plan` given the approval found (the digest it names; undefined: none)
 * and, for a CR the rollout moves in a later wave, the risks the rollout's approval covers.
 */
export function approvalVerdict(
  mode: ApprovalMode,
  plan: UpgradePlan,
  approved: string | undefined,
  rollout?: { readonly risks: readonly Risk[] },
): ApprovalVerdict {
  if (!approvalRequired(mode, plan)) return { kind: 'go', why: 'not-required' };
  const own = approved?.trim() ?? '';
  if (own === plan.digest) return { kind: 'go', why: 'approved' };
  if (rollout !== undefined && risksBeyond(planRisks(plan), rollout.risks).length === 0) return { kind: 'go', why: 'rollout' };
  return own === '' ? { kind: 'hold' } : { kind: 'hold', stale: own };
}

/**
 * Pure: the plan the CR is held for (as this process remembers it, held-plans.ts; never as its
 * status says, which tenants may write: ADR 0097), when it is still the plan of this desired state
 * and revision: a CR held for approval looks again without asking helm or the API server, until
 * the spec, the chart or the release changes, or an approval of that digest arrives.
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

/** What a later wave's CR is told of the rollout's approval (rollout/rollout-approval.ts), structurally. */
export interface CoveringApproval {
  readonly target: string;
  readonly risks: readonly Risk[];
  readonly by: readonly { readonly key: string; readonly digest: string }[];
}

/** Pure: whether the rollout's approval covers a plan of these risks. */
export function coveredBy(risks: readonly Risk[], rollout: CoveringApproval | undefined): boolean {
  return rollout !== undefined && risksBeyond(risks, rollout.risks).length === 0;
}

/** Pure: who approved the fleet revision, as conditions say it: `fleet revision T (approved at ns/canary, plan sha256:…)`. */
export function rolloutApprovedAt(rollout: CoveringApproval): string {
  return `fleet revision ${rollout.target} (approved at ${rollout.by.map((b) => `${b.key}, plan ${b.digest}`).join('; ')})`;
}

/** Pure: why a held plan of a later wave did not go with the rollout's approval; '' for a CR the rollout did not approve for. */
export function beyondRolloutNote(risks: readonly Risk[], rollout: CoveringApproval | undefined): string {
  if (rollout === undefined) return '';
  const approved = rollout.risks.length === 0 ? 'no risk' : `risks ${rollout.risks.join(', ')}`;
  return `; ${rolloutApprovedAt(rollout)} covers ${approved}, and this plan's ${risksBeyond(risks, rollout.risks).join(', ')} needs its own approval`;
}

/** Pure: the approval step a held plan's Approved condition names (approveHint's text); undefined when it names none. */
export function approveStepOf(message: string): string | undefined {
  return /a platform admin approves it with: helm-operator plan approve \S+ -n \S+ --digest \S+|approve it with the annotation \S+/.exec(
    message,
  )?.[0];
}
