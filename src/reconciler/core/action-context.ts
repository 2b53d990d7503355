/**
 * What every action is given: one reconcile's view of its CR and the ports it may act through.
 * Actions return an Outcome (outcome.ts) for everything they expect, failures included; what they
 * throw is unexpected (an API error) and ends the reconcile as a ReconcileError.
 */
import type { DriftIgnoreRule } from '../../config/drift-ignore-rules.js';
import type { Watch } from '../../config/watch.js';
import { lostLeadership } from '../../runtime/reconcile.js';
import type { Logger } from '../../telemetry/logger.js';
import { apiVersionOf } from '../../util/group-kind.js';
import type { ReleaseAnnotations } from '../decide/annotations.js';
import { Reason } from '../status/conditions.js';
import { annotationRules } from '../drift/drift-ignore.js';
import type { HelmFailure, HelmPort, ReleaseRequest } from './helm-port.js';
import { withEvents, type CrEvent, type Outcome } from './outcome.js';
import type { Owner } from '../objects/ownership.js';
import { stampOwnership } from '../objects/render-ownership.js';
import type { CrdsPort, ManifestsPort, PlansPort, ReleaseObjectsPort, ReleaseStoragePort } from './ports.js';
import type { Subject as ObjectsSubject } from '../objects/release-object-types.js';
import type { HelmStatus } from '../status/status.js';
import type { Values } from '../desired/values.js';
import type { Sealer } from '../plan/upgrade-plan.js';

/** How long undoing an operation cancelled by shutdown may take (below the controller's ABORT_GRACE_MS). */
const SHUTDOWN_CLEANUP_MS = 4_000;

export interface Desired {
  readonly values: Values;
  /** Of the chart, values and helm major: decides whether the deployed revision is this state (release label). */
  readonly fingerprint: string;
  /** The fingerprint under the operator's key: what status shows and counts failed attempts by. */
  readonly keyedFingerprint: string;
  /** Of the part every CR of the watch shares (fleet.ts): what a waved rollout ships. */
  readonly fleetRevision: string;
  /** Of the CR's own values (fleet.ts): unchanged when only the fleet part changed. */
  readonly ownDigest: string;
  /** Labels on helm's release storage (fingerprint, owner kind, fleet revision, own values, secret paths). */
  readonly labels: Readonly<Record<string, string>>;
  /** Seals what a plan of this state does not show as it is, under the operator's key (upgrade-plan.ts Sealer). */
  readonly seal: Sealer;
}

/**
 * Each fact about the CR has one way in: its key (namespace, name, uid) and generation, its
 * annotations and status as parsed, and the watch's group, version and kind for what it owns
 * (ownerOf). Actions record no events: what they did travels on the Outcome they return.
 */
export interface ActionContext {
  readonly namespace: string;
  readonly name: string;
  /** The CR instance: a CR deleted and created again under its name has a new UID. */
  readonly uid: string;
  readonly generation: number | undefined;
  readonly annotations: ReleaseAnnotations;
  /** The CR's status as this reconcile found it. */
  readonly status: Readonly<HelmStatus>;
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** Hides sensitive values in text meant for logs (API server errors quote values). */
  redact(text: string): string;
  /** The user helm and every write act as (the watch's ServiceAccount); undefined: the operator itself. */
  readonly identity: string | undefined;
  /** helm, acting as `identity`. */
  readonly helm: HelmPort;
  readonly storage: ReleaseStoragePort;
  readonly objects: ReleaseObjectsPort;
  readonly manifests: ManifestsPort;
  /** The cluster's CRDs (`crds: CreateReplace`, chart-crds.ts); undefined: not wired, never replaced. */
  readonly crds?: CrdsPort;
  readonly watch: Pick<
    Watch,
    | 'group'
    | 'version'
    | 'kind'
    | 'chart'
    | 'overrideValues'
    | 'confineToNamespace'
    | 'allowClusterScoped'
    | 'dryRunOption'
    | 'driftIgnore'
    | 'allowDriftIgnoreAnnotation'
    | 'conflictPolicy'
    | 'crds'
    | 'allowKinds'
    | 'test'
    | 'approval'
    | 'approvedBy'
  >;
  /** Upgrade plans and their approvals (docs/adr/0083); undefined: not wired, upgrades are never held. */
  readonly plans?: PlansPort;
  readonly isNamespaced: (apiVersion: string, kind: string) => Promise<boolean>;
  readonly describeHelmError: (err: unknown) => HelmFailure;
  /** Mask values in OverrideValuesInUse events (`--suppress-override-values`). */
  readonly suppressOverrideValues: boolean;
}

/**
 * The drift ignore rules in force for the CR's release: the watch's, then the CR's annotation's
 * where the watch obeys it (`refused` says why not, when it does not).
 */
export function driftIgnoreRules(ctx: Pick<ActionContext, 'watch' | 'annotations'>): {
  readonly rules: readonly DriftIgnoreRule[];
  readonly refused?: string;
} {
  const fromCR = annotationRules(ctx.annotations.driftIgnore, ctx.watch.allowDriftIgnoreAnnotation === true);
  const rules = [...(ctx.watch.driftIgnore ?? []), ...fromCR.rules];
  return fromCR.problem === undefined ? { rules } : { rules, refused: fromCR.problem };
}

/** The CR as owner of the release's objects. */
export function ownerOf(ctx: Pick<ActionContext, 'watch' | 'namespace' | 'name' | 'uid'>): Owner {
  const { group, version, kind } = ctx.watch;
  return { apiVersion: apiVersionOf({ group, version }), kind, group, namespace: ctx.namespace, name: ctx.name, uid: ctx.uid };
}

/** Who acts on the release's objects, and for which CR (ReleaseObjectsPort). */
export function subjectOf(ctx: ActionContext): ObjectsSubject {
  return { owner: ownerOf(ctx), log: ctx.log, identity: ctx.identity, redact: (text) => ctx.redact(text) };
}

/** The chart, values and release labels of an install or upgrade (and of the pre-flight render). */
export function releaseRequest(ctx: ActionContext, desired: Desired): ReleaseRequest {
  return {
    release: ctx.name,
    namespace: ctx.namespace,
    chart: ctx.watch.chart.path,
    values: desired.values,
    labels: desired.labels,
    signal: ctx.signal,
  };
}

/** The install or upgrade helm is asked for: its objects rendered owned by the CR (render-ownership.ts). */
export function applyRequest(ctx: ActionContext, desired: Desired): ReleaseRequest {
  const stamp = { owner: ownerOf(ctx), chartName: ctx.watch.chart.name, namespace: ctx.namespace, isNamespaced: ctx.isNamespaced };
  return { ...releaseRequest(ctx, desired), postRender: (manifest) => stampOwnership(manifest, stamp) };
}

/**
 * Runs a helm step that is not an install or upgrade (an unlock, removing a failed install, an
 * uninstall): undefined when it worked, else its failure as an outcome, reported under `reason`
 * and retried with backoff, not counted against the retry budget.
 */
export async function helmStep(ctx: ActionContext, reason: Reason, step: () => Promise<unknown>): Promise<Outcome | undefined> {
  try {
    await step();
    return undefined;
  } catch (err) {
    return failureOf(ctx, err, { reason, event: 'ReleaseOperationFailed' });
  }
}

/**
 * The outcome of a helm call that threw. Leadership lost (its helm process was stopped) is not
 * the release failing: another replica may own it already, so nothing is reported or undone, and
 * what helm left is the next leader's to unlock. A shutdown while still leading is reported like any
 * failure. `counts`: the desired state an install or upgrade failed to reach, counted against its
 * retries, unless helm was cancelled by shutdown or by a reload restarting the controller: that
 * is not the release failing, or restarts during long upgrades would end in Stalled.
 */
const REFUSAL_REASONS: Readonly<Record<NonNullable<HelmFailure['refusedBy']>, Reason>> = {
  confinement: Reason.NamespaceConfinementViolation,
  allowKinds: Reason.KindNotAllowed,
};

export function failureOf(
  ctx: ActionContext,
  err: unknown,
  how: { reason: Reason; event: string; counts?: Desired; notDeployed?: boolean },
): Outcome {
  if (lostLeadership(ctx.signal)) return { kind: 'cancelled', cause: err };
  const counted = ctx.signal.aborted ? undefined : how.counts;
  const failure = ctx.describeHelmError(err);
  return {
    kind: 'helm-failed',
    // The gateway's refusal is the cause whatever helm was doing: say so, as the pre-flight would.
    reason: failure.refusedBy === undefined ? how.reason : REFUSAL_REASONS[failure.refusedBy],
    event: how.event,
    failure,
    cause: err,
    ...(counted === undefined ? {} : { fingerprint: counted.keyedFingerprint }),
    ...(how.notDeployed === true ? { notDeployed: true } : {}),
  };
}

/**
 * A failed install or upgrade that met another field manager's field (helm 4, `conflictPolicy:
 * fail`, or a write between the operator's check and helm's apply): `ResourceConflict`, with what
 * settles it when helm's message does not say. Retrying meets it again, and rolling back would
 * reset the very fields: it is left to a rule, the policy or a spec change. undefined otherwise.
 */
export function asConflict(outcome: Outcome): Outcome | undefined {
  if (outcome.kind !== 'helm-failed' || outcome.failure.fieldConflict !== true) return undefined;
  const failure = outcome.failure;
  if (failure.summary.includes('conflictPolicy')) return { ...outcome, reason: Reason.ResourceConflict };
  const how =
    'to take such a field back set conflictPolicy: force on the watch, to leave it to its manager add a driftIgnore rule naming it';
  return { ...outcome, reason: Reason.ResourceConflict, failure: { ...failure, summary: `${failure.summary}; ${how}` } };
}

/**
 * The signal for undoing what a failed helm operation left (a failed install's release, a failed
 * upgrade's revision). Shutting down while still leading (lost leadership never gets here), that
 * is still ours to undo, within the controller's abort grace period.
 */
export function cleanupSignal(ctx: ActionContext): AbortSignal {
  return ctx.signal.aborted ? AbortSignal.timeout(SHUTDOWN_CLEANUP_MS) : ctx.signal;
}

/**
 * One Warning event per watches.yaml override, as operator-sdk records for each install or
 * upgrade: on the outcome of one helm ran (not of one refused before it, nor cancelled by lost leadership).
 */
export function withOverrideEvents(ctx: ActionContext, outcome: Outcome): Outcome {
  if (outcome.kind === 'cancelled') return outcome;
  const events = Object.entries(ctx.watch.overrideValues).map(([key, value]): CrEvent => {
    const shown = ctx.suppressOverrideValues ? '****' : value;
    return {
      type: 'Warning',
      reason: 'OverrideValuesInUse',
      message: `Chart value "${key}" overridden to "${shown}" by operator's watches.yaml`,
    };
  });
  return withEvents(outcome, events);
}
