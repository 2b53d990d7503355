import type { TestProject } from 'vitest/node';
import { startTestCluster } from '../support/global-setup.js';
import type {} from '../support/fuzz-report.js';
import { resetRecords, writeReport } from './support/report.js';

/**
 * The chaos projects (`chaos`, `chaos-alone`) of this vitest process that have set up and not yet
 * torn down. Each project loads its own copy of this module and runs this setup before any file
 * runs, so the records are reset once, and the report is written by the last teardown, when every
 * file of both has run.
 */
function open(): { count: number; started: number } {
  const g = globalThis as { [OPEN]?: { count: number; started: number } };
  return (g[OPEN] ??= { count: 0, started: Date.now() });
}
const OPEN = Symbol.for('helm-operator-ts.chaos-projects');

/**
 * The chaos tier's OWN control plane: it stops and kills the apiserver and etcd, so it never shares
 * the integration tier's cluster. A /16 Service range: the flood scenario creates 200+ Services.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const projects = open();
  if (projects.count++ === 0) resetRecords();
  project.provide('chaosTier', true);
  const teardown = await startTestCluster(project, {
    name: process.env.CHAOS_CLUSTER_NAME ?? 'chaos-test',
    reuse: process.env.CHAOS_KUBECONFIG,
    env: { SERVICE_CIDR: '10.0.0.0/16' },
  });
  return async () => {
    if (--projects.count === 0) console.log(writeReport(Date.now() - projects.started));
    await teardown();
  };
}
