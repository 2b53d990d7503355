/**
 * What an upgrade plan means for the CR's status and events (docs/adr/0083): `status.plan`, the
 * Planned and Approved conditions, and an event when a new plan starts to wait. Pure; summarize.ts
 * calls it for the outcomes that carry a plan.
 */
import { ConditionType, Reason } from '../status/conditions.js';
import type { AppliedPlan, CrEvent, Outcome, Summary, SummaryInput } from '../core/outcome.js';
import type { PlanStatus } from './plan-status.js';
import type { StatusEdit } from '../status/status.js';
import { describePlan } from './upgrade-plan.js';
import { rolloutApprovedAt } from './plan-approval.js';

const describe = (p: PlanStatus): string => describePlan(p.counts, p.risks);

/** A plan that waits: the release serving is left as it is, and looked at again. */
export function planHeld(o: Extract<Outcome, { kind: 'plan-held' }>, input: SummaryInput): Summary {
  const p = o.plan;
  const what = `plan ${p.digest} (revision ${p.fromRevision} to chart ${p.chartVersion}: ${describe(p)}; whole plan in ConfigMap ${p.configMap}, or helm-operator plan show)`;
  const approved =
    o.stale === undefined
      ? {
          type: ConditionType.Approved,
          status: 'False' as const,
          reason: Reason.PlanAwaitingApproval,
          message: `${what} waits for approval: ${o.hint}`,
        }
      : {
          type: ConditionType.Approved,
          status: 'False' as const,
          reason: Reason.PlanApprovalStale,
          message: `the approval names ${o.stale}, not the pending ${what}: ${o.hint}`,
        };
  const status: StatusEdit[] = [
    { plan: p },
    { set: { type: ConditionType.Planned, status: 'True', reason: Reason.PlanAwaitingApproval, message: what } },
    { set: approved },
  ];
  const events: CrEvent[] = [];
  if (o.isNew) events.push({ type: 'Normal', reason: Reason.PlanAwaitingApproval, message: `${what} waits for approval: ${o.hint}` });
  if (o.stale !== undefined) events.push({ type: 'Warning', reason: Reason.PlanApprovalStale, message: approved.message });
  return { status, result: { requeueAfterMs: o.retryAfterMs ?? input.periodMs }, events };
}

/** The status of a plan an upgrade carried out: nothing waits any more. */
export function planApplied(plan: AppliedPlan): StatusEdit[] {
  const p = plan.status;
  const approved =
    plan.why === 'approved'
      ? { reason: Reason.PlanApproved, message: `plan ${p.digest} approved` }
      : plan.why === 'rollout'
        ? {
            reason: Reason.PlanApprovedByRollout,
            message: `plan ${p.digest} (${describe(p)}) went with the approval of ${rolloutApprovedAt(plan.rollout)}`,
          }
        : { reason: Reason.ApprovalNotRequired, message: `plan ${p.digest} needs no approval (${describe(p)})` };
  return [
    { plan: p },
    { set: { type: ConditionType.Planned, status: 'False', reason: Reason.PlanApplied, message: `plan ${p.digest} applied` } },
    { set: { type: ConditionType.Approved, status: 'True', ...approved } },
  ];
}
