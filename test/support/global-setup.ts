import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import type {} from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfigPath: string;
    /** helm v4 binary. */
    helmBin: string;
    /** helm v3 binary. */
    helm3Bin: string;
    kubectlBin: string;
  }
}

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const CLUSTER_NAME = process.env.TEST_CLUSTER_NAME ?? 'helm-operator-test';

async function hack(script: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const { stdout } = await run('bash', [path.join(root, 'hack', script), ...args], {
    cwd: root,
    env,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout.trim();
}

async function toolPaths(): Promise<Record<string, string>> {
  const exports = await hack('tools.sh', ['env']);
  const paths: Record<string, string> = {};
  for (const m of exports.matchAll(/^export (\w+)="([^"]*)"$/gm)) paths[m[1]!] = m[2]!;
  return paths;
}

/**
 * Starts one control plane for the whole integration tier, or reuses the cluster whose kubeconfig is
 * in TEST_KUBECONFIG (inner dev loop: `make cluster-up` once, then run tests many times).
 * Only a cluster this setup started is torn down, and only unless KEEP_CLUSTER=1.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  return startTestCluster(project, { name: CLUSTER_NAME, reuse: process.env.TEST_KUBECONFIG });
}

/**
 * Provides the tool paths and the kubeconfig of cluster `name` (started unless `reuse` names a
 * kubeconfig); the returned teardown deletes a cluster this call started, unless KEEP_CLUSTER=1.
 * `env` reaches hack/cluster.sh (e.g. SERVICE_CIDR), `upArgs` its `up` (e.g. --real-node).
 */
export async function startTestCluster(
  project: TestProject,
  o: { name: string; reuse?: string | undefined; env?: Readonly<Record<string, string>>; upArgs?: readonly string[] },
): Promise<() => Promise<void>> {
  const tools = await toolPaths();
  project.provide('helmBin', tools.HELM_BIN ?? '');
  project.provide('helm3Bin', tools.HELM3_BIN ?? '');
  project.provide('kubectlBin', tools.KUBECTL_BIN ?? '');

  if (o.reuse !== undefined && o.reuse !== '') {
    project.provide('kubeconfigPath', o.reuse);
    return async () => {};
  }
  const env = { ...process.env, ...o.env };
  const alreadyUp = await hack('cluster.sh', ['status', '--name', o.name], env).then(
    () => true,
    () => false,
  );
  const lines = (await hack('cluster.sh', ['up', '--name', o.name, ...(o.upArgs ?? [])], env)).split('\n');
  project.provide('kubeconfigPath', lines[lines.length - 1] ?? '');
  return async () => {
    if (alreadyUp || process.env.KEEP_CLUSTER === '1') return;
    await hack('cluster.sh', ['down', '--name', o.name], env);
  };
}
