/**
 * Nothing for helm to do: the release's objects are checked against the deployed manifest (kept
 * from the install or upgrade; fetched from helm only after a restart), drift is repaired unless
 * the CR turns that off, and readiness is summarised.
 */
import { countFailedRepair, driftRepairStopped } from '../drift/drift-budget.js';
import { rulesFingerprint } from '../drift/drift-ignore.js';
import { DriftRepairPolicy } from '../drift/drift-policy.js';
import type { CrEvent, DriftFieldsReport, DriftResult, Outcome } from '../core/outcome.js';
import type { DesiredObject, Subject } from '../objects/release-object-types.js';
import type { ReleaseRecord } from '../decide/state.js';
import type { DeployedRelease } from '../status/status.js';
import { jsonDigest } from '../../util/canonical-json.js';
import { changedOutside, ChangedOutsideError } from '../decide/outside-change.js';
import { driftIgnoreRules, subjectOf, type ActionContext, type Desired } from '../core/action-context.js';
import { deployedRelease, entriesOf } from './deployment.js';

/**
 * `beforeWrite`: awaited before any write to the release's objects, when `deployed` was remembered
 * rather than read (ADR 0069); it throws ReleaseChangedError when that revision is no longer deployed.
 */
export async function correctDrift(
  ctx: ActionContext,
  deployed: ReleaseRecord,
  desired: Pick<Desired, 'values'>,
  beforeWrite?: () => Promise<void>,
): Promise<Outcome> {
  const subject = { ...subjectOf(ctx), ...(beforeWrite === undefined ? {} : { beforeWrite }) };
  const { objects, release } = await deployedObjects(ctx, deployed, desired);
  const { rules, refused } = driftIgnoreRules(ctx);
  const key = { revision: deployed.revision, generation: ctx.generation, rules: rulesFingerprint(rules) };
  const policy = new DriftRepairPolicy(rules, ctx.status.driftFights, key);
  const { drift, events } = ctx.annotations.driftRepair
    ? await repair(ctx, { subject, revision: deployed.revision }, objects, policy)
    : { drift: { kind: 'settled' } as const, events: [] };
  const fields: DriftFieldsReport = {
    fights: ctx.annotations.driftRepair ? policy.fights : undefined,
    declared: policy.declared,
    ...(refused === undefined ? {} : { refused }),
  };
  // Left out when there is nothing to say nor to clear: the common case.
  const quiet = fields.fights?.fields.length === 0 && refused === undefined && ctx.status.driftFights === undefined;
  // After the repair: a recreated object needs its owner and chart label at once, or its own
  // events would not be routed back here until the next periodic reconcile.
  const seen = await ctx.objects.adopt(subject, objects);
  const ready = await ctx.objects.readiness(objects, seen);
  const deployment = { ...(release === undefined ? {} : { release }), inventory: entriesOf(objects), ready };
  return {
    kind: 'in-sync',
    revision: deployed.revision,
    deployment,
    drift,
    ...(quiet ? {} : { fields }),
    ...(events.length === 0 ? {} : { events }),
  };
}

/**
 * The deployed revision's objects: kept from this CR instance's last install or upgrade, else read
 * from helm, which also says whether the revision was made from the desired state (ChangedOutsideError).
 */
async function deployedObjects(
  ctx: ActionContext,
  deployed: ReleaseRecord,
  desired: Pick<Desired, 'values'>,
): Promise<{ objects: DesiredObject[]; release?: DeployedRelease }> {
  const known = ctx.manifests.get(ctx.namespace, ctx.name, ctx.uid, deployed.revision);
  if (known !== undefined) return { objects: known };
  const release = await ctx.helm.status(ctx.name, ctx.namespace);
  if (release === undefined) throw new Error(`release ${ctx.name} vanished while being read`);
  // Not kept: the next reconcile reads it again, until an upgrade makes a revision of ours.
  const why = changedOutside(release, { valuesDigest: jsonDigest(desired.values), chart: ctx.watch.chart });
  if (why !== undefined) throw new ChangedOutsideError(deployed, why);
  return { objects: await ctx.manifests.remember(ctx.name, ctx.uid, release), release: deployedRelease(release) };
}

/**
 * What the API server refuses is retried with backoff up to the retry budget (drift-budget.ts);
 * the pass that spends it says so once, and repair then stops until an upgrade or a spec change.
 * `events`: one per object restored or not.
 */
async function repair(
  ctx: ActionContext,
  at: { readonly subject: Subject; readonly revision: number },
  objects: readonly DesiredObject[],
  policy: DriftRepairPolicy,
): Promise<{ drift: DriftResult; events: readonly CrEvent[] }> {
  const { revision } = at;
  const key = { revision, generation: ctx.generation };
  if (driftRepairStopped(ctx.status.driftRepairFailures, key)) return { drift: { kind: 'stopped' }, events: [] };
  const { failures, events } = await ctx.objects.repairDrift(at.subject, objects, policy);
  if (failures.length === 0) return { drift: { kind: 'settled' }, events };
  const { record, exhausted } = countFailedRepair(ctx.status.driftRepairFailures, key);
  const summary = failures.map((f) => `${f.object}: ${f.message}`).join('; ');
  if (!exhausted) return { drift: { kind: 'failing', record, summary }, events };
  const message = `Drift repair of revision ${revision} failed ${record.count} times; it stays stopped until an upgrade or a spec change: ${summary}`;
  return { drift: { kind: 'exhausted', record, message }, events };
}
