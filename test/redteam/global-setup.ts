import type { TestProject } from 'vitest/node';
import { startTestCluster } from '../support/global-setup.js';
import { resetRecords, writeReport } from './support/report.js';

/**
 * The red-team tier's OWN control plane: its attacks leave ClusterRoleBindings, CRDs and floods of
 * releases behind when they succeed, which no other tier should run beside.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  resetRecords();
  const teardown = await startTestCluster(project, {
    name: process.env.REDTEAM_CLUSTER_NAME ?? 'helm-operator-redteam',
    reuse: process.env.REDTEAM_KUBECONFIG,
  });
  return async () => {
    console.log(writeReport(Date.now() - started));
    await teardown();
  };
}
