import { randomBytes } from 'node:crypto';
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';

export function testKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(inject('kubeconfigPath'));
  return kc;
}

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

/**
 * Polls `probe` until it returns a value other than undefined/false, within a bounded time.
 * The last probe error (if any) is part of the timeout message, so a failing test says why.
 */
export async function waitFor<T>(
  description: string,
  probe: () => Promise<T | undefined | false>,
  { timeoutMs = 60_000, intervalMs = 250 }: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  const why = lastError instanceof Error ? `; last error: ${lastError.message}` : '';
  throw new Error(`timed out after ${timeoutMs}ms waiting for ${description}${why}`);
}

export const uniqueName = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}`;

/** Creates a namespace with a unique name; the returned function deletes it. */
export async function createNamespace(kc: KubeConfig, prefix: string): Promise<{ name: string; remove: () => Promise<void> }> {
  const core = kc.makeApiClient(CoreV1Api);
  const name = uniqueName(prefix);
  await core.createNamespace({ body: { metadata: { name } } });
  return {
    name,
    remove: async () => {
      await core.deleteNamespace({ name }).catch(() => undefined);
    },
  };
}

export async function deploymentAvailable(kc: KubeConfig, namespace: string, name: string): Promise<boolean> {
  const apps = kc.makeApiClient(AppsV1Api);
  const d = await apps.readNamespacedDeployment({ namespace, name });
  return d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') ?? false;
}
