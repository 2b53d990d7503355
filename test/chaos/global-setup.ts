import type { TestProject } from 'vitest/node';
import { startTestCluster } from '../support/global-setup.js';
import type {} from '../support/fuzz-report.js';
import { resetRecords, writeReport } from './support/report.js';

/**
 * The chaos tier's OWN control plane: it stops and kills the apiserver and etcd, so it never shares
 * the integration tier's cluster. A /16 Service range: the flood scenario creates 200+ Services.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  resetRecords();
  project.provide('chaosTier', true);
  const teardown = await startTestCluster(project, {
    name: process.env.CHAOS_CLUSTER_NAME ?? 'chaos-test',
    reuse: process.env.CHAOS_KUBECONFIG,
    env: { SERVICE_CIDR: '10.0.0.0/16' },
  });
  return async () => {
    console.log(writeReport(Date.now() - started));
    await teardown();
  };
}
