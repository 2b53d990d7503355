/**
 * The state of a CR's release, read from helm's storage, as one explicit value that picks exactly
 * one action (the shape of Flux helm-controller's DetermineReleaseState).
 */
import type { ReleaseRecord, ReleaseStatus } from '../../helm/types.js';
import type { AdoptionGround } from './adoption.js';

export type { ReleaseRecord, ReleaseStatus };

/** Release labels this operator sets on install and upgrade (they live on helm's storage Secrets). */
export const RELEASE_LABELS = {
  fingerprint: 'helm.sdk.operatorframework.io/fingerprint',
  ownerKind: 'helm.sdk.operatorframework.io/owner-kind',
  /** The fleet revision (fleet.ts) the revision was made from. */
  fleetRevision: 'helm.sdk.operatorframework.io/fleet-revision',
  /** A digest of the CR's own values the revision was made from (fleet.ts). */
  ownValues: 'helm.sdk.operatorframework.io/own-values',
} as const;

export type ReleaseState =
  /** No release: install. */
  | { readonly kind: 'Absent' }
  /** Another kind's CR owns a release of this name: report, do nothing. */
  | { readonly kind: 'Conflict'; readonly ownerKind: string }
  /**
   * A release that carries no owner label (installed by hand, or by operator-sdk): observe.ts
   * decides whether the CR may adopt it (adoption.ts) or it is NotOwned.
   */
  | { readonly kind: 'Unmanaged'; readonly latest: ReleaseRecord }
  /** A release of our chart that this operator did not make and may not adopt: report, never touch it. */
  | { readonly kind: 'NotOwned'; readonly chart: string }
  /** The last operation never finished (the process died mid-way): unlock, then decide again. */
  | { readonly kind: 'Locked'; readonly latest: ReleaseRecord; readonly lastGood?: ReleaseRecord }
  /** Nothing was ever deployed and the last attempt failed: remove the leftovers, then install. */
  | { readonly kind: 'FailedInstall'; readonly latest: ReleaseRecord }
  /**
   * Deployed, but not with the desired chart and values (or the last upgrade failed): upgrade.
   * `adopted`: an unmanaged release this upgrade takes over, and on what ground.
   */
  | { readonly kind: 'OutOfSync'; readonly latest: ReleaseRecord; readonly deployed?: ReleaseRecord; readonly adopted?: AdoptionGround }
  /** Deployed with exactly the desired state: helm has nothing to do. */
  | { readonly kind: 'InSync'; readonly deployed: ReleaseRecord };

/** A state as observe.ts settles it: an unmanaged release is adopted, not owned, or gone by then. */
export type ObservedState = Exclude<ReleaseState, { readonly kind: 'Unmanaged' }>;

/** A revision some operation began and never finished. */
const isUnfinished = (s: ReleaseStatus): boolean => s.startsWith('pending-') || s === 'uninstalling' || s === 'unknown';

/** Pure: the record of the highest revision; undefined when there is none. */
export function latestRecord(records: readonly ReleaseRecord[]): ReleaseRecord | undefined {
  return records.reduce<ReleaseRecord | undefined>((top, r) => (top === undefined || r.revision > top.revision ? r : top), undefined);
}

/** What the labels of a release in the desired state say. */
export interface ExpectedLabels {
  readonly fingerprint: string;
  readonly ownerKind: string;
}

/**
 * Decides the state from the release's revisions (any order). Pending revisions are treated as
 * abandoned: only the leader reconciles, one key at a time, so no other operation can be running.
 */
export function determineReleaseState(records: readonly ReleaseRecord[], desired: ExpectedLabels): ReleaseState {
  const history = [...records].sort((a, b) => b.revision - a.revision);
  const latest = history[0];
  if (latest === undefined || latest.status === 'uninstalled') return { kind: 'Absent' };

  const owner = latest.labels[RELEASE_LABELS.ownerKind];
  if (owner === undefined) return { kind: 'Unmanaged', latest };
  if (owner !== desired.ownerKind) return { kind: 'Conflict', ownerKind: owner };

  const lastGood = history.find((r) => r.status === 'deployed' || r.status === 'superseded');
  if (isUnfinished(latest.status)) {
    return lastGood === undefined ? { kind: 'Locked', latest } : { kind: 'Locked', latest, lastGood };
  }
  if (lastGood === undefined) return { kind: 'FailedInstall', latest };
  if (latest.status === 'deployed' && latest.labels[RELEASE_LABELS.fingerprint] === desired.fingerprint) {
    return { kind: 'InSync', deployed: latest };
  }
  const deployed = history.find((r) => r.status === 'deployed');
  return deployed === undefined ? { kind: 'OutOfSync', latest } : { kind: 'OutOfSync', latest, deployed };
}
