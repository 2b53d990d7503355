/** `status.plan` (docs/adr/0083): the bounded summary of a CR's last upgrade plan; the whole plan is in its ConfigMap. */
import { isPlainObject } from '../../util/plain-object.js';
import { RISKS, type PlanCounts, type Risk } from './upgrade-plan.js';

export interface PlanStatus {
  /** `sha256:<hex>`: what an approval names. */
  readonly digest: string;
  /** The CR's generation the plan was made for. */
  readonly generation?: number;
  /** The desired state's keyed fingerprint: a plan is only ever approved for the state it was made from. */
  readonly fingerprint: string;
  readonly fromRevision: number;
  readonly chartVersion: string;
  readonly counts: PlanCounts;
  readonly risks: readonly Risk[];
  /** `AwaitingApproval`: held; `Applied`: helm made the revision it plans. */
  readonly state: 'AwaitingApproval' | 'Applied';
  /** The ConfigMap in the CR's namespace that holds the whole plan. */
  readonly configMap: string;
}

const COUNTS = ['create', 'change', 'delete', 'refuse', 'conflicts', 'hooks', 'crds'] as const;

type Shaped = Record<string, unknown> &
  Pick<PlanStatus, 'digest' | 'fingerprint' | 'fromRevision' | 'chartVersion' | 'configMap' | 'state'> & {
    counts: Record<string, unknown>;
  };

function isPlanShaped(raw: unknown): raw is Shaped {
  if (!isPlainObject(raw)) return false;
  const strings = ['digest', 'fingerprint', 'chartVersion', 'configMap'].every((k) => typeof raw[k] === 'string');
  const { counts, state } = raw;
  return (
    strings &&
    typeof raw.fromRevision === 'number' &&
    (state === 'AwaitingApproval' || state === 'Applied') &&
    isPlainObject(counts) &&
    COUNTS.every((k) => typeof counts[k] === 'number')
  );
}

/** Pure: `status.plan` as read back; undefined when it is not one (hand-written or from another version). */
export function readPlanStatus(raw: unknown): PlanStatus | undefined {
  if (!isPlanShaped(raw)) return undefined;
  const { digest, fingerprint, fromRevision, chartVersion, counts, risks, state, configMap, generation } = raw;
  const readRisks = Array.isArray(risks) ? risks.filter((r): r is Risk => (RISKS as readonly unknown[]).includes(r)) : [];
  return {
    digest,
    ...(typeof generation === 'number' ? { generation } : {}),
    fingerprint,
    fromRevision,
    chartVersion,
    counts: counts as unknown as PlanCounts,
    risks: readRisks,
    state,
    configMap,
  };
}
