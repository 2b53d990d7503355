/**
 * The sharded tier's control plane (`make test-sharded-apiserver`, docs/adr/0103): kube-apiserver
 * with the ShardedListAndWatch gate on (`hack/cluster.sh up --sharded`), a cluster of its own, since
 * the integration tier's runs the same version with the gate off.
 */
import type { TestProject } from 'vitest/node';
import { startTestCluster } from './global-setup.js';

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return startTestCluster(project, { name: process.env.TEST_CLUSTER_NAME ?? 'helm-operator-sharded', upArgs: ['--sharded'] });
}
