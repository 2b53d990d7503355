/**
 * The decisions of a reconcile, as pure functions of what it observed: first whether to go on with
 * the CR at all (`admit`), then which one action converges its release (`nextAction`). Each action
 * lives in actions/, one file each; the reconciler runs what these pick and nothing else.
 */
import type { FailedAttempts } from '../status/status.js';
import type { ObservedState, ReleaseRecord } from './state.js';

/**
 * Failed installs or upgrades of one desired state (same spec, overrides and chart) before the
 * retries stop with a Stalled condition; a new spec or chart starts again. Each failed upgrade
 * leaves a failed revision and a rollback behind, so retrying forever only churns history.
 */
export const MAX_FAILED_ATTEMPTS = 5;

/** What a reconcile knows of its CR before it reads the release. */
export interface Admission {
  /** A helm process for this release (a stopped controller's included) has not exited yet. */
  readonly helmRunning: boolean;
  readonly deleting: boolean;
  /** Our finalizer (or operator-sdk's earlier one) is on the CR. */
  readonly finalizer: boolean;
  readonly paused: boolean;
}

export type Gate =
  /** A live helm owns the release's pending revision: nothing may start beside it (ADR 0036). */
  | 'wait-for-helm'
  /** Being deleted with our finalizer: uninstall. */
  | 'finalize'
  /** Being deleted, not ours to hold: nothing to do. */
  | 'let-go'
  | 'pause'
  | 'reconcile';

export function admit(a: Admission): Gate {
  if (a.helmRunning) return 'wait-for-helm';
  if (a.deleting) return a.finalizer ? 'finalize' : 'let-go';
  return a.paused ? 'pause' : 'reconcile';
}

/** What a reconcile of a live CR knows once it has read the release. */
export interface Observed {
  readonly state: ObservedState;
  /** The desired chart, values and helm major, as status counts failures of it (keyed: see values.ts keyedFingerprint). */
  readonly fingerprint: string;
  /** Failed attempts as the CR's status counts them. */
  readonly failedAttempts: FailedAttempts | undefined;
}

export type Action =
  | { readonly kind: 'report-conflict'; readonly ownerKind: string }
  /** A release of our chart this operator did not make: reported, never upgraded (ADR 0042). */
  | { readonly kind: 'report-not-owned'; readonly chart: string }
  /** The desired state failed MAX_FAILED_ATTEMPTS times: no helm until it changes. */
  | { readonly kind: 'stall'; readonly count: number }
  | { readonly kind: 'unlock'; readonly latest: ReleaseRecord; readonly lastGood?: ReleaseRecord }
  /** `leftovers`: a failed install's release is there and goes first (helm#3338). */
  | { readonly kind: 'install'; readonly leftovers: boolean }
  | { readonly kind: 'upgrade'; readonly from: ReleaseRecord }
  | { readonly kind: 'correct-drift'; readonly deployed: ReleaseRecord };

export function nextAction(o: Observed): Action {
  const { state } = o;
  switch (state.kind) {
    case 'Conflict':
      return { kind: 'report-conflict', ownerKind: state.ownerKind };
    case 'NotOwned':
      return { kind: 'report-not-owned', chart: state.chart };
    case 'Locked':
      // Unlocking comes first even when retries are spent: it only undoes what a dead process left.
      return state.lastGood === undefined
        ? { kind: 'unlock', latest: state.latest }
        : { kind: 'unlock', latest: state.latest, lastGood: state.lastGood };
    case 'InSync':
      return { kind: 'correct-drift', deployed: state.deployed };
    case 'Absent':
    case 'FailedInstall':
    case 'OutOfSync':
      return installOrUpgrade(state, retriesSpent(o));
  }
}

function installOrUpgrade(
  state: Extract<ObservedState, { kind: 'Absent' | 'FailedInstall' | 'OutOfSync' }>,
  spent: number | undefined,
): Action {
  if (spent !== undefined) return { kind: 'stall', count: spent };
  if (state.kind === 'OutOfSync') return { kind: 'upgrade', from: state.deployed ?? state.latest };
  return { kind: 'install', leftovers: state.kind === 'FailedInstall' };
}

/** The failure count when this very desired state has used up its attempts; else undefined. */
export function retriesSpent(o: Pick<Observed, 'fingerprint' | 'failedAttempts'>): number | undefined {
  const failed = o.failedAttempts;
  return failed?.fingerprint === o.fingerprint && failed.count >= MAX_FAILED_ATTEMPTS ? failed.count : undefined;
}
