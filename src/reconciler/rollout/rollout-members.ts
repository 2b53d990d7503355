/**
 * The CRs of a kind as the rollout gate reads them from the controller's cache: the cache keeps
 * each CR's metadata and the few status fields the gate needs (`keepForRollout`), so deciding a
 * wave costs no API request, and a status written by any replica is what every replica decides by,
 * as far as the operator sealed it (rollout-seal.ts, docs/adr/0101).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { keepMetadataOnly } from '../../runtime/informer.js';
import type { CacheReader } from '../../runtime/reconcile.js';
import { isPlainObject } from '../../util/plain-object.js';
import { ConditionType } from '../status/conditions.js';
import { parseReleaseAnnotations } from '../decide/annotations.js';
import type { Member } from './rollout-gate.js';
import { readRolloutStatus, type RolloutAttempt, type RolloutStatus } from '../status/status.js';
import { sealVerdict, type ReadyView, type RolloutSeals, type RolloutView, type SealVerdict } from './rollout-seal.js';

/** Cache transform: metadata (as keepMetadataOnly keeps it), the rollout status and the Ready condition. */
export function keepForRollout<T extends KubernetesObject>(obj: T): T {
  const status = (obj as { status?: unknown }).status;
  const kept = keepMetadataOnly(obj) as KubernetesObject & { status?: unknown };
  if (!isPlainObject(status)) return kept as T;
  const ready = Array.isArray(status.conditions) ? status.conditions.filter((c) => isPlainObject(c) && c.type === ConditionType.Ready) : [];
  kept.status = { conditions: ready, ...(status.rollout === undefined ? {} : { rollout: status.rollout }) };
  return kept as T;
}

/**
 * The gate's view of a cached CR; undefined for one outside the rollout: being deleted, paused by
 * its annotation (unless it failed an attempt), or never deployed (it installs straight at the target).
 * Its rollout fields and Ready condition are what `seals` believes of them (rollout-seal.ts): a
 * status the operator did not seal, or an older one it did, is not read; the newest sealed one
 * this process saw stands in, and with none the CR counts as not yet on any fleet revision (its
 * wave waits for it; it is not failed, and approves nothing).
 */
export function memberOf(obj: KubernetesObject, seals: Pick<RolloutSeals, 'believe'>): Member | undefined {
  const md = obj.metadata;
  if (md?.name === undefined || md.deletionTimestamp !== undefined) return undefined;
  const found = sealedPartOf((obj as { status?: unknown }).status);
  const believed = seals.believe(md.uid ?? '', found.rollout, found.ready);
  if (believed === undefined && found.rollout === undefined && found.ready === undefined) return undefined;
  return memberOfView(md, believed ?? { rollout: {} });
}

/** The part of a CR's status the seal covers, as found (the seal included). */
function sealedPartOf(status: unknown): { rollout?: RolloutStatus; ready?: ReadyView } {
  if (!isPlainObject(status)) return {};
  const rollout = readRolloutStatus(status.rollout);
  const ready = readyConditionOf(status.conditions);
  return { ...(rollout === undefined ? {} : { rollout }), ...(ready === undefined ? {} : { ready }) };
}

/**
 * Whether the operator sealed a CR's status, judged as the gate judges it ({@link memberOf}) but
 * without its memory: for readers outside the operator (`rollout status`). A status with a Ready
 * condition and no rollout fields is `unsealed` (the gate believes neither); undefined: neither
 * is there, so there is nothing to vouch for.
 */
export function sealVerdictOf(key: Uint8Array, uid: string, status: unknown): SealVerdict | undefined {
  const found = sealedPartOf(status);
  if (found.rollout === undefined) return found.ready === undefined ? undefined : 'unsealed';
  return sealVerdict(key, uid, found.rollout, found.ready);
}

/** The gate's view of a CR whose rollout fields and Ready condition are `view` (the operator's own, or believed from its seal). */
export function memberOfView(md: NonNullable<KubernetesObject['metadata']>, view: RolloutView): Member | undefined {
  const attempt = attemptOf(view.rollout.attempt);
  if (pausedOut(md.annotations, attempt)) return undefined;
  const ready = view.ready === undefined ? undefined : { status: view.ready.status, sinceMs: timeMs(view.ready.lastTransitionTime) };
  return {
    key: `${md.namespace ?? ''}/${md.name ?? ''}`,
    labels: md.labels ?? {},
    fleetRevision: view.rollout.fleetRevision,
    attempt,
    ready,
  };
}

/**
 * A paused CR would hold its wave forever, so it is left out; but a failure it recorded stands:
 * pausing a failed CR (as `rollout undo` does while it rolls it back) must not un-halt the waves.
 */
function pausedOut(annotations: Record<string, string> | undefined, attempt: Member['attempt']): boolean {
  return parseReleaseAnnotations(annotations).paused && attempt?.failed !== true;
}

/** Every CR of the kind in the controller's cache, as the gate sees it. */
export function cachedMembers(cache: Pick<CacheReader, 'list'>, seals: Pick<RolloutSeals, 'believe'>): Member[] {
  return cache.list().flatMap((obj) => memberOf(obj, seals) ?? []);
}

function attemptOf(a: RolloutAttempt | undefined): Member['attempt'] {
  if (a === undefined) return undefined;
  const approved = a.approvedPlan === undefined ? {} : { approvedPlan: a.approvedPlan };
  return { fleetRevision: a.fleetRevision, atMs: timeMs(a.at), failed: a.failure !== undefined, ...approved };
}

/** The Ready condition of a status's conditions, as the seal covers it. */
export function readyConditionOf(conditions: unknown): ReadyView | undefined {
  const c: unknown = Array.isArray(conditions) ? conditions.find((x) => isPlainObject(x) && x.type === ConditionType.Ready) : undefined;
  if (!isPlainObject(c) || typeof c.status !== 'string') return undefined;
  return typeof c.lastTransitionTime === 'string' ? { status: c.status, lastTransitionTime: c.lastTransitionTime } : { status: c.status };
}

const timeMs = (t: unknown): number => {
  const ms = typeof t === 'string' ? Date.parse(t) : NaN;
  return Number.isNaN(ms) ? 0 : ms;
};
