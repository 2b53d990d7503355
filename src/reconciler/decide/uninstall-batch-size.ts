/**
 * How many releases one `helm uninstall a b c` takes (ADR 0063). helm uninstalls the releases of
 * one process one after the other, so a batch of all of a namespace's deleted CRs serialises a
 * bulk delete behind one process while the other helm slots stay idle. The deleted CRs are split
 * into as many batches as the kind has workers instead, which the concurrency gate lets run side
 * by side: each batch still saves a process start per release it takes along.
 */

/** Releases per `helm uninstall` at most: one slow or failing batch must not hold many CRs. */
export const UNINSTALL_BATCH_MAX = 20;

/**
 * Releases a batch takes at least when there are that many: a helm process's start costs about
 * as much as uninstalling a release or two, and deletions arrive over ~100 ms, so the first
 * reconciles of a bulk delete see few of them and would otherwise run one process per release.
 */
export const UNINSTALL_BATCH_MIN = 4;

/**
 * Releases for a batch starting now, itself included: `deleting` CRs of the namespace wait for an
 * uninstall (this one included), split into `lanes` batches. The lanes are the kind's workers, not
 * the tuned number in flight: that number changes while the batches run (it rises as work waits),
 * and batches sized for today's two slots would leave the later ones nothing to take.
 */
export function uninstallBatchSize(deleting: number, lanes: number): number {
  const share = Math.ceil(deleting / Math.max(1, Math.floor(lanes)));
  return Math.min(UNINSTALL_BATCH_MAX, Math.max(1, Math.min(deleting, UNINSTALL_BATCH_MIN), share));
}
