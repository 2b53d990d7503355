/**
 * `summarize`: the one place that decides what an outcome means for the CR: its conditions and
 * status fields, the events that report it, and what the queue does next. Pure: it reads the
 * status as the reconcile found it and returns edits; the reconciler applies them once, on the way
 * out. Every path to Deployed, Ready, ReleaseFailed, Irreconcilable and Stalled is in its table.
 */
import { TerminalError } from '../../runtime/reconcile.js';
import { ConditionType, Reason, type ConditionInput } from '../status/conditions.js';
import { conflictMessage } from '../drift/drift-fight.js';
import { MAX_FAILED_ATTEMPTS } from './next-action.js';
import {
  HELM_EXIT_POLL_MS,
  ReportedError,
  UNINSTALL_WAIT_POLL_MS,
  type CrEvent,
  type Deployment,
  type DriftFieldsReport,
  type DriftResult,
  type Outcome,
  type ReleaseTestReport,
  type Summary,
  type SummaryInput,
} from '../core/outcome.js';
import { planApplied, planHeld } from '../plan/plan-summary.js';
import { failedReadiness } from '../objects/readiness.js';
import { countFailure, type HelmStatus, type StatusEdit } from '../status/status.js';

type Status = Readonly<HelmStatus>;
type Summarizer<K extends Outcome['kind']> = (status: Status, outcome: Extract<Outcome, { kind: K }>, input: SummaryInput) => Summary;

const NOTHING: Summary = { status: [], result: {}, events: [] };
const set = (c: ConditionInput): StatusEdit => ({ set: c });
const generation = (input: SummaryInput): StatusEdit => ({ observedGeneration: input.generation });

/** One summary per outcome: the table that says what each outcome means for status and the queue. */
const SUMMARIES: { readonly [K in Outcome['kind']]: Summarizer<K> } = {
  paused: () => ({
    ...NOTHING,
    status: [
      set({
        type: ConditionType.Paused,
        status: 'True',
        reason: Reason.PauseReconcileAnnotationTrue,
        message: 'Reconciliation is paused by the helm.sdk.operatorframework.io/paused annotation',
      }),
    ],
  }),
  'helm-busy': () => ({ ...NOTHING, result: { requeueAfterMs: HELM_EXIT_POLL_MS } }),
  cancelled: (_status, o) => ({ ...NOTHING, error: o.cause instanceof Error ? o.cause : new Error(String(o.cause)) }),
  'uninstall-held': () => NOTHING,
  'let-go': () => NOTHING,
  'finalizer-added': () => NOTHING,
  uninstalled: (_status, o, input) => uninstalled(o, input),
  installed: (_status, o, input) => deployedNow(o, input),
  upgraded: (_status, o, input) => deployedNow(o, input),
  'in-sync': (status, o, input) => inSync(status, o, input),
  'helm-failed': (status, o, input) => helmFailed(status, o, input),
  refused: (_status, o, input) => {
    const status = [
      set({ type: ConditionType.Irreconcilable, status: 'True', reason: o.reason, message: o.message }),
      ...(o.retry ? [] : [generation(input)]),
    ];
    const events: CrEvent[] = o.event ? [{ type: 'Warning', reason: o.reason, message: o.message }] : [];
    if (o.recheck === 'period') return { status, result: { requeueAfterMs: input.periodMs }, events };
    const error = o.retry ? new ReportedError(o.message) : new TerminalError(o.message);
    return { status, result: {}, error, events };
  },
  stalled: (_status, o, input) => ({ status: stalled(o.count, input), result: { requeueAfterMs: input.periodMs }, events: [] }),
  'rollout-held': (_status, o, input) => ({
    status: [set({ type: ConditionType.Rollout, status: 'False', reason: o.reason, message: o.message })],
    result: { requeueAfterMs: o.retryAfterMs ?? input.periodMs },
    events: [],
  }),
  // The reconciler decides again and never ends on this outcome.
  unlocked: () => NOTHING,
  'plan-held': (_status, o, input) => planHeld(o, input),
};

/** Outcomes of a CR past the pause gate and not being deleted: it is being reconciled. */
const RECONCILING = new Set<Outcome['kind']>([
  'installed',
  'upgraded',
  'in-sync',
  'helm-failed',
  'refused',
  'stalled',
  'unlocked',
  'rollout-held',
  'plan-held',
]);

/** Outcomes of an action still under way (or of one not begun): Reconciling stays as it is. */
const UNDER_WAY = new Set<Outcome['kind']>(['helm-busy', 'cancelled', 'uninstall-held', 'finalizer-added']);

/** What `outcome` means for a CR whose status is `status`, the events the outcome carries first. */
export function summarize(status: Status, outcome: Outcome, input: SummaryInput): Summary {
  const edits: StatusEdit[] = [];
  const waiting = outcome.kind === 'uninstalled' && outcome.remaining.length > 0;
  if (!UNDER_WAY.has(outcome.kind) && !waiting) edits.push({ remove: ConditionType.Reconciling });
  if (RECONCILING.has(outcome.kind) && !input.deleting) {
    edits.push(
      { remove: ConditionType.Paused },
      set({ type: ConditionType.Initialized, status: 'True', reason: Reason.Reconciled, message: '' }),
    );
    // Stalled is true only while the retries of this desired state are spent: an outcome found
    // before the release was looked at says nothing of that.
    if (outcome.kind !== 'stalled' && !(outcome.kind === 'refused' && outcome.stage === 'input'))
      edits.push({ remove: ConditionType.Stalled });
  }
  const decided = (SUMMARIES[outcome.kind] as Summarizer<Outcome['kind']>)(status, outcome, input);
  const planned = outcome.kind === 'upgraded' && outcome.plan !== undefined ? planApplied(outcome.plan) : [];
  return { ...decided, status: [...edits, ...decided.status, ...planned], events: [...(outcome.events ?? []), ...decided.events] };
}

function deployedNow(o: Extract<Outcome, { kind: 'installed' | 'upgraded' }>, input: SummaryInput): Summary {
  const reason = o.kind === 'installed' ? Reason.InstallSuccessful : Reason.UpgradeSuccessful;
  const { release } = o.deployment;
  const message = o.notes.trim() === '' ? `Release ${release.name} revision ${release.revision} deployed` : o.notes;
  // A new revision starts drift repair afresh, but for the fights the upgrade left to their managers.
  const kept = o.fights !== undefined && o.fights.fields.length > 0 ? o.fights : undefined;
  const drift: StatusEdit[] = kept === undefined ? driftSettled() : [{ driftRepairFailures: undefined }, { driftFights: kept }];
  const status = [...drift, ...deployed({ reason, message }, o.deployment), ...tested(o.test), generation(input)];
  const verb = o.kind === 'installed' ? 'Installed' : 'Upgraded';
  const chart = `${release.chart}-${release.chartVersion}`;
  return {
    status,
    result: { requeueAfterMs: input.periodMs },
    events: [{ type: 'Normal', reason, message: `${verb} release ${release.name}: revision ${release.revision}, chart ${chart}` }],
  };
}

/** `deployedReason`: Deployed's reason when it is not `reason` (kept from the install or upgrade that deployed). */
function deployed(how: { reason: Reason; message: string; deployedReason?: string }, d: Deployment): StatusEdit[] {
  return [
    set({ type: ConditionType.Deployed, status: 'True', reason: how.deployedReason ?? how.reason, message: how.message }),
    set({ type: ConditionType.ReleaseFailed, status: 'False', reason: how.reason, message: '' }),
    set({ type: ConditionType.Irreconcilable, status: 'False', reason: Reason.Reconciled, message: '' }),
    { failedAttempts: undefined },
    ...(d.release === undefined ? [] : [{ release: d.release, inventory: [...d.inventory] }]),
    set({ type: ConditionType.Ready, status: d.ready.status, reason: d.ready.reason, message: d.ready.message }),
  ];
}

/**
 * Nothing for helm to do: Deployed keeps the message of the install or upgrade that made it true
 * (the NOTES), or says which revision is deployed when it was not true before.
 */
function inSync(status: Status, o: Extract<Outcome, { kind: 'in-sync' }>, input: SummaryInput): Summary {
  const reason = o.revision === 1 ? Reason.InstallSuccessful : Reason.UpgradeSuccessful;
  const prior = status.conditions.find((c) => c.type === ConditionType.Deployed);
  const kept = prior?.status === 'True' ? prior : undefined;
  const drift = o.drift;
  const fields = o.fields === undefined ? { status: [], events: [] } : driftFields(status, drift, o.fields);
  const message = kept?.message ?? `Release ${input.name} revision ${o.revision} deployed`;
  const edits = [
    ...driftEdits(drift),
    ...fields.status,
    ...deployed({ reason, message, ...(kept === undefined ? {} : { deployedReason: kept.reason }) }, o.deployment),
    ...(o.test === undefined ? failedTestKept(status) : tested(o.test)),
  ];
  const events = [
    ...(drift.kind === 'exhausted' ? [{ type: 'Warning' as const, reason: Reason.RetriesExhausted, message: drift.message }] : []),
    ...fields.events,
  ];
  // The release stays deployed and its other objects were handled; back off and try again.
  if (drift.kind === 'failing') return { status: edits, result: {}, error: new ReportedError(drift.summary), events };
  return { status: [...edits, generation(input)], result: { requeueAfterMs: input.periodMs }, events };
}

/**
 * A failed helm operation: ReleaseFailed and Ready say why; an install or upgrade counts against
 * the retry budget of its desired state, and the one that spends it stops the retries.
 */
function helmFailed(status: Status, o: Extract<Outcome, { kind: 'helm-failed' }>, input: SummaryInput): Summary {
  let failure = o.failure;
  const edits: StatusEdit[] = [];
  if (o.notDeployed === true)
    edits.push(set({ type: ConditionType.Deployed, status: 'False', reason: Reason.InstallError, message: failure.summary }));
  if (o.fingerprint !== undefined) {
    const attempts = countFailure(status.failedAttempts, o.fingerprint);
    edits.push({ failedAttempts: attempts });
    if (attempts.count >= MAX_FAILED_ATTEMPTS) {
      edits.push(...stalled(attempts.count, input));
      failure = {
        summary: `${failure.summary} (failed ${attempts.count} times; retries stopped until the spec or the chart changes)`,
        retryable: false,
      };
    }
  }
  // A remediated test failure: the revision it was about is gone, and the one serving passed before.
  if (o.reason === Reason.TestFailed) edits.push({ remove: ConditionType.TestSuccess });
  edits.push(
    set({ type: ConditionType.ReleaseFailed, status: 'True', reason: o.reason, message: failure.summary }),
    set(failedReadiness(o.reason, failure.summary, status.deployedRelease?.revision)),
  );
  const events: CrEvent[] = [{ type: 'Warning', reason: o.event, message: failure.summary }];
  if (failure.retryable) return { status: edits, result: {}, error: new ReportedError(failure.summary, { cause: o.cause }), events };
  return { status: [...edits, generation(input)], result: {}, error: new TerminalError(failure.summary, { cause: o.cause }), events };
}

/**
 * TestSuccess after an install or upgrade: set when the watch runs tests, else removed. A failure
 * the watch ignores (a remediated one is a helm-failed outcome) still turns Ready False: the
 * revision serves, but is not what a passing chart deploys.
 */
function tested(test: ReleaseTestReport | undefined): StatusEdit[] {
  if (test === undefined) return [{ remove: ConditionType.TestSuccess }];
  const reason = test.passed ? Reason.TestSucceeded : Reason.TestFailed;
  const edits: StatusEdit[] = [
    set({ type: ConditionType.TestSuccess, status: test.passed ? 'True' : 'False', reason, message: test.message }),
  ];
  if (!test.passed) edits.push(set({ type: ConditionType.Ready, status: 'False', reason, message: test.message }));
  return edits;
}

/** In sync: a revision whose failed tests were ignored stays not Ready until an install or upgrade tests another. */
function failedTestKept(status: Status): StatusEdit[] {
  const test = status.conditions.find((c) => c.type === ConditionType.TestSuccess);
  return test?.status === 'False'
    ? [set({ type: ConditionType.Ready, status: 'False', reason: Reason.TestFailed, message: test.message })]
    : [];
}

function driftEdits(drift: DriftResult): StatusEdit[] {
  if (drift.kind === 'settled') return driftSettled();
  if (drift.kind === 'stopped') return [];
  const [reason, message] =
    drift.kind === 'failing'
      ? [Reason.DriftRepairFailed, `Could not restore the release manifest: ${drift.summary}`]
      : [Reason.RetriesExhausted, drift.message];
  return [{ driftRepairFailures: drift.record }, set({ type: ConditionType.Drifted, status: 'True', reason, message })];
}

function driftSettled(): StatusEdit[] {
  return [{ driftRepairFailures: undefined }, { driftFights: undefined }, { remove: ConditionType.Drifted }];
}

/**
 * Fights are kept in status; while the rest of the release is settled, Drifted says which fields
 * are no longer restored and how to settle each, else that the ignore annotation is refused (its
 * event once, while the condition as found says something else). A failing repair's condition
 * says more urgent things and wins.
 */
function driftFields(status: Status, drift: DriftResult, r: DriftFieldsReport): Pick<Summary, 'status' | 'events'> {
  const edits: StatusEdit[] = [{ driftFights: r.fights }];
  const conflicts = r.fights?.fields.filter((f) => f.conflict === true) ?? [];
  const events: CrEvent[] = r.declared.map((f) => ({ type: 'Warning', reason: Reason.DriftConflict, message: conflictMessage(f) }));
  if (drift.kind !== 'settled') return { status: edits, events };
  if (conflicts.length > 0) {
    edits.push(
      set({
        type: ConditionType.Drifted,
        status: 'True',
        reason: Reason.DriftConflict,
        message: conflicts.map(conflictMessage).join('; '),
      }),
    );
  } else if (r.refused !== undefined) {
    const prior = status.conditions.find((c) => c.type === ConditionType.Drifted);
    edits.push(set({ type: ConditionType.Drifted, status: 'False', reason: Reason.DriftIgnoreRefused, message: r.refused }));
    if (prior?.reason !== Reason.DriftIgnoreRefused || prior.message !== r.refused)
      events.push({ type: 'Warning', reason: Reason.DriftIgnoreRefused, message: r.refused });
  }
  return { status: edits, events };
}

function stalled(count: number, input: SummaryInput): StatusEdit[] {
  const message = `helm failed ${count} times with this spec and chart; retries stopped until the spec or the chart changes`;
  return [set({ type: ConditionType.Stalled, status: 'True', reason: Reason.RetriesExhausted, message }), generation(input)];
}

function uninstalled(o: Extract<Outcome, { kind: 'uninstalled' }>, input: SummaryInput): Summary {
  if (o.remaining.length > 0) {
    const message = `Waiting until all resources are deleted: ${o.remaining.length} left (${o.remaining.slice(0, 3).join(', ')})`;
    return {
      status: [set({ type: ConditionType.Deployed, status: 'False', reason: Reason.UninstallSuccessful, message })],
      result: { requeueAfterMs: UNINSTALL_WAIT_POLL_MS },
      events: [],
    };
  }
  const status: StatusEdit[] = [
    set({ type: ConditionType.Deployed, status: 'False', reason: Reason.UninstallSuccessful, message: 'Release uninstalled' }),
    set({ type: ConditionType.ReleaseFailed, status: 'False', reason: Reason.UninstallSuccessful, message: '' }),
    { release: undefined, inventory: undefined },
  ];
  return {
    status,
    result: {},
    events: o.found ? [{ type: 'Normal', reason: Reason.UninstallSuccessful, message: `Uninstalled release ${input.name}` }] : [],
  };
}
