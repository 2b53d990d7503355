/**
 * Which changes to a watch restart its kind's controller when watches.yaml is reloaded. Every
 * field of `Watch` is classified here by name, and the type makes the list exhaustive: a new field
 * does not compile until someone decides what changing it does to a running controller.
 */
import type { Watch } from './watch.js';

/**
 * - `restart`: the running controller is stopped and started with the new entry, which re-lists
 *   and so re-reconciles every CR of the kind;
 * - `ignore`: a change of this field alone leaves the running controller as it is, with the value
 *   it started with. There is no path that hands a running controller a new value, so nothing
 *   that a reconcile reads may be `ignore`.
 */
export type OnWatchChange = 'restart' | 'ignore';

export const WATCH_FIELD_CHANGES: Readonly<Record<keyof Watch, OnWatchChange>> = {
  group: 'restart',
  version: 'restart',
  kind: 'restart',
  // Its digest too: a chart edited on disk restarts the kind, so every release gets upgraded.
  chart: 'restart',
  watchDependentResources: 'restart',
  adoptReleases: 'restart',
  overrideValues: 'restart',
  selector: 'restart',
  labelSelector: 'restart',
  reconcilePeriodMs: 'restart',
  maxConcurrentReconciles: 'restart',
  dryRunOption: 'restart',
  serviceAccountName: 'restart',
  confineToNamespace: 'restart',
  allowClusterScoped: 'restart',
  allowKinds: 'restart',
  sensitiveValues: 'restart',
  allowSchemaRefs: 'restart',
  rollout: 'restart',
  // A rule change resets the fight records too (their key holds the rules' fingerprint).
  driftIgnore: 'restart',
  allowDriftIgnoreAnnotation: 'restart',
  conflictPolicy: 'restart',
  crds: 'restart',
  healthChecks: 'restart',
  test: 'restart',
  approval: 'restart',
  approvedBy: 'restart',
  // Where the entry sits in the file: moving it, or editing the lines above, changes nothing.
  source: 'ignore',
};

const FIELDS = Object.keys(WATCH_FIELD_CHANGES) as (keyof Watch)[];

/**
 * Compared as JSON, so key order counts: overrideValues are applied in the order written, and one
 * path may overwrite part of another (`a` then `a.b`).
 */
const sameValue = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** The fields whose change from `running` to `next` restarts the controller; empty: keep it running. */
export function restartingChanges(running: Watch, next: Watch): (keyof Watch)[] {
  return FIELDS.filter((field) => WATCH_FIELD_CHANGES[field] === 'restart' && !sameValue(running[field], next[field]));
}
