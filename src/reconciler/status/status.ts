/**
 * The part of a CR's status this operator owns, and a draft of it that a reconcile edits in memory
 * and writes once, on the way out, only if something changed.
 */
import { isDeepStrictEqual } from 'node:util';
import { removeCondition, setCondition, type Condition, type ConditionInput, type ConditionStatus } from './conditions.js';
import type { InventoryEntry } from '../objects/inventory.js';
import { readPlanStatus, type PlanStatus } from '../plan/plan-status.js';
import { RISKS, type Risk } from '../plan/upgrade-plan.js';
import { isPlainObject } from '../../util/plain-object.js';

export interface DeployedRelease {
  readonly name: string;
  readonly namespace: string;
  readonly revision: number;
  readonly chart: string;
  readonly chartVersion: string;
  readonly appVersion?: string;
}

/** Consecutive failed installs or upgrades of one desired state (fingerprint). */
export interface FailedAttempts {
  readonly fingerprint: string;
  readonly count: number;
}

/** Consecutive reconciles whose drift repair of one deployed revision (at one spec generation) failed. */
export interface DriftRepairFailures {
  readonly revision: number;
  /** The CR's metadata.generation the failures were counted at; a spec change starts again. */
  readonly generation?: number;
  readonly count: number;
}

/** The last time this CR was moved to a fleet revision (docs/adr/0056), and whether that failed. */
export interface RolloutAttempt {
  readonly fleetRevision: string;
  /** RFC 3339: when helm deployed it (the health timeout counts from here). */
  readonly at: string;
  /** Why it failed (helm's error, or not Ready in time): the rollout counts it against its budget. */
  readonly failure?: string;
  /**
   * The plan approved for this move (docs/adr/0093): its digest and risks. The rollout's later waves
   * take the fleet revision without their own approval when their plans' risks are among these.
   */
  readonly approvedPlan?: ApprovedPlan;
}

/** A plan a person approved, as a rollout attempt records it. */
export interface ApprovedPlan {
  readonly digest: string;
  readonly risks: readonly Risk[];
}

/** Which fleet revision and chart the deployed release was made from, and the CR's last attempt. */
export interface RolloutStatus {
  readonly fleetRevision?: string;
  /** `sha256:<hex>` over the chart's files (config/chart.ts). */
  readonly chartDigest?: string;
  readonly attempt?: RolloutAttempt;
  /** `<seq>.<mac>`: the operator's seal over these fields and the Ready condition (rollout/rollout-seal.ts, docs/adr/0101). */
  readonly seal?: string;
}

/** One field of one object that drift repair restored after another field manager wrote it (drift-fight.ts). */
export interface DriftFightField {
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  /** RFC 6901 pointer. */
  readonly path: string;
  /** The other field manager that wrote the field before each restore. */
  readonly manager: string;
  readonly restores: number;
  /** When the first of these restores was made (RFC 3339). */
  readonly since: string;
  /** A fight: the field is no longer restored. */
  readonly conflict?: boolean;
}

/** The fields drift repair restored and who undid them, for one deployed revision, spec generation and set of ignore rules. */
export interface DriftFights {
  readonly revision: number;
  readonly generation?: number;
  /** The fingerprint of the ignore rules in force. */
  readonly rules: string;
  readonly fields: readonly DriftFightField[];
}

export interface HelmStatus {
  conditions: Condition[];
  failedAttempts?: FailedAttempts;
  driftRepairFailures?: DriftRepairFailures;
  driftFights?: DriftFights;
  deployedRelease?: DeployedRelease;
  inventory?: InventoryEntry[];
  observedGeneration?: number;
  rollout?: RolloutStatus;
  /** The last upgrade plan (docs/adr/0083). */
  plan?: PlanStatus;
}

/** The fields of status this operator writes (a typed CRD must declare each of them). */
export const OWNED_KEYS = [
  'conditions',
  'deployedRelease',
  'inventory',
  'observedGeneration',
  'failedAttempts',
  'driftRepairFailures',
  'rollout',
  'driftFights',
  'plan',
] as const;

/** Pure: the owned fields of a CR's status as found on the server, tolerating anything malformed. */
export function readStatus(raw: unknown): HelmStatus {
  const s = isPlainObject(raw) ? raw : {};
  // Entries that are not objects (null, strings) are dropped: code reading `c.type` or `e.kind` must not crash.
  const status: HelmStatus = {
    conditions: Array.isArray(s.conditions) ? (s.conditions.filter(isPlainObject) as unknown as Condition[]) : [],
  };
  if (isPlainObject(s.deployedRelease)) status.deployedRelease = s.deployedRelease as unknown as DeployedRelease;
  if (Array.isArray(s.inventory)) status.inventory = s.inventory.filter(isPlainObject) as unknown as InventoryEntry[];
  if (typeof s.observedGeneration === 'number') status.observedGeneration = s.observedGeneration;
  const f = s.failedAttempts;
  if (isPlainObject(f) && typeof f.fingerprint === 'string' && typeof f.count === 'number') {
    status.failedAttempts = { fingerprint: f.fingerprint, count: f.count };
  }
  return { ...status, ...readRecords(s) };
}

/** The records status keeps, each left out when absent or malformed. */
function readRecords(s: Record<string, unknown>): Pick<HelmStatus, 'driftRepairFailures' | 'rollout' | 'driftFights' | 'plan'> {
  const records = {
    driftRepairFailures: readDriftRepairFailures(s.driftRepairFailures),
    rollout: readRolloutStatus(s.rollout),
    driftFights: readDriftFights(s.driftFights),
    plan: readPlanStatus(s.plan),
  };
  return Object.fromEntries(Object.entries(records).filter(([, v]) => v !== undefined));
}

/** Pure: the rollout fields of a status as found on the server (also read from the controller's cache). */
export function readRolloutStatus(r: unknown): RolloutStatus | undefined {
  if (!isPlainObject(r)) return undefined;
  const a = r.attempt;
  const attempt: RolloutAttempt | undefined =
    isPlainObject(a) && typeof a.fleetRevision === 'string' && typeof a.at === 'string'
      ? {
          fleetRevision: a.fleetRevision,
          at: a.at,
          ...(typeof a.failure === 'string' ? { failure: a.failure } : {}),
          ...optionalApprovedPlan(a.approvedPlan),
        }
      : undefined;
  return {
    ...(typeof r.fleetRevision === 'string' ? { fleetRevision: r.fleetRevision } : {}),
    ...(typeof r.chartDigest === 'string' ? { chartDigest: r.chartDigest } : {}),
    ...(attempt === undefined ? {} : { attempt }),
    ...(typeof r.seal === 'string' ? { seal: r.seal } : {}),
  };
}

function optionalApprovedPlan(p: unknown): { approvedPlan?: ApprovedPlan } {
  if (!isPlainObject(p) || typeof p.digest !== 'string') return {};
  const risks = Array.isArray(p.risks) ? p.risks.filter((r): r is Risk => (RISKS as readonly unknown[]).includes(r)) : [];
  return { approvedPlan: { digest: p.digest, risks } };
}

function readDriftFights(d: unknown): DriftFights | undefined {
  if (!isPlainObject(d) || typeof d.revision !== 'number' || typeof d.rules !== 'string' || !Array.isArray(d.fields)) return undefined;
  const fields = d.fields.filter(
    (f): f is Record<string, unknown> =>
      isPlainObject(f) &&
      typeof f.kind === 'string' &&
      typeof f.name === 'string' &&
      typeof f.path === 'string' &&
      typeof f.manager === 'string' &&
      typeof f.restores === 'number' &&
      typeof f.since === 'string',
  );
  return {
    revision: d.revision,
    ...(typeof d.generation === 'number' ? { generation: d.generation } : {}),
    rules: d.rules,
    fields: fields as unknown as DriftFightField[],
  };
}

function readDriftRepairFailures(d: unknown): DriftRepairFailures | undefined {
  if (!isPlainObject(d) || typeof d.revision !== 'number' || typeof d.count !== 'number') return undefined;
  return { revision: d.revision, ...(typeof d.generation === 'number' ? { generation: d.generation } : {}), count: d.count };
}

/**
 * Pure: the JSON merge patch turning `before` into `after` for the owned keys; removed keys become
 * null. Empty when nothing changed, so a steady-state reconcile writes nothing.
 */
export function statusPatch(before: HelmStatus, after: HelmStatus): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const key of OWNED_KEYS) {
    if (!isDeepStrictEqual(before[key], after[key])) patch[key] = withRemovals(before[key], after[key]) ?? null;
  }
  return patch;
}

/**
 * `after`, with null for each field of `before` it dropped, at any depth: a merge patch merges
 * objects, so a field left out (an attempt's `failure`) would otherwise stay on the server.
 */
function withRemovals(before: unknown, after: unknown): unknown {
  if (!isPlainObject(before) || !isPlainObject(after)) return after;
  const out: Record<string, unknown> = { ...after };
  for (const k of Object.keys(before)) out[k] = k in after ? withRemovals(before[k], after[k]) : null;
  return out;
}

/**
 * One change to the owned status, as `summarize` decides it: data, applied by the draft in order
 * (conditions get their transition time and redaction there, not where they are decided).
 */
export type StatusEdit =
  | { readonly set: ConditionInput }
  | { readonly remove: string }
  | { readonly release: DeployedRelease | undefined; readonly inventory: InventoryEntry[] | undefined }
  | { readonly failedAttempts: FailedAttempts | undefined }
  | { readonly driftRepairFailures: DriftRepairFailures | undefined }
  | { readonly driftFights: DriftFights | undefined }
  | { readonly plan: PlanStatus }
  /** undefined: left as it is (a CR read without a generation). */
  | { readonly observedGeneration: number | undefined };

const isConditionStatus = (s: string): s is ConditionStatus => s === 'True' || s === 'False' || s === 'Unknown';

/** Pure: the failed attempts after one more failure of `fingerprint`; a new fingerprint starts again at 1. */
export function countFailure(prior: FailedAttempts | undefined, fingerprint: string): FailedAttempts {
  return { fingerprint, count: prior?.fingerprint === fingerprint ? prior.count + 1 : 1 };
}

export class StatusDraft {
  #written: HelmStatus;
  #next: HelmStatus;

  /**
   * `redact` masks sensitive values in condition messages before they are cut to length (a cut
   * value would no longer be found whole); the reconciler redacts the whole patch again on write.
   */
  constructor(
    raw: unknown,
    private readonly now: () => Date = () => new Date(),
    private readonly redact: (text: string) => string = (t) => t,
  ) {
    this.#written = readStatus(raw);
    this.#next = structuredClone(this.#written);
  }

  get current(): Readonly<HelmStatus> {
    return this.#next;
  }

  setCondition(input: ConditionInput): void {
    this.#next.conditions = setCondition(this.#next.conditions, { ...input, message: this.redact(input.message) }, this.now());
  }

  removeCondition(type: string): void {
    this.#next.conditions = removeCondition(this.#next.conditions, type);
  }

  setRelease(release: DeployedRelease | undefined, inventory: InventoryEntry[] | undefined): void {
    if (release === undefined) delete this.#next.deployedRelease;
    else this.#next.deployedRelease = release;
    if (inventory === undefined) delete this.#next.inventory;
    else this.#next.inventory = inventory;
  }

  /** Applies what `summarize` decided, in its order. */
  apply(edits: readonly StatusEdit[]): void {
    for (const e of edits) {
      if ('set' in e) this.setCondition(e.set);
      else if ('remove' in e) this.removeCondition(e.remove);
      else if ('release' in e) this.setRelease(e.release, e.inventory);
      else if ('observedGeneration' in e) this.setObservedGeneration(e.observedGeneration);
      else if ('plan' in e) this.#next.plan = e.plan;
      else this.#applyRecord(e);
    }
  }

  /** An edit of a record status keeps (undefined removes it). */
  #applyRecord(e: Extract<StatusEdit, { failedAttempts: unknown } | { driftRepairFailures: unknown } | { driftFights: unknown }>): void {
    if ('failedAttempts' in e) {
      if (e.failedAttempts === undefined) delete this.#next.failedAttempts;
      else this.#next.failedAttempts = e.failedAttempts;
    } else if ('driftRepairFailures' in e) {
      if (e.driftRepairFailures === undefined) delete this.#next.driftRepairFailures;
      else this.#next.driftRepairFailures = e.driftRepairFailures;
    } else if (e.driftFights === undefined || e.driftFights.fields.length === 0) delete this.#next.driftFights;
    else this.#next.driftFights = e.driftFights;
  }

  /**
   * Failures counted under `from` are counted under `to` from now on: an operator that showed the
   * plain fingerprint in status (before ADR 0044) keeps its retry budget, and the plain one leaves
   * status with the next write.
   */
  rekeyFailures(from: string, to: string): void {
    const prior = this.#next.failedAttempts;
    if (prior?.fingerprint === from) this.#next.failedAttempts = { fingerprint: to, count: prior.count };
  }

  setObservedGeneration(generation: number | undefined): void {
    if (generation !== undefined) this.#next.observedGeneration = generation;
  }

  /**
   * Condition `type`'s status and transition time as the operator last wrote them, over what the
   * CR's status shows (written by someone else, docs/adr/0101); its reason and message stay.
   */
  restoreCondition(type: string, was: { readonly status: string; readonly lastTransitionTime?: string }): void {
    const { status, lastTransitionTime } = was;
    if (!isConditionStatus(status)) return;
    this.#next.conditions = this.#next.conditions.map((c) =>
      c.type === type ? { ...c, status, ...(lastTransitionTime === undefined ? {} : { lastTransitionTime }) } : c,
    );
  }

  setRollout(rollout: RolloutStatus): void {
    this.#next.rollout = rollout;
  }

  /** What to send so the server holds the draft; empty when it already does. */
  patch(): Record<string, unknown> {
    return statusPatch(this.#written, this.#next);
  }

  /** The draft was written: later patches only carry what changes after this point. */
  markWritten(): void {
    this.#written = structuredClone(this.#next);
  }

  /** Drops what is drafted: the CR is going away and nobody would read it (see the reconciler's finalize). */
  discard(): void {
    this.markWritten();
  }
}
