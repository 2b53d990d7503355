/**
 * `crds: CreateReplace`: the chart's CRDs follow the chart (docs/adr/0075). Run inside the upgrade,
 * so only a CR the rollout lets upgrade ever changes them (the canary first); each changed CRD is
 * checked against the cluster's, applied under its own field manager and Established before helm
 * runs, or the upgrade stops with nothing applied.
 */
import { describeError } from '../../k8s/errors.js';
import { crdWriteRefusal, planChartCrds, unsafeCrdMessage, type CrdApply } from '../desired/chart-crds.js';
import { Reason } from '../status/conditions.js';
import type { CrEvent, Outcome } from '../core/outcome.js';
import type { CrdsPort } from '../core/ports.js';
import type { ActionContext, Desired } from '../core/action-context.js';

/** The upgrade goes on (with events saying what was applied), or stops with `outcome`. */
export type CrdStep = { readonly kind: 'go'; readonly events: readonly CrEvent[] } | { readonly kind: 'stop'; readonly outcome: Outcome };

const GO: CrdStep = { kind: 'go', events: [] };

interface Stop {
  readonly reason: Reason;
  readonly summary: string;
  readonly retryable: boolean;
  readonly cause?: unknown;
}

/** Counted against the desired state's retries and, for a CR the rollout moved, its attempt: the canary fails. */
function stop(desired: Desired, s: Stop): CrdStep {
  const failure = { summary: s.summary, retryable: s.retryable };
  return {
    kind: 'stop',
    outcome: {
      kind: 'helm-failed',
      reason: s.reason,
      event: 'UpgradeFailed',
      failure,
      fingerprint: desired.keyedFingerprint,
      cause: s.cause ?? new Error(s.summary),
    },
  };
}

export async function applyChartCrds(ctx: ActionContext, desired: Desired): Promise<CrdStep> {
  const crds = ctx.watch.chart.crds ?? [];
  const port = ctx.crds;
  if (ctx.watch.crds !== 'CreateReplace' || crds.length === 0 || port === undefined) return GO;
  const refused = crdWriteRefusal(ctx.watch, crds);
  if (refused !== undefined)
    return stop(desired, {
      reason: refused.reason === 'confinement' ? Reason.NamespaceConfinementViolation : Reason.KindNotAllowed,
      summary: refused.message,
      retryable: false,
    });
  const live = new Map(await Promise.all(crds.map(async (c) => [c.name, await port.get(c.name)] as const)));
  const plan = planChartCrds(crds, live);
  if (plan.kind === 'unsafe')
    return stop(desired, { reason: Reason.CRDUpgradeUnsafe, summary: unsafeCrdMessage(plan.refusals), retryable: false });
  return plan.applies.length === 0 ? GO : applyAll(ctx, desired, port, plan.applies);
}

/** Every CRD applied, then each Established: helm then finds every version the new chart's objects use served. */
async function applyAll(ctx: ActionContext, desired: Desired, port: CrdsPort, applies: readonly CrdApply[]): Promise<CrdStep> {
  for (const a of applies) {
    try {
      await port.apply(ctx.identity, a.crd.object);
    } catch (err) {
      const summary = `applying the chart's CRD ${a.crd.name} (${a.crd.file}) failed, the release was not upgraded: ${ctx.redact(describeError(err))}`;
      return stop(desired, { reason: Reason.UpgradeError, summary, retryable: true, cause: err });
    }
  }
  for (const a of applies) {
    if (!(await port.established(a.crd.name, ctx.signal))) {
      const summary = `the chart's CRD ${a.crd.name} was applied but is not Established, the release was not upgraded: see its status.conditions (kubectl get crd ${a.crd.name} -o yaml)`;
      return stop(desired, { reason: Reason.CRDNotEstablished, summary, retryable: true });
    }
  }
  const names = applies.map((a) => `${a.crd.name} (${a.kind === 'create' ? 'created' : 'replaced'})`).join(', ');
  return {
    kind: 'go',
    events: [{ type: 'Normal', reason: 'CRDsApplied', message: `the chart's CRDs were applied before the upgrade: ${names}` }],
  };
}
