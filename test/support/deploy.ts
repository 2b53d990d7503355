/**
 * What the tests of the deployment path share: the repository's Makefile and scripts run as child
 * processes against the test cluster, the ServiceAccount that `make deploy` creates, free ports.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { stringify } from 'yaml';
import { isNotFound } from '../../src/k8s/errors.js';

const run = promisify(execFile);
export const ROOT = path.resolve(import.meta.dirname, '../..');

/** Names `config/default` gives what it deploys. */
export const DEPLOYED = {
  namespace: 'helm-operator-system',
  prefix: 'helm-operator-',
  serviceAccount: 'helm-operator-controller-manager',
  deployment: 'helm-operator-controller-manager',
  crd: 'nginxes.example.com',
  sample: 'config/samples/example.com_v1alpha1_nginx.yaml',
} as const;

/** Environment for child processes: the test cluster, and no make state from an outer `make test`. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { MAKEFLAGS: _flags, MFLAGS: _mflags, MAKELEVEL: _level, IMG: _img, ...env } = process.env;
  return { ...env, KUBECONFIG: inject('kubeconfigPath'), ...extra };
}

/** Runs a program in the repository root; resolves with stdout+stderr, rejects with both in the message. */
export async function exec(file: string, args: readonly string[], timeoutMs: number, env = childEnv()): Promise<string> {
  try {
    const { stdout, stderr } = await run(file, args, { cwd: ROOT, env, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024 });
    return `${stdout}${stderr}`;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${path.basename(file)} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
  }
}

export const make = (...args: string[]): Promise<string> => exec('make', ['--no-print-directory', ...args], 240_000);
export const kubectl = (...args: string[]): Promise<string> => exec(inject('kubectlBin'), args, 120_000);

/** True when `read` fails with NotFound. */
export async function gone(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return false;
  } catch (err) {
    if (isNotFound(err)) return true;
    throw err;
  }
}

export interface ServiceAccountRef {
  readonly name: string;
  readonly namespace: string;
}
const DEPLOYED_ACCOUNT: ServiceAccountRef = { name: DEPLOYED.serviceAccount, namespace: DEPLOYED.namespace };

/** A TokenRequest token of a ServiceAccount (what the kubelet projects into its pod); the deployed one by default. */
export async function serviceAccountToken(kc: KubeConfig, expirationSeconds = 3600, account = DEPLOYED_ACCOUNT): Promise<string> {
  const tr = await kc.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name: account.name,
    namespace: account.namespace,
    body: { spec: { audiences: [], expirationSeconds } },
  });
  const token = tr.status?.token;
  if (token === undefined || token === '') throw new Error('the TokenRequest returned no token');
  return token;
}

/** The test cluster's server URL and CA certificate (PEM). */
export async function clusterEndpoint(kc: KubeConfig): Promise<{ server: string; caPem: string }> {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error('the test kubeconfig has no current cluster');
  let caPem = '';
  if (cluster.caData !== undefined) caPem = Buffer.from(cluster.caData, 'base64').toString('utf8');
  else if (cluster.caFile !== undefined) caPem = await readFile(cluster.caFile, 'utf8');
  if (caPem === '') throw new Error('the test kubeconfig has no CA certificate');
  return { server: cluster.server, caPem };
}

/** A kubeconfig that authenticates with a TokenRequest token of a ServiceAccount (the deployed one by default). */
export async function serviceAccountKubeconfig(kc: KubeConfig, file: string, account = DEPLOYED_ACCOUNT): Promise<void> {
  const token = await serviceAccountToken(kc, 3600, account);
  const { server, caPem } = await clusterEndpoint(kc);
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') } }],
    users: [{ name: 'operator', user: { token } }],
    contexts: [{ name: 'operator', context: { cluster: 'test', user: 'operator' } }],
    'current-context': 'operator',
  };
  await writeFile(file, stringify(config), { mode: 0o600 });
}
