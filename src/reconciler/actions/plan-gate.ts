/**
 * The approval gate of an upgrade (docs/adr/0083): under a watch's `approval: risky|always` the
 * pending upgrade is planned (plan-upgrade.ts), its whole plan kept in the CR's ConfigMap, and
 * helm runs only when the plan needs no approval or the approval found names its digest. A held
 * CR keeps the release it has. While the plan this process holds it for (plans.held, ADR 0097) is
 * still the plan of this desired state and revision, a held CR looks again without helm or a dry
 * run, until an approval of that digest comes: then the plan is made again, and only the same
 * digest goes ahead. `status.plan` is only written here, never read: tenants may write status.
 */
import type { AppliedPlan, Outcome } from '../core/outcome.js';
import {
  APPROVE_PLAN_ANNOTATION,
  approvalVerdict,
  approveHint,
  beyondRolloutNote,
  coveredBy,
  planConfigMapName,
  planStatus,
  stillHeld,
  type CoveringApproval,
} from '../plan/plan-approval.js';
import type { PlanStatus } from '../plan/plan-status.js';
import type { PlansPort } from '../core/ports.js';
import type { ReleaseRecord } from '../decide/state.js';
import { Reason } from '../status/conditions.js';
import type { UpgradePlan } from '../plan/upgrade-plan.js';
import { failureOf, ownerOf, type ActionContext, type Desired } from '../core/action-context.js';
import { planUpgrade } from './plan-upgrade.js';

/** How often a CR held for a platform approval looks for it (one cached read of a Lease, no helm). */
export const PLATFORM_APPROVAL_POLL_MS = 5_000;

/** What the plan gate runs and asks: the upgrade itself, and what the rollout approved for it. */
export interface PlannedRun {
  /** The upgrade, run when the gate lets it. */
  readonly upgrade: () => Promise<Outcome>;
  /**
   * For a CR a rollout moves in a later wave, what the earlier waves approved for the fleet
   * revision (rollout-approval.ts): a plan whose risks are among those goes without an approval
   * of its own (docs/adr/0093). Asked only under `approval`, as it walks the controller's cache.
   */
  readonly rolloutApproval?: () => CoveringApproval | undefined;
}

export async function plannedUpgrade(ctx: ActionContext, desired: Desired, from: ReleaseRecord, run: PlannedRun): Promise<Outcome> {
  const mode = ctx.watch.approval ?? 'never';
  const plans = ctx.plans;
  // `never`: today's behaviour, and its cost: no plan.
  if (mode === 'never' || plans === undefined) return run.upgrade();
  const rollout = run.rolloutApproval?.();
  const approved = await approvalOf(ctx, plans);
  const prior = stillHeld(plans.held.held(ctx), { fingerprint: desired.keyedFingerprint, fromRevision: from.revision });
  if (prior !== undefined && approved !== prior.digest && !coveredBy(prior.risks, rollout))
    return held(ctx, prior, { approved, isNew: false, rollout });
  const plan = await planUpgrade(ctx, desired, from).catch((err: unknown) => err);
  // What the render or a dry run fails on, the upgrade would fail on too: reported and counted as its failure.
  if (!isPlan(plan)) return failureOf(ctx, plan, { reason: Reason.UpgradeError, event: 'UpgradeFailed', counts: desired });
  const configMap = planConfigMapName(ctx.watch.kind, ctx.name);
  const at = { generation: ctx.generation, fingerprint: desired.keyedFingerprint, configMap };
  const verdict = approvalVerdict(mode, plan, approved, rollout);
  await plans.save(ownerOf(ctx), configMap, plan);
  if (verdict.kind === 'hold') {
    const holding = planStatus(plan, at, 'AwaitingApproval');
    plans.held.hold(ctx, holding);
    // New to this process: one started since (or a new leader) says it once more.
    return held(ctx, holding, { approved, isNew: prior?.digest !== plan.digest, rollout });
  }
  plans.held.hold(ctx, undefined);
  const outcome = await run.upgrade();
  return outcome.kind === 'upgraded' ? { ...outcome, plan: appliedPlan(planStatus(plan, at, 'Applied'), verdict.why, rollout) } : outcome;
}

/** The applied plan as the outcome carries it: why it went, and for a later wave, whose approval it went with. */
function appliedPlan(status: PlanStatus, why: 'approved' | 'not-required' | 'rollout', rollout: CoveringApproval | undefined): AppliedPlan {
  return why === 'rollout' && rollout !== undefined ? { status, why, rollout } : { status, why: why === 'rollout' ? 'approved' : why };
}

const isPlan = (v: unknown): v is UpgradePlan => typeof v === 'object' && v !== null && 'digest' in v && 'objects' in v;

/** The digest approved for the CR. Where the platform approves, the CR's annotation is not read at all: its author cannot approve. */
function approvalOf(ctx: ActionContext, plans: PlansPort): Promise<string | undefined> {
  return (ctx.watch.approvedBy ?? 'platform') === 'cr'
    ? Promise.resolve(ctx.annotations.approvePlan?.trim())
    : plans.platformApproval(ctx.namespace, ctx.name);
}

function held(
  ctx: ActionContext,
  plan: PlanStatus,
  how: { approved: string | undefined; isNew: boolean; rollout: CoveringApproval | undefined },
): Outcome {
  const approvedBy = ctx.watch.approvedBy ?? 'platform';
  const steps = approveHint(approvedBy, plan.digest, { kind: ctx.watch.kind, namespace: ctx.namespace, name: ctx.name });
  // Said, so that a CR author who tries learns why nothing happens.
  const ignored =
    approvedBy === 'platform' && ctx.annotations.approvePlan !== undefined
      ? ` (the CR's annotation ${APPROVE_PLAN_ANNOTATION} does not count: this watch's plans are approved by the platform)`
      : '';
  const hint = `${steps}${ignored}${beyondRolloutNote(plan.risks, how.rollout)}`;
  const stale = how.approved !== undefined && how.approved !== '' && how.approved !== plan.digest ? { stale: how.approved } : {};
  // The CR's annotation brings its own reconcile; the platform's record is looked for.
  const retry = approvedBy === 'platform' ? { retryAfterMs: PLATFORM_APPROVAL_POLL_MS } : {};
  return { kind: 'plan-held', plan, hint, isNew: how.isNew, ...stale, ...retry };
}
