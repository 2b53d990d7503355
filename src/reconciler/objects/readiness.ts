/**
 * Whether the objects of a release are ready, judged from their live state the way kstatus does:
 * workloads by their controller's status counters (once the controller has observed the current
 * generation), Jobs by their terminal conditions, claims by their phase, and any other kind by its
 * `Ready` condition when it has one. Pure: the caller fetches the live objects.
 *
 * Live objects are read as plain JSON (as a watch delivers them): every field is checked for its
 * type, so a missing or malformed status reads as "not there yet", never as a crash.
 */
import { groupOf } from '../../util/group-kind.js';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { InventoryEntry } from './inventory.js';
import { isPlainObject } from '../../util/plain-object.js';

export interface ObjectReadiness {
  readonly ready: boolean;
  /** e.g. "Deployment web 1/3 available", "Job migrate failed", "PersistentVolumeClaim data Pending" */
  readonly message: string;
}

/** The readiness of an object a watch's rule names (health-rules.ts); undefined: no rule for its kind. */
export type CustomReadiness = (entry: InventoryEntry, live: KubernetesObject) => ObjectReadiness | undefined;

export interface ReadinessSummary {
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly ready: number;
  readonly total: number;
}

type Json = Readonly<Record<string, unknown>>;

interface Live {
  readonly metadata: Json;
  readonly spec: Json;
  readonly status: Json;
}

interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason: string;
  readonly message: string;
}

/** How many not-ready objects a summary names before it only counts the rest. */
const MAX_LISTED = 3;

const EMPTY: Json = {};
const field = (o: Json, key: string): Json => {
  const v = o[key];
  return isPlainObject(v) ? v : EMPTY;
};
const num = (o: Json, key: string): number | undefined => {
  const v = o[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
};
const text = (o: Json, key: string): string | undefined => {
  const v = o[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
};

function asLive(obj: KubernetesObject): Live {
  const o: unknown = obj;
  const root = isPlainObject(o) ? o : EMPTY;
  return { metadata: field(root, 'metadata'), spec: field(root, 'spec'), status: field(root, 'status') };
}

function conditions(status: Json): Condition[] {
  const list = status.conditions;
  if (!Array.isArray(list)) return [];
  return list.filter(isPlainObject).map((c) => ({
    type: text(c, 'type') ?? '',
    status: text(c, 'status') ?? '',
    reason: text(c, 'reason') ?? '',
    message: text(c, 'message') ?? '',
  }));
}

const condition = (status: Json, type: string): Condition | undefined => conditions(status).find((c) => c.type === type);
const isTrue = (status: Json, type: string): boolean => condition(status, type)?.status === 'True';

const result = (ready: boolean, message: string): ObjectReadiness => ({ ready, message });
const label = (entry: InventoryEntry): string => `${entry.kind} ${entry.name}`;

/**
 * A workload controller has not yet acted on the latest spec when its status reports an older
 * generation; a status without observedGeneration means the controller has not seen it at all.
 */
function generationLag(entry: InventoryEntry, live: Live): ObjectReadiness | undefined {
  const generation = num(live.metadata, 'generation');
  if (generation === undefined) return undefined;
  const observed = num(live.status, 'observedGeneration') ?? 0;
  return observed < generation ? result(false, `${label(entry)} rollout not observed yet`) : undefined;
}

const desiredReplicas = (live: Live): number => num(live.spec, 'replicas') ?? 1;
const count = (live: Live, key: string): number => num(live.status, key) ?? 0;
const updateStrategyType = (live: Live): string | undefined => text(field(live.spec, 'updateStrategy'), 'type');

function deploymentDetails(live: Live, desired: number): string[] {
  const details: string[] = [];
  const updated = count(live, 'updatedReplicas');
  if (updated < desired) details.push(`${updated}/${desired} updated`);
  const extra = count(live, 'replicas') - desired;
  if (extra > 0) details.push(`${extra} old replica${extra === 1 ? '' : 's'} still running`);
  const available = condition(live.status, 'Available');
  if (available?.status === 'False') details.push(`Available is False${available.message ? `: ${available.message}` : ''}`);
  return details;
}

function deploymentReadiness(entry: InventoryEntry, live: Live): ObjectReadiness {
  const progressing = condition(live.status, 'Progressing');
  if (progressing?.reason === 'ProgressDeadlineExceeded') {
    const why = progressing.message ? `: ${progressing.message}` : '';
    return result(false, `${label(entry)} ProgressDeadlineExceeded${why}`);
  }
  const desired = desiredReplicas(live);
  const available = count(live, 'availableReplicas');
  const details = deploymentDetails(live, desired);
  const message = [`${label(entry)} ${available}/${desired} available`, ...details].join(', ');
  return result(available >= desired && details.length === 0, message);
}

/** Pods a StatefulSet's rollout is expected to update: OnDelete waits for manual deletion, a partition holds back the lower ordinals. */
function statefulSetUpdateTarget(live: Live, desired: number): number {
  const strategy = field(live.spec, 'updateStrategy');
  if (text(strategy, 'type') === 'OnDelete') return 0;
  const partition = num(field(strategy, 'rollingUpdate'), 'partition') ?? 0;
  return Math.max(0, desired - partition);
}

function statefulSetReadiness(entry: InventoryEntry, live: Live): ObjectReadiness {
  const desired = desiredReplicas(live);
  const ready = count(live, 'readyReplicas');
  const updated = count(live, 'updatedReplicas');
  const target = statefulSetUpdateTarget(live, desired);
  const message = `${label(entry)} ${ready}/${desired} ready${updated < target ? `, ${updated}/${target} updated` : ''}`;
  return result(ready >= desired && updated >= target, message);
}

function daemonSetReadiness(entry: InventoryEntry, live: Live): ObjectReadiness {
  const desired = count(live, 'desiredNumberScheduled');
  const available = count(live, 'numberAvailable');
  // OnDelete replaces pods only when someone deletes them: the rollout is not ours to wait for.
  const target = updateStrategyType(live) === 'OnDelete' ? 0 : desired;
  const updated = count(live, 'updatedNumberScheduled');
  const message = `${label(entry)} ${available}/${desired} available${updated < target ? `, ${updated}/${target} updated` : ''}`;
  return result(available >= desired && updated >= target, message);
}

function replicaSetReadiness(entry: InventoryEntry, live: Live): ObjectReadiness {
  const desired = desiredReplicas(live);
  const available = count(live, 'availableReplicas');
  return result(available >= desired, `${label(entry)} ${available}/${desired} available`);
}

function jobReadiness(entry: InventoryEntry, live: Live): ObjectReadiness {
  if (isTrue(live.status, 'Complete')) return result(true, `${label(entry)} complete`);
  const failed = condition(live.status, 'Failed');
  if (failed?.status === 'True') {
    const why = failed.reason || failed.message;
    return result(false, `${label(entry)} failed${why ? `: ${why}` : ''}`);
  }
  return result(false, `${label(entry)} running`);
}

function claimReadiness(entry: InventoryEntry, live: Live): ObjectReadiness {
  const phase = text(live.status, 'phase');
  return result(phase === 'Bound', `${label(entry)} ${phase ?? 'has no phase yet'}`);
}

function serviceReadiness(entry: InventoryEntry, live: Live): ObjectReadiness {
  if (text(live.spec, 'type') !== 'LoadBalancer') return result(true, `${label(entry)} exists`);
  const ingress = field(live.status, 'loadBalancer').ingress;
  const first = Array.isArray(ingress) ? ingress.find(isPlainObject) : undefined;
  if (first === undefined) return result(false, `${label(entry)} waiting for a load balancer address`);
  const address = text(first, 'ip') ?? text(first, 'hostname');
  return result(true, `${label(entry)} load balancer at ${address ?? 'an assigned address'}`);
}

function podReadiness(entry: InventoryEntry, live: Live): ObjectReadiness {
  const phase = text(live.status, 'phase');
  if (phase === 'Succeeded') return result(true, `${label(entry)} succeeded`);
  if (phase === 'Failed') {
    const why = text(live.status, 'reason') ?? text(live.status, 'message');
    return result(false, `${label(entry)} failed${why ? `: ${why}` : ''}`);
  }
  if (isTrue(live.status, 'Ready')) return result(true, `${label(entry)} ready`);
  return result(false, `${label(entry)} not ready (${phase ?? 'no phase yet'})`);
}

/** Any other kind: ready once it exists, unless it reports a `Ready` condition that is False. */
function genericReadiness(entry: InventoryEntry, live: Live): ObjectReadiness {
  const ready = condition(live.status, 'Ready');
  if (ready?.status !== 'False') return result(true, `${label(entry)} ready`);
  const why = ready.message || ready.reason;
  return result(false, `${label(entry)} not ready${why ? `: ${why}` : ''}`);
}

type Check = (entry: InventoryEntry, live: Live) => ObjectReadiness;

/** Keyed by "group/Kind", so a custom resource that reuses a built-in kind name is judged generically. */
const CHECKS: Readonly<Record<string, { readonly check: Check; readonly generation: boolean }>> = {
  'apps/Deployment': { check: deploymentReadiness, generation: true },
  'apps/StatefulSet': { check: statefulSetReadiness, generation: true },
  'apps/DaemonSet': { check: daemonSetReadiness, generation: true },
  'apps/ReplicaSet': { check: replicaSetReadiness, generation: true },
  'batch/Job': { check: jobReadiness, generation: false },
  '/PersistentVolumeClaim': { check: claimReadiness, generation: false },
  '/Service': { check: serviceReadiness, generation: false },
  '/Pod': { check: podReadiness, generation: false },
};

/**
 * Pure: the readiness of one inventory object given its live state (undefined when it does not
 * exist). `custom`: the watch's healthChecks (health-rules.ts), which judge the kinds they name.
 */
export function objectReadiness(entry: InventoryEntry, live: KubernetesObject | undefined, custom?: CustomReadiness): ObjectReadiness {
  if (live === undefined) return result(false, `${label(entry)} not found`);
  const state = asLive(live);
  if (state.metadata.deletionTimestamp != null) return result(false, `${label(entry)} is being deleted`);
  const judged = custom?.(entry, live);
  if (judged !== undefined) return judged;
  const rule = CHECKS[`${groupOf(entry.apiVersion)}/${entry.kind}`];
  if (rule === undefined) return genericReadiness(entry, state);
  return (rule.generation ? generationLag(entry, state) : undefined) ?? rule.check(entry, state);
}

function notReadyMessage(ready: number, total: number, messages: readonly string[]): string {
  const listed = messages.slice(0, MAX_LISTED).join('; ');
  const more = messages.length > MAX_LISTED ? `, …and ${messages.length - MAX_LISTED} more` : '';
  return `${ready}/${total} ready: ${listed}${more}`;
}

/** Pure: the release's readiness from its objects'; 'unknown' marks objects whose live state is not known yet. */
export function summarizeReadiness(
  results: readonly { entry: InventoryEntry; readiness: ObjectReadiness | 'unknown' }[],
): ReadinessSummary {
  const total = results.length;
  const known = results.flatMap((r) => (r.readiness === 'unknown' ? [] : [r.readiness]));
  const ready = known.filter((r) => r.ready).length;
  const notReady = known.filter((r) => !r.ready).map((r) => r.message);
  if (notReady.length > 0) {
    return { status: 'False', reason: 'ResourcesNotReady', message: notReadyMessage(ready, total, notReady), ready, total };
  }
  const unknown = total - known.length;
  if (unknown > 0) {
    const message = `waiting for the state of ${unknown} object${unknown === 1 ? '' : 's'}`;
    return { status: 'Unknown', reason: 'ReadinessUnknown', message, ready, total };
  }
  return { status: 'True', reason: 'ResourcesReady', message: `${ready}/${total} ready`, ready, total };
}

/**
 * Pure: the `Ready` condition after an install or upgrade failed. Ready means "what the spec asks
 * for is deployed and ready" (as in kstatus and Flux), so a failure turns it False with helm's
 * reason even while the previous revision keeps serving; `kubectl get` shows it in the READY and
 * REASON columns. The next successful install, upgrade or in-sync reconcile summarises the objects
 * again. `deployedRevision`: the revision still deployed, if any.
 */
export function failedReadiness(
  reason: string,
  summary: string,
  deployedRevision: number | undefined,
): { type: 'Ready'; status: 'False'; reason: string; message: string } {
  const serving = deployedRevision === undefined ? '' : `revision ${deployedRevision} keeps serving; `;
  return { type: 'Ready', status: 'False', reason, message: `${serving}${summary}` };
}
