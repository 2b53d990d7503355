/**
 * How many releases one `helm uninstall a b c` takes (ADR 0063). helm uninstalls the releases of
 * one process one after the other, so a batch of all of a namespace's deleted CRs serialises a
 * bulk delete behind one process while the other helm slots stay idle. The deleted CRs are split
 * over the helm runs that may run at once instead: each batch still saves a process start per
 * release it takes along, and all slots work.
 */

/** Releases per `helm uninstall` at most: one slow or failing batch must not hold many CRs. */
export const UNINSTALL_BATCH_MAX = 20;

/**
 * Releases for a batch starting now, itself included: `deleting` CRs of the namespace wait for an
 * uninstall (this one included) and `slots` helm runs may run at once (the tuned limit, or the
 * pinned workers).
 */
export function uninstallBatchSize(deleting: number, slots: number): number {
  const share = Math.ceil(deleting / Math.max(1, Math.floor(slots)));
  return Math.min(UNINSTALL_BATCH_MAX, Math.max(1, share));
}
