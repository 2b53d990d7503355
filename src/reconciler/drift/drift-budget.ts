/**
 * The retry budget of drift repair. A repair the API server refuses (an admission policy, an
 * immutable field) is retried with backoff; after DRIFT_REPAIR_ATTEMPTS failed passes over the
 * same deployed revision and spec, repair of that release stops, in place and recreation alike,
 * and stays stopped across periodic reconciles and restarts (the count is in status). An upgrade
 * (a new revision) or a spec change (a new generation) is a new desired state and starts again.
 */
import type { DriftRepairFailures } from '../status/status.js';

export const DRIFT_REPAIR_ATTEMPTS = 5;

/** What the budget belongs to: the deployed revision and the CR's spec generation. */
export interface DriftBudgetKey {
  readonly revision: number;
  readonly generation?: number | undefined;
}

const sameKey = (prior: DriftRepairFailures, key: DriftBudgetKey): boolean =>
  prior.revision === key.revision && (prior.generation ?? undefined) === (key.generation ?? undefined);

/** Pure: whether drift repair of `key` has spent its budget, so this reconcile repairs nothing. */
export function driftRepairStopped(prior: DriftRepairFailures | undefined, key: DriftBudgetKey): boolean {
  return prior !== undefined && sameKey(prior, key) && prior.count >= DRIFT_REPAIR_ATTEMPTS;
}

/**
 * Pure: the record after a pass whose repairs failed (another key starts again at 1), and
 * whether this pass spent the budget: the one pass that says so.
 */
export function countFailedRepair(
  prior: DriftRepairFailures | undefined,
  key: DriftBudgetKey,
): { record: DriftRepairFailures; exhausted: boolean } {
  const count = prior !== undefined && sameKey(prior, key) ? prior.count + 1 : 1;
  const record: DriftRepairFailures = {
    revision: key.revision,
    ...(key.generation === undefined ? {} : { generation: key.generation }),
    count,
  };
  return { record, exhausted: count >= DRIFT_REPAIR_ATTEMPTS };
}
