/**
 * Settled looks (docs/adr/0112). A periodic reconcile of a CR whose release is in sync and ready
 * reads the same CR, the same release record and the same objects every period, and decides the
 * same: in sync, nothing to write, nothing to say. At 10,000 CRs that look, repeated, was half the
 * operator's CPU at rest. So a reconcile that found its CR settled notes the versions of what it
 * decided from; the next one that finds every version unchanged (the CR's resourceVersion, the
 * release's latest deployed record in the storage watch, each object's resourceVersion in the
 * dependents cache) decides the same without deciding, and only asks to look again after the period.
 *
 * Only what a watch keeps current is a version here. A CR whose inputs are not all watched (its
 * objects read with GETs, values taken from Secrets or ConfigMaps, helm acting as a ServiceAccount,
 * the storage watch not answering) is always looked at in full, as before.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { Watch } from '../../config/watch.js';
import { VALUES_FROM_ANNOTATION } from '../desired/values-from.js';
import type { Outcome, Summary } from './outcome.js';
import type { ReleaseRecord } from '../decide/state.js';

/** What a settled reconcile decided from, each by its version. */
export interface SettledInputs {
  readonly uid: string;
  /** The CR's, as the controller's cache holds it. */
  readonly resourceVersion: string;
  /** The release's latest deployed record, as the storage watch shows it. */
  readonly record: Pick<ReleaseRecord, 'revision' | 'status' | 'labels'>;
  /** Each object of the deployed revision, as the dependents cache holds it ('' when it holds none). */
  readonly objects: readonly string[];
}

/**
 * Pure: whether a watch keeps the CR's inputs current, so that their versions say whether they
 * changed: not values from Secrets or ConfigMaps, nor the ServiceAccount helm acts as (each look
 * checks it exists), and a CR with a uid and a resourceVersion.
 */
export function inputsWatched(
  watch: Pick<Watch, 'serviceAccountName'>,
  metadata: Pick<V1ObjectMeta, 'uid' | 'resourceVersion' | 'annotations'>,
): boolean {
  return (
    metadata.uid !== undefined &&
    metadata.resourceVersion !== undefined &&
    watch.serviceAccountName === undefined &&
    metadata.annotations?.[VALUES_FROM_ANNOTATION] === undefined
  );
}

/** Pure: the inputs as one comparable string. */
export function inputsKey(i: SettledInputs): string {
  const { revision, status, labels } = i.record;
  return JSON.stringify([i.uid, i.resourceVersion, revision, status, labels, i.objects]);
}

/** Pure: in sync, its objects ready, no drift found, nothing about drift to report, no test run, no event. */
function quietInSync(outcome: Outcome): boolean {
  return (
    outcome.kind === 'in-sync' &&
    outcome.deployment.ready.status === 'True' &&
    outcome.drift.kind === 'settled' &&
    outcome.fields === undefined &&
    outcome.test === undefined &&
    (outcome.events ?? []).length === 0
  );
}

/**
 * Pure: whether a reconcile's end may be taken again from unchanged inputs: quietly in sync, no
 * event, no error, no status written, no sooner wake-up asked by the rollout, and a period to look
 * again after.
 */
export function settles(
  outcome: Outcome,
  summary: Summary,
  ended: { readonly status: 'written' | 'unchanged' | 'left'; readonly wakeMs: number | undefined },
): boolean {
  return (
    quietInSync(outcome) &&
    summary.events.length === 0 &&
    summary.error === undefined &&
    (summary.result.requeueAfterMs ?? 0) > 0 &&
    ended.status === 'unchanged' &&
    ended.wakeMs === undefined
  );
}

/** What a CR was last found settled with. */
interface Found {
  readonly key: string;
  /** The CR's own `reconcile-period`, floored (period.ts); undefined: the watch's or the operator's. */
  readonly annotationMs: number | undefined;
}

/** The CRs last found settled, by `namespace/name`: one string each. */
export class SettledLooks {
  readonly #found = new Map<string, Found>();

  /** The CR's `reconcile-period` annotation as found when settled, when `inputs` are the same; undefined: look in full. */
  unchanged(namespace: string, name: string, inputs: SettledInputs): { readonly annotationMs: number | undefined } | undefined {
    const found = this.#found.get(`${namespace}/${name}`);
    return found !== undefined && found.key === inputsKey(inputs) ? found : undefined;
  }

  remember(namespace: string, name: string, inputs: SettledInputs, annotationMs: number | undefined): void {
    this.#found.set(`${namespace}/${name}`, { key: inputsKey(inputs), annotationMs });
  }

  forget(namespace: string, name: string): void {
    this.#found.delete(`${namespace}/${name}`);
  }

  /** After a takeover, nothing noted before is taken again (as with remembered records, ADR 0069). */
  clear(): void {
    this.#found.clear();
  }
}
