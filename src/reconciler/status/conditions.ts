/** Status conditions: the metav1.Condition shape and pure helpers to change a list of them. */

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export const ConditionType = {
  Initialized: 'Initialized',
  Deployed: 'Deployed',
  ReleaseFailed: 'ReleaseFailed',
  Irreconcilable: 'Irreconcilable',
  Paused: 'Paused',
  /** Ours: whether the release's objects are ready (kstatus-like rules, see readiness.ts). */
  Ready: 'Ready',
  /** Ours: installs or upgrades of this exact spec and chart failed too often; retries stopped. */
  Stalled: 'Stalled',
  /** Ours: objects differ from the release manifest and the API server refused to restore them. */
  Drifted: 'Drifted',
  /** Flux's: an install, upgrade or uninstall is under way (written before it starts). */
  Reconciling: 'Reconciling',
  /** Ours: a fleet change (a new chart) waits for its wave, was halted, or failed on this CR (docs/rollouts.md). */
  Rollout: 'Rollout',
  /** Flux's: whether the chart's tests passed on the revision the last install or upgrade made (watch `test`, docs/adr/0081). */
  TestSuccess: 'TestSuccess',
  /** Ours: an upgrade's plan was made (docs/adr/0083): True while it waits for approval. */
  Planned: 'Planned',
  /** Ours: whether the plan of the pending upgrade is approved; False names the digest that waits. */
  Approved: 'Approved',
} as const;
export type ConditionType = (typeof ConditionType)[keyof typeof ConditionType];

/** operator-sdk's reasons first (users' alerts match them), then the ones we add. */
export const Reason = {
  InstallSuccessful: 'InstallSuccessful',
  UpgradeSuccessful: 'UpgradeSuccessful',
  UninstallSuccessful: 'UninstallSuccessful',
  InstallError: 'InstallError',
  UpgradeError: 'UpgradeError',
  ReconcileError: 'ReconcileError',
  UninstallError: 'UninstallError',
  // ours
  Reconciled: 'Reconciled',
  ReleaseNameConflict: 'ReleaseNameConflict',
  /** A release of the CR's name and chart that this operator did not make, and may not adopt. */
  ReleaseNotOwned: 'ReleaseNotOwned',
  InvalidReleaseName: 'InvalidReleaseName',
  InvalidSpec: 'InvalidSpec',
  PauseReconcileAnnotationTrue: 'PauseReconcileAnnotationTrue',
  RetriesExhausted: 'RetriesExhausted',
  DriftRepairFailed: 'DriftRepairFailed',
  /** Another field manager rewrites a field after each repair: it is no longer restored (drift-fight.ts). */
  DriftConflict: 'DriftConflict',
  /**
   * An upgrade would take a field the chart sets from another field manager, and the watch's
   * `conflictPolicy: fail` says not to (upgrade-fields.ts); also helm's own apply conflict.
   */
  ResourceConflict: 'ResourceConflict',
  /** The CR's drift-ignore annotation is malformed, or the watch does not obey it. */
  DriftIgnoreRefused: 'DriftIgnoreRefused',
  ValuesReferenceNotFound: 'ValuesReferenceNotFound',
  InvalidValuesReference: 'InvalidValuesReference',
  ValuesReferenceNotAllowed: 'ValuesReferenceNotAllowed',
  NamespaceConfinementViolation: 'NamespaceConfinementViolation',
  /** The helm gateway refused a kind the watch's `allowKinds` does not list. */
  KindNotAllowed: 'KindNotAllowed',
  /** `crds: CreateReplace`: a chart CRD's change OLM v1's upgrade-safety rules refuse; nothing was applied (chart-crds.ts). */
  CRDUpgradeUnsafe: 'CRDUpgradeUnsafe',
  /** `crds: CreateReplace`: a chart CRD was applied but never became Established; helm did not run. */
  CRDNotEstablished: 'CRDNotEstablished',
  ServiceAccountNotFound: 'ServiceAccountNotFound',
  Progressing: 'Progressing',
  RolloutWaiting: 'RolloutWaiting',
  RolloutPaused: 'RolloutPaused',
  RolloutHalted: 'RolloutHalted',
  RolloutFailed: 'RolloutFailed',
  /** The chart's tests (`helm test`) passed on the revision just deployed. */
  TestSucceeded: 'TestSucceeded',
  /** The chart's tests failed on the revision just deployed: undone as a failed upgrade, unless the watch ignores failures. */
  TestFailed: 'TestFailed',
  // plan approval (docs/adr/0083)
  PlanAwaitingApproval: 'PlanAwaitingApproval',
  PlanApplied: 'PlanApplied',
  PlanApproved: 'PlanApproved',
  /** A later wave's plan whose risks the rollout's approved canary plan had (docs/adr/0093). */
  PlanApprovedByRollout: 'PlanApprovedByRollout',
  ApprovalNotRequired: 'ApprovalNotRequired',
  /** An approval names another digest than the plan's: refused, the plan waits for its own. */
  PlanApprovalStale: 'PlanApprovalStale',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

export interface Condition {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime: string;
  readonly observedGeneration?: number;
}

export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/** Conditions hold short, human messages; a whole helm error or NOTES file can be long. */
export const MAX_MESSAGE_LENGTH = 4096;

export function truncateMessage(message: string): string {
  return message.length <= MAX_MESSAGE_LENGTH ? message : `${message.slice(0, MAX_MESSAGE_LENGTH - 15)} …(truncated)`;
}

/**
 * Sets a condition, keeping `lastTransitionTime` unless the status flips (as meta.SetStatusCondition
 * does), so an unchanged condition never causes a status write.
 */
export function setCondition(list: readonly Condition[], input: ConditionInput, now: Date): Condition[] {
  const existing = list.find((c) => c.type === input.type);
  const message = truncateMessage(input.message);
  const next: Condition = {
    ...input,
    message,
    lastTransitionTime: existing !== undefined && existing.status === input.status ? existing.lastTransitionTime : now.toISOString(),
  };
  if (existing === undefined) return [...list, next];
  return list.map((c) => (c.type === input.type ? next : c));
}

export function removeCondition(list: readonly Condition[], type: string): Condition[] {
  return list.filter((c) => c.type !== type);
}

export function findCondition(list: readonly Condition[] | undefined, type: string): Condition | undefined {
  return list?.find((c) => c.type === type);
}

export function isTrue(list: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(list, type)?.status === 'True';
}
