/**
 * Which CRs are installed without reading their release's storage first (ADR 0060): those whose
 * status shows that this operator never did anything about their release. The LIST of the
 * namespace's Secrets it saves is the most expensive read of a reconcile (ADR 0026).
 */
import type { HelmStatus } from '../status/status.js';

/**
 * Pure: whether the CR's status is untouched by any release work: no condition (an install under
 * way writes `Reconciling` before helm starts), nothing deployed, no failed attempt. Anything else,
 * a status carried over from operator-sdk included, reads the storage first.
 */
export function isFirstInstall(status: Readonly<HelmStatus>): boolean {
  return (
    status.conditions.length === 0 &&
    status.deployedRelease === undefined &&
    status.failedAttempts === undefined &&
    status.inventory === undefined
  );
}
