/**
 * The OLM tier's control plane: its own cluster, because OLM's CRDs and its operators (which act on
 * every namespace) must not change what the integration tier's shared cluster looks like.
 */
import type { TestProject } from 'vitest/node';
import { startTestCluster } from './global-setup.js';

export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return startTestCluster(project, { name: process.env.TEST_CLUSTER_NAME ?? 'helm-operator-olm' });
}
