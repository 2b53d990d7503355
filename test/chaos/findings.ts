/** Failures the chaos tier found in src/, how they were fixed, and the test that keeps them fixed. */
export interface Finding {
  readonly title: string;
  readonly fix: string;
  readonly regressionTest: string;
}

export const FINDINGS: readonly Finding[] = [
  {
    title:
      'split brain after leader failover: a leader frozen mid-install and thawed after the standby took the Lease ran `helm uninstall` ' +
      '(the failed-install cleanup, called without the cancel signal) on releases the new leader owned, and wrote InstallError status and events over its work',
    fix: "src/reconciler/core/reconciler.ts: a reconcile cancelled by lost leadership (the signal's LeadershipLostCancellation reason) does no cleanup, rollback or failure report and writes no status; the pending revision is the next leader's to unlock",
    regressionTest:
      'test/integration/operator/crash.test.ts "a reconcile cancelled mid-install (lost leadership) leaves the release and the status to the next leader"; test/chaos/failover.test.ts',
  },
  {
    title:
      'split brain after leader failover, by timing: a thawed old leader ran its I/O callbacks before its renew-deadline timer, so queued reconciles started ' +
      "`helm install` after the standby led, and a helm parked in the frozen operator's post-render applied (and, cancelled, wrote `failed` over the new leader's release) once answered",
    fix: 'src/runtime/leader.ts: leadership is also checked by the clock and lost at once past the renew deadline, with synchronous onLost listeners (the manager cancels reconciles in that tick); src/helm/runner.ts and post-render.ts: a fence refuses release writers and post-renders once the lease is lost (ADR 0065)',
    regressionTest:
      'test/unit/runtime/leader.test.ts "a process paused past the renew deadline …"; test/unit/runtime/manager.test.ts; test/unit/helm/client.test.ts and post-render.test.ts (the fence); test/chaos/failover.test.ts',
  },
  {
    title:
      'sharding: a share left ownerless for 19 s at a 10 s lease (issue 46 allows lease + one reconcile): a replica that joined after a peer died counted the dead peer live ' +
      "for a whole lease duration from its own first sight of the peer's Lease (expiry is judged on the observer's clock), so the dead peer's buckets that rendezvous gives the newcomer waited for it",
    fix: "src/runtime/shard-coordinator.ts: a replica writes released (holder '') every peer Lease it has seen unchanged for its duration, which every reader, a newcomer included, counts gone at once (ADR 0099)",
    regressionTest:
      'test/unit/runtime/shard-coordinator.test.ts "a replica that joins after a peer died takes its share …"; test/chaos/sharding.test.ts (ownerless bound)',
  },
];
