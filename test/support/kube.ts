import { randomBytes } from 'node:crypto';
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  type KubeConfig,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { inject } from 'vitest';
import { isStatus } from '../../src/k8s/errors.js';
import { PooledKubeConfig } from '../../src/k8s/kubeconfig.js';

/** The operator's own KubeConfig (one connection pool), so every test exercises it. */
export function testKubeConfig(): KubeConfig {
  const kc = new PooledKubeConfig();
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

/** Whether `read` finds the object: false on NotFound, any other error thrown. */
export async function exists(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return true;
  } catch (err) {
    if (isStatus(err, 404)) return false;
    throw err;
  }
}

export const uniqueName = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}`;

/**
 * Releases the test CRs of a namespace from their finalizers. Called once no operator runs any more,
 * so that deleting the namespace cannot hang on a finalizer nobody will remove (which would also
 * make `make undeploy` in a later test wait for CRs that never go).
 */
async function releaseTestCRs(kc: KubeConfig, namespace: string): Promise<void> {
  const crds = await kc.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition();
  const custom = kc.makeApiClient(CustomObjectsApi);
  for (const crd of crds.items) {
    if (crd.spec.scope !== 'Namespaced' || !crd.spec.group.endsWith('example.com')) continue;
    for (const v of crd.spec.versions.filter((x) => x.served)) {
      await dropFinalizers(custom, { group: crd.spec.group, version: v.name, plural: crd.spec.names.plural, namespace });
    }
  }
}

async function dropFinalizers(
  custom: CustomObjectsApi,
  ref: { group: string; version: string; plural: string; namespace: string },
): Promise<void> {
  const list = (await custom.listNamespacedCustomObject(ref).catch(() => ({ items: [] }))) as {
    items: { metadata: { name: string; finalizers?: string[] } }[];
  };
  const held = list.items.filter((i) => (i.metadata.finalizers ?? []).length > 0);
  const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  for (const item of held) {
    await custom
      .patchNamespacedCustomObject({ ...ref, name: item.metadata.name, body: { metadata: { finalizers: null } } }, merge)
      .catch(() => undefined);
  }
}

/** Creates a namespace with a unique name; `remove` deletes it (call it after stopping operators). */
/** `pick`: a name it accepts, drawn from the prefix's unique names (a namespace that hashes to a given shard). */
export async function createNamespace(
  kc: KubeConfig,
  prefix: string,
  pick: (name: string) => boolean = () => true,
): Promise<{ name: string; remove: () => Promise<void> }> {
  const core = kc.makeApiClient(CoreV1Api);
  let name = uniqueName(prefix);
  for (let i = 0; i < 10_000 && !pick(name); i++) name = uniqueName(prefix);
  if (!pick(name)) throw new Error(`no namespace name ${prefix}-… was picked`);
  await core.createNamespace({ body: { metadata: { name } } });
  return {
    name,
    remove: async () => {
      await core.deleteNamespace({ name }).catch(() => undefined);
      await releaseTestCRs(kc, name);
    },
  };
}

export async function deploymentAvailable(kc: KubeConfig, namespace: string, name: string): Promise<boolean> {
  const apps = kc.makeApiClient(AppsV1Api);
  const d = await apps.readNamespacedDeployment({ namespace, name });
  return d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') ?? false;
}
