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
    fix: 'src/reconciler/reconciler.ts: a reconcile cancelled by lost leadership (the signal\'s LeadershipLostCancellation reason) does no cleanup, rollback or failure report and writes no status; the pending revision is the next leader\'s to unlock',
    regressionTest:
      'test/integration/operator/crash.test.ts "a reconcile cancelled mid-install (lost leadership) leaves the release and the status to the next leader"; test/chaos/failover.test.ts',
  },
];
