/**
 * What a reconcile ended in, as data: actions return outcomes instead of throwing, and carry the
 * events of what they did on the way (a rollback, an unlock, a repaired object). `summarize`
 * (summarize.ts) turns an outcome into status, events and what the queue does next.
 */
import type { EventTarget, EventType } from '../../k8s/events.js';
import type { Result } from '../../runtime/reconcile.js';
import type { Reason } from '../status/conditions.js';
import type { HelmFailure } from './helm-port.js';
import type { InventoryEntry } from '../objects/inventory.js';
import type { PlanStatus } from '../plan/plan-status.js';
import type { CoveringApproval } from '../plan/plan-approval.js';
import type { ReadinessSummary } from '../objects/readiness.js';
import type { DeployedRelease, DriftFightField, DriftFights, DriftRepairFailures, StatusEdit } from '../status/status.js';

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

/** What the chart's tests said of the revision an install or upgrade deployed (watch `test`). */
export interface ReleaseTestReport {
  readonly passed: boolean;
  /** Redacted; a failure's says which test failed, why, and the end of its logs. */
  readonly message: string;
}

/** An event a reconcile records: data until the reconciler records them all, once, on the way out. */
export interface CrEvent {
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
  /** Another CR it is about (the peer a batched uninstall finished); undefined: the reconciled CR. */
  readonly about?: EventTarget;
}

/** The plan an upgrade carried out, and why it was let go (docs/adr/0083). */
export type AppliedPlan =
  | { readonly status: PlanStatus; readonly why: 'approved' | 'not-required' }
  /** A later wave's plan that went with the rollout's approval of its fleet revision (docs/adr/0093). */
  | { readonly status: PlanStatus; readonly why: 'rollout'; readonly rollout: CoveringApproval };

/** What an action did on the way to its outcome, recorded before the outcome's own events. */
export type Outcome = OutcomeKind & { readonly events?: readonly CrEvent[] };

type OutcomeKind =
  | {
      readonly kind: 'installed' | 'upgraded';
      readonly deployment: Deployment & { readonly release: DeployedRelease };
      readonly notes: string;
      /** The fights an upgrade left to their managers, kept for the new revision (drift-fight.ts fightsFor). */
      readonly fights?: DriftFights;
      /** The tests of the new revision, when the watch runs them (a failure here is one the watch ignores). */
      readonly test?: ReleaseTestReport;
      /** The plan this upgrade carried out, and why it was let go (docs/adr/0083). */
      readonly plan?: AppliedPlan;
    }
  | {
      readonly kind: 'in-sync';
      readonly revision: number;
      readonly deployment: Deployment;
      readonly drift: DriftResult;
      readonly fields?: DriftFieldsReport;
      /** The tests of a revision whose install or upgrade never reported them (release-test.ts), run now. */
      readonly test?: ReleaseTestReport;
    }
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
  /** An upgrade's plan waits for approval (docs/adr/0083); the release serving is left as it is. `stale`: an approval of another digest. */
  | {
      readonly kind: 'plan-held';
      readonly plan: PlanStatus;
      readonly hint: string;
      readonly stale?: string;
      readonly retryAfterMs?: number;
      readonly isNew: boolean;
    }
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

/** What `summarize` decided: the reconciler applies it once, on the way out. */
export interface Summary {
  /** The status changes, in order (StatusDraft.apply). */
  readonly status: readonly StatusEdit[];
  readonly result: Result;
  /** Ends the reconcile instead of `result`: retried with backoff, or not at all when terminal. */
  readonly error?: Error;
  readonly events: readonly CrEvent[];
}

/** `outcome` with `events` recorded before its own (what led to it: an unlock, an adoption, a bad annotation). */
export function withEvents(outcome: Outcome, events: readonly CrEvent[]): Outcome {
  return events.length === 0 ? outcome : { ...outcome, events: [...events, ...(outcome.events ?? [])] };
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
