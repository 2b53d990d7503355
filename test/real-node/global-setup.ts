import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { startTestCluster } from '../support/global-setup.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `hack/real-node.sh host-state` before the tier's cluster started: what `down` must restore ('' with KEEP_CLUSTER=1). */
    hostStateBefore: string;
  }
}

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
export const REAL_NODE_CLUSTER = process.env.REAL_NODE_CLUSTER_NAME ?? 'helm-operator-real-node';

/**
 * The real-node tier's OWN control plane with the machine's one real node (`hack/cluster.sh up
 * --real-node`, root). The host's state is recorded first, so the tier's last test can prove that
 * `down` restored it; a node already on the machine belongs to someone else and stops the tier.
 * KEEP_CLUSTER=1 keeps the cluster between runs (and reuses it): no host check then.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const owner = await run('bash', [path.join(ROOT, 'hack/real-node.sh'), 'owner']).then(
    (r) => r.stdout.trim(),
    () => '',
  );
  const keep = process.env.KEEP_CLUSTER === '1';
  if (owner !== '' && !(keep && owner === REAL_NODE_CLUSTER))
    throw new Error(`a real node already runs on this machine, for cluster '${owner}': hack/cluster.sh down --name ${owner}`);
  let before = '';
  if (!keep) {
    before = path.join(await mkdtemp(path.join(os.tmpdir(), 'real-node-')), 'host-state.before');
    await writeFile(
      before,
      (await run('bash', [path.join(ROOT, 'hack/real-node.sh'), 'host-state'], { maxBuffer: 16 * 1024 * 1024 })).stdout,
    );
  }
  project.provide('hostStateBefore', before);
  return startTestCluster(project, { name: REAL_NODE_CLUSTER, upArgs: ['--real-node'] });
}
