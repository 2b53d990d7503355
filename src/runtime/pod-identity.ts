/**
 * Who and where this replica is, for leader election: its identity (unique per process start) and
 * the namespace of its Lease (the flag, else the pod's own namespace).
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import os from 'node:os';

/** client-go's identity shape: hostname, underscore, a random UUID (unique per process start). */
export function defaultIdentity(): string {
  return `${os.hostname()}_${randomUUID()}`;
}

export const SERVICE_ACCOUNT_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export class LeaderElectionConfigError extends Error {
  override readonly name = 'LeaderElectionConfigError';
}

/**
 * The namespace of the Lease: the flag when given, else the pod's own namespace when running in a
 * cluster; outside a cluster without the flag there is no safe default, so that is an error.
 */
export async function leaderElectionNamespace(flag: string | undefined, namespaceFile = SERVICE_ACCOUNT_NAMESPACE_FILE): Promise<string> {
  if (flag !== undefined && flag !== '') return flag;
  let ns: string;
  try {
    ns = (await readFile(namespaceFile, 'utf8')).trim();
  } catch {
    throw new LeaderElectionConfigError(
      `--leader-election-namespace is required with --leader-elect when not running in a cluster (${namespaceFile} does not exist)`,
    );
  }
  if (ns === '') throw new LeaderElectionConfigError(`--leader-election-namespace is required: ${namespaceFile} is empty`);
  return ns;
}
