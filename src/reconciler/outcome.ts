/**
 * What a reconcile ended in, and `summarize`: the one place that turns it into the CR's conditions,
 * the event that reports it, and what the queue does next. Actions return outcomes instead of
 * throwing, so every path to Deployed, Ready, ReleaseFailed, Irreconcilable and Stalled is here.
 */
import { TerminalError, type Result } from '../runtime/reconcile.js';
import { ConditionType, Reason } from './conditions.js';
import type { HelmFailure } from './helm-port.js';
import type { InventoryEntry } from './inventory.js';
import { MAX_FAILED_ATTEMPTS } from './next-action.js';
import { failedReadiness, type ReadinessSummary } from './readiness.js';
import { conflictMessage } from './drift-fight.js';
import type { DeployedRelease, DriftFightField, DriftFights, DriftRepairFailures, StatusDraft } from './status.js';

/** The release as an install, an upgrade or a steady-state pass left it. */
export interface Deployment {
  /** Set when this pass read the release (an install, an upgrade, a manifest fetched from helm). */
  readonly release?: DeployedRelease;
  readonly inventory: readonly InventoryEntry[];
  readonly ready: ReadinessSummary;
}

export type DriftResult =
  /** Nothing differs any more, or the CR turns repair off. */
  | { readonly kind: 'settled' }
  /** The budget was spent on this revision earlier: repair stays stopped, its condition as it is. */
  | { readonly kind: 'stopped' }
  /** The API server refused some repairs; retried with backoff. */
  | { readonly kind: 'failing'; readonly record: DriftRepairFailures; readonly summary: string }
  /** This pass spent the budget: said once, then repair stops until an upgrade or a spec change. */
  | { readonly kind: 'exhausted'; readonly record: DriftRepairFailures; readonly message: string };

/** What drift repair did with single fields: fights (drift-fight.ts) and a refused ignore annotation. */
export interface DriftFieldsReport {
  /** undefined: repair is off, nothing is counted. */
  readonly fights: DriftFights | undefined;
  /** Fights found by this pass: one Warning event each. */
  readonly declared: readonly DriftFightField[];
  /** Why the CR's drift-ignore annotation is not obeyed. */
  readonly refused?: string;
}

export type Outcome =
  | { readonly kind: 'installed' | 'upgraded'; readonly deployment: Deployment & { readonly release: DeployedRelease }; readonly notes: string }
  | { readonly kind: 'in-sync'; readonly revision: number; readonly deployment: Deployment; readonly drift: DriftResult; readonly fields?: DriftFieldsReport }
  | {
      readonly kind: 'helm-failed';
      readonly reason: Reason;
      /** The Warning event's reason. */
      readonly event: string;
      readonly failure: HelmFailure;
      /** Counted against the retry budget of this desired state (installs and upgrades not cancelled). */
      readonly fingerprint?: string;
      /** An install failed: nothing of it is deployed. */
      readonly notDeployed?: boolean;
      readonly cause: unknown;
    }
  /**
   * Input only an edit can fix, or a reference that cannot be used yet. `stage: 'input'` is found
   * before the release is looked at, so it says nothing of retries.
   */
  | {
      readonly kind: 'refused';
      readonly reason: Reason;
      readonly message: string;
      readonly retry: boolean;
      readonly event: boolean;
      readonly stage: 'input' | 'release';
      /** Not retried with backoff, but looked at again at the reconcile period: what fixes it is not in the CR. */
      readonly recheck?: 'period';
    }
  | { readonly kind: 'stalled'; readonly count: number }
  /** A fleet change this CR's wave may not take yet (rollout.ts); the release serving is left as it is. */
  | { readonly kind: 'rollout-held'; readonly reason: Reason; readonly message: string; readonly retryAfterMs?: number }
  /** A pending revision was undone: decide again. */
  | { readonly kind: 'unlocked' }
  | { readonly kind: 'paused' }
  /** A helm process for the release has not exited: look again shortly. */
  | { readonly kind: 'helm-busy' }
  /** Leadership was lost mid-helm: nothing is reported, another replica may own the CR now. */
  | { readonly kind: 'cancelled'; readonly cause: unknown }
  /** `remaining`: what uninstall-wait still waits for. */
  | { readonly kind: 'uninstalled'; readonly found: boolean; readonly remaining: readonly string[] }
  /** Another CR's batched uninstall holds this release; the batch queues this CR again. */
  | { readonly kind: 'uninstall-held' }
  /** A deleted CR without our finalizer. */
  | { readonly kind: 'let-go' }
  /** Our finalizer was just added: that write's watch event brings the next reconcile. */
  | { readonly kind: 'finalizer-added' };

export interface Summary {
  readonly result: Result;
  /** Ends the reconcile instead of `result`: retried with backoff, or not at all when terminal. */
  readonly error?: Error;
  readonly events: readonly { readonly type: 'Normal' | 'Warning'; readonly reason: string; readonly message: string }[];
}

export interface SummaryInput {
  readonly name: string;
  readonly generation: number | undefined;
  /** The CR is being deleted: its conditions of a live release are left alone. */
  readonly deleting: boolean;
  /** The resync period of the CR. */
  readonly periodMs: number;
}

/** While `uninstall-wait` holds a CR, how often to look again for the release's objects. */
export const UNINSTALL_WAIT_POLL_MS = 2_000;
/** While a helm process of a stopped controller still runs for the release, how often to look again. */
export const HELM_EXIT_POLL_MS = 1_000;

/** A failure already written to status and events; the queue retries it with backoff. */
export class ReportedError extends Error {
  override readonly name = 'ReportedError';
}

type Summarizer<K extends Outcome['kind']> = (status: StatusDraft, outcome: Extract<Outcome, { kind: K }>, input: SummaryInput) => Summary;

const NOTHING: Summary = { result: {}, events: [] };

/** One summary per outcome: the table that says what each outcome means for status and the queue. */
const SUMMARIES: { readonly [K in Outcome['kind']]: Summarizer<K> } = {
  paused: (status) => {
    status.setCondition({
      type: ConditionType.Paused,
      status: 'True',
      reason: Reason.PauseReconcileAnnotationTrue,
      message: 'Reconciliation is paused by the helm.sdk.operatorframework.io/paused annotation',
    });
    return NOTHING;
  },
  'helm-busy': () => ({ result: { requeueAfterMs: HELM_EXIT_POLL_MS }, events: [] }),
  cancelled: (_status, o) => ({ result: {}, error: o.cause instanceof Error ? o.cause : new Error(String(o.cause)), events: [] }),
  'uninstall-held': () => NOTHING,
  'let-go': () => NOTHING,
  'finalizer-added': () => NOTHING,
  uninstalled: (status, o, input) => uninstalled(status, o, input),
  installed: (status, o, input) => deployedNow(status, o, input),
  upgraded: (status, o, input) => deployedNow(status, o, input),
  'in-sync': (status, o, input) => inSync(status, o, input),
  'helm-failed': (status, o, input) => helmFailed(status, o, input),
  refused: (status, o, input) => {
    status.setCondition({ type: ConditionType.Irreconcilable, status: 'True', reason: o.reason, message: o.message });
    if (!o.retry) status.setObservedGeneration(input.generation);
    const events = o.event ? [{ type: 'Warning' as const, reason: o.reason, message: o.message }] : [];
    if (o.recheck === 'period') return { result: { requeueAfterMs: input.periodMs }, events };
    const error = o.retry ? new ReportedError(o.message) : new TerminalError(o.message);
    return { result: {}, error, events };
  },
  stalled: (status, o, input) => {
    stalled(status, o.count, input);
    return { result: { requeueAfterMs: input.periodMs }, events: [] };
  },
  'rollout-held': (status, o, input) => {
    status.setCondition({ type: ConditionType.Rollout, status: 'False', reason: o.reason, message: o.message });
    return { result: { requeueAfterMs: o.retryAfterMs ?? input.periodMs }, events: [] };
  },
  // The reconciler decides again and never ends on this outcome.
  unlocked: () => NOTHING,
};

/** Outcomes of a CR past the pause gate and not being deleted: it is being reconciled. */
const RECONCILING = new Set<Outcome['kind']>(['installed', 'upgraded', 'in-sync', 'helm-failed', 'refused', 'stalled', 'unlocked', 'rollout-held']);

/** Outcomes of an action still under way (or of one not begun): Reconciling stays as it is. */
const UNDER_WAY = new Set<Outcome['kind']>(['helm-busy', 'cancelled', 'uninstall-held', 'finalizer-added']);

/** Writes `outcome` into the draft (nothing else: no I/O); says what to record and how the reconcile ends. */
export function summarize(status: StatusDraft, outcome: Outcome, input: SummaryInput): Summary {
  const waiting = outcome.kind === 'uninstalled' && outcome.remaining.length > 0;
  if (!UNDER_WAY.has(outcome.kind) && !waiting) status.removeCondition(ConditionType.Reconciling);
  if (RECONCILING.has(outcome.kind) && !input.deleting) {
    status.removeCondition(ConditionType.Paused);
    status.setCondition({ type: ConditionType.Initialized, status: 'True', reason: Reason.Reconciled, message: '' });
    // Stalled is true only while the retries of this desired state are spent: an outcome found
    // before the release was looked at says nothing of that.
    if (outcome.kind !== 'stalled' && !(outcome.kind === 'refused' && outcome.stage === 'input')) status.removeCondition(ConditionType.Stalled);
  }
  return (SUMMARIES[outcome.kind] as Summarizer<Outcome['kind']>)(status, outcome, input);
}

function deployedNow(status: StatusDraft, o: Extract<Outcome, { kind: 'installed' | 'upgraded' }>, input: SummaryInput): Summary {
  const reason = o.kind === 'installed' ? Reason.InstallSuccessful : Reason.UpgradeSuccessful;
  const { release } = o.deployment;
  const message = o.notes.trim() === '' ? `Release ${release.name} revision ${release.revision} deployed` : o.notes;
  // A new revision starts drift repair afresh.
  driftSettled(status);
  deployed(status, { reason, message }, o.deployment);
  status.setObservedGeneration(input.generation);
  const verb = o.kind === 'installed' ? 'Installed' : 'Upgraded';
  const chart = `${release.chart}-${release.chartVersion}`;
  return { result: { requeueAfterMs: input.periodMs }, events: [{ type: 'Normal', reason, message: `${verb} release ${release.name}: revision ${release.revision}, chart ${chart}` }] };
}

/** `deployedReason`: Deployed's reason when it is not `reason` (kept from the install or upgrade that deployed). */
function deployed(status: StatusDraft, how: { reason: Reason; message: string; deployedReason?: string }, d: Deployment): void {
  status.setCondition({ type: ConditionType.Deployed, status: 'True', reason: how.deployedReason ?? how.reason, message: how.message });
  status.setCondition({ type: ConditionType.ReleaseFailed, status: 'False', reason: how.reason, message: '' });
  status.setCondition({ type: ConditionType.Irreconcilable, status: 'False', reason: Reason.Reconciled, message: '' });
  status.clearFailures();
  if (d.release !== undefined) status.setRelease(d.release, [...d.inventory]);
  status.setCondition({ type: ConditionType.Ready, status: d.ready.status, reason: d.ready.reason, message: d.ready.message });
}

/**
 * Nothing for helm to do: Deployed keeps the message of the install or upgrade that made it true
 * (the NOTES), or says which revision is deployed when it was not true before.
 */
function inSync(status: StatusDraft, o: Extract<Outcome, { kind: 'in-sync' }>, input: SummaryInput): Summary {
  const reason = o.revision === 1 ? Reason.InstallSuccessful : Reason.UpgradeSuccessful;
  const prior = status.current.conditions.find((c) => c.type === ConditionType.Deployed);
  const kept = prior?.status === 'True' ? prior : undefined;
  const drift = o.drift;
  applyDrift(status, drift);
  const fieldEvents = o.fields === undefined ? [] : applyDriftFields(status, drift, o.fields);
  const message = kept?.message ?? `Release ${input.name} revision ${o.revision} deployed`;
  deployed(status, { reason, message, ...(kept === undefined ? {} : { deployedReason: kept.reason }) }, o.deployment);
  const events = [...(drift.kind === 'exhausted' ? [{ type: 'Warning' as const, reason: Reason.RetriesExhausted, message: drift.message }] : []), ...fieldEvents];
  // The release stays deployed and its other objects were handled; back off and try again.
  if (drift.kind === 'failing') return { result: {}, error: new ReportedError(drift.summary), events };
  status.setObservedGeneration(input.generation);
  return { result: { requeueAfterMs: input.periodMs }, events };
}

/**
 * A failed helm operation: ReleaseFailed and Ready say why; an install or upgrade counts against
 * the retry budget of its desired state, and the one that spends it stops the retries.
 */
function helmFailed(status: StatusDraft, o: Extract<Outcome, { kind: 'helm-failed' }>, input: SummaryInput): Summary {
  let failure = o.failure;
  if (o.notDeployed === true) status.setCondition({ type: ConditionType.Deployed, status: 'False', reason: Reason.InstallError, message: failure.summary });
  if (o.fingerprint !== undefined) {
    const count = status.recordFailure(o.fingerprint);
    if (count >= MAX_FAILED_ATTEMPTS) {
      stalled(status, count, input);
      failure = { summary: `${failure.summary} (failed ${count} times; retries stopped until the spec or the chart changes)`, retryable: false };
    }
  }
  status.setCondition({ type: ConditionType.ReleaseFailed, status: 'True', reason: o.reason, message: failure.summary });
  status.setCondition(failedReadiness(o.reason, failure.summary, status.current.deployedRelease?.revision));
  const events = [{ type: 'Warning' as const, reason: o.event, message: failure.summary }];
  if (failure.retryable) return { result: {}, error: new ReportedError(failure.summary, { cause: o.cause }), events };
  status.setObservedGeneration(input.generation);
  return { result: {}, error: new TerminalError(failure.summary, { cause: o.cause }), events };
}

function applyDrift(status: StatusDraft, drift: DriftResult): void {
  if (drift.kind === 'settled') driftSettled(status);
  if (drift.kind === 'settled' || drift.kind === 'stopped') return;
  status.setDriftRepairFailures(drift.record);
  const [reason, message] =
    drift.kind === 'failing' ? [Reason.DriftRepairFailed, `Could not restore the release manifest: ${drift.summary}`] : [Reason.RetriesExhausted, drift.message];
  status.setCondition({ type: ConditionType.Drifted, status: 'True', reason, message });
}

function driftSettled(status: StatusDraft): void {
  status.clearDriftRepairFailures();
  status.setDriftFights(undefined);
  status.removeCondition(ConditionType.Drifted);
}

/**
 * Fights are kept in status; while the rest of the release is settled, Drifted says which fields
 * are no longer restored and how to settle each, else that the ignore annotation is refused.
 * A failing repair's condition says more urgent things and wins.
 */
function applyDriftFields(status: StatusDraft, drift: DriftResult, r: DriftFieldsReport): Summary['events'] {
  status.setDriftFights(r.fights);
  const conflicts = r.fights?.fields.filter((f) => f.conflict === true) ?? [];
  const events: Summary['events'][number][] = r.declared.map((f) => ({ type: 'Warning', reason: Reason.DriftConflict, message: conflictMessage(f) }));
  if (drift.kind !== 'settled') return events;
  if (conflicts.length > 0) {
    status.setCondition({ type: ConditionType.Drifted, status: 'True', reason: Reason.DriftConflict, message: conflicts.map(conflictMessage).join('; ') });
  } else if (r.refused !== undefined) {
    const prior = status.current.conditions.find((c) => c.type === ConditionType.Drifted);
    status.setCondition({ type: ConditionType.Drifted, status: 'False', reason: Reason.DriftIgnoreRefused, message: r.refused });
    if (prior?.reason !== Reason.DriftIgnoreRefused || prior.message !== r.refused) events.push({ type: 'Warning', reason: Reason.DriftIgnoreRefused, message: r.refused });
  }
  return events;
}

function stalled(status: StatusDraft, count: number, input: SummaryInput): void {
  status.setCondition({
    type: ConditionType.Stalled,
    status: 'True',
    reason: Reason.RetriesExhausted,
    message: `helm failed ${count} times with this spec and chart; retries stopped until the spec or the chart changes`,
  });
  status.setObservedGeneration(input.generation);
}

function uninstalled(status: StatusDraft, o: Extract<Outcome, { kind: 'uninstalled' }>, input: SummaryInput): Summary {
  if (o.remaining.length > 0) {
    status.setCondition({
      type: ConditionType.Deployed,
      status: 'False',
      reason: Reason.UninstallSuccessful,
      message: `Waiting until all resources are deleted: ${o.remaining.length} left (${o.remaining.slice(0, 3).join(', ')})`,
    });
    return { result: { requeueAfterMs: UNINSTALL_WAIT_POLL_MS }, events: [] };
  }
  status.setCondition({ type: ConditionType.Deployed, status: 'False', reason: Reason.UninstallSuccessful, message: 'Release uninstalled' });
  status.setCondition({ type: ConditionType.ReleaseFailed, status: 'False', reason: Reason.UninstallSuccessful, message: '' });
  status.setRelease(undefined, undefined);
  return { result: {}, events: o.found ? [{ type: 'Normal', reason: Reason.UninstallSuccessful, message: `Uninstalled release ${input.name}` }] : [] };
}

