/**
 * CR annotations that steer a release, operator-sdk's names first (users depend on them), then ours.
 * A value that does not parse falls back to the default and is reported, as operator-sdk does,
 * instead of failing the reconcile.
 */
import { parseDuration } from '../../config/duration.js';

const PREFIX = 'helm.sdk.operatorframework.io/';

export const ANNOTATIONS = {
  upgradeForce: `${PREFIX}upgrade-force`,
  rollbackForce: `${PREFIX}rollback-force`,
  uninstallWait: `${PREFIX}uninstall-wait`,
  reconcilePeriod: `${PREFIX}reconcile-period`,
  /** Ours: stop reconciling this CR (no install, upgrade, repair or uninstall) until removed or "false". */
  paused: `${PREFIX}paused`,
  /** Ours: "false" leaves hand edits of the release's objects alone (no drift repair). */
  driftRepair: `${PREFIX}drift-repair`,
  /** Ours: drift ignore rules for this CR's release, obeyed when the watch allows it (drift-ignore.ts). */
  driftIgnore: `${PREFIX}drift-ignore`,
  /** Ours: the digest of the upgrade plan the CR's editors approve, where the watch lets them (docs/adr/0083). */
  approvePlan: 'helm-operator.io/approve-plan',
} as const;

export interface ReleaseAnnotations {
  readonly upgradeForce: boolean;
  readonly rollbackForce: boolean;
  readonly uninstallWait: boolean;
  readonly paused: boolean;
  readonly driftRepair: boolean;
  readonly reconcilePeriodMs?: number;
  /** The drift-ignore annotation as written: drift-ignore.ts parses it, if the watch allows it. */
  readonly driftIgnore?: string;
  /** The approve-plan annotation as written: plan-approval.ts decides whether it counts. */
  readonly approvePlan?: string;
  /** One message per annotation whose value was not understood. */
  readonly problems: readonly string[];
}

function parseBool(raw: string | undefined, fallback: boolean): boolean | undefined {
  if (raw === undefined) return fallback;
  // strconv.ParseBool's accepted spellings, so existing CRs keep their meaning.
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
  return undefined;
}

export function parseReleaseAnnotations(annotations: Readonly<Record<string, string>> | undefined): ReleaseAnnotations {
  const a = annotations ?? {};
  const problems: string[] = [];
  const bool = (key: string, fallback: boolean): boolean => {
    const value = parseBool(a[key], fallback);
    if (value !== undefined) return value;
    problems.push(`annotation ${key}: "${a[key] ?? ''}" is not a boolean; using ${fallback}`);
    return fallback;
  };
  let reconcilePeriodMs: number | undefined;
  const period = a[ANNOTATIONS.reconcilePeriod];
  if (period !== undefined) {
    try {
      reconcilePeriodMs = parseDuration(period);
    } catch (err) {
      problems.push(`annotation ${ANNOTATIONS.reconcilePeriod}: ${(err as Error).message}; using the watch's period`);
    }
  }
  return {
    upgradeForce: bool(ANNOTATIONS.upgradeForce, false),
    rollbackForce: bool(ANNOTATIONS.rollbackForce, true),
    uninstallWait: bool(ANNOTATIONS.uninstallWait, false),
    paused: bool(ANNOTATIONS.paused, false),
    driftRepair: bool(ANNOTATIONS.driftRepair, true),
    ...(reconcilePeriodMs === undefined ? {} : { reconcilePeriodMs }),
    ...(a[ANNOTATIONS.driftIgnore] === undefined ? {} : { driftIgnore: a[ANNOTATIONS.driftIgnore] }),
    ...(a[ANNOTATIONS.approvePlan] === undefined ? {} : { approvePlan: a[ANNOTATIONS.approvePlan] }),
    problems,
  };
}
