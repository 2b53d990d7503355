import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import type {} from 'vitest';
import { ensureOperatorBundle } from './operator-bundle.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfigPath: string;
    /** helm v4 binary. */
    helmBin: string;
    /** helm v3 binary. */
    helm3Bin: string;
    kubectlBin: string;
    /** The shipped executable (`npm run bundle`) of this checkout: `node <operatorBundle> run …` (operator-bundle.ts). */
    operatorBundle: string;
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

interface ClusterOptions {
  name: string;
  reuse?: string | undefined;
  env?: Readonly<Record<string, string>>;
  upArgs?: readonly string[];
}

interface Started {
  readonly tools: Record<string, string>;
  readonly bundle: string;
  readonly kubeconfig: string;
  readonly teardown: () => Promise<void>;
}

/**
 * The clusters this vitest process started or reused, by options: the projects that share one
 * (integration, middle, integration-serial) share one start. Each project loads its own copy of this
 * module, so the map lives on globalThis.
 */
function started(): Map<string, Promise<Started>> {
  const g = globalThis as { [STARTED]?: Map<string, Promise<Started>> };
  return (g[STARTED] ??= new Map<string, Promise<Started>>());
}
const STARTED = Symbol.for('helm-operator-ts.test-clusters');

async function start(o: ClusterOptions): Promise<Started> {
  // The bundle builds (or comes from the cache) while the control plane starts.
  const bundle = ensureOperatorBundle();
  const tools = await toolPaths();
  if (o.reuse !== undefined && o.reuse !== '')
    return { tools, bundle: (await bundle).entry, kubeconfig: o.reuse, teardown: async () => {} };
  const env = { ...process.env, ...o.env };
  const alreadyUp = await hack('cluster.sh', ['status', '--name', o.name], env).then(
    () => true,
    () => false,
  );
  const lines = (await hack('cluster.sh', ['up', '--name', o.name, ...(o.upArgs ?? [])], env)).split('\n');
  return {
    tools,
    bundle: (await bundle).entry,
    kubeconfig: lines[lines.length - 1] ?? '',
    teardown: async () => {
      if (alreadyUp || process.env.KEEP_CLUSTER === '1') return;
      await hack('cluster.sh', ['down', '--name', o.name], env);
    },
  };
}

/**
 * Provides the tool paths, the operator bundle and the kubeconfig of cluster `name` (started unless
 * `reuse` names a kubeconfig); the teardown returned to the first project deletes a cluster this
 * call started, unless KEEP_CLUSTER=1 (the others' do nothing). `env` reaches hack/cluster.sh (e.g.
 * SERVICE_CIDR), `upArgs` its `up` (e.g. --real-node).
 */
export async function startTestCluster(project: TestProject, o: ClusterOptions): Promise<() => Promise<void>> {
  const key = JSON.stringify(o);
  let starting = started().get(key);
  const first = starting === undefined;
  if (starting === undefined) started().set(key, (starting = start(o)));
  const s = await starting;
  project.provide('operatorBundle', s.bundle);
  project.provide('helmBin', s.tools.HELM_BIN ?? '');
  project.provide('helm3Bin', s.tools.HELM3_BIN ?? '');
  project.provide('kubectlBin', s.tools.KUBECTL_BIN ?? '');
  project.provide('kubeconfigPath', s.kubeconfig);
  return first ? s.teardown : async () => {};
}
