/**
 * OLM on the test control plane through the CLI (`helm-operator olm install`, `run bundle`: OLM's
 * own upstream code built from source, its operators run as local processes, src/olm), and reads of
 * what OLM did. The cluster fakes pods (kwok), so nothing OLM deploys runs a container.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { childEnv, ROOT } from './deploy.js';
import { waitFor } from './kube.js';

const run = promisify(execFile);

/** `helm-operator` from this checkout's sources, against the test cluster: exit code and both streams. */
export async function helmOperator(
  args: readonly string[],
  timeoutMs = 600_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli/main.ts'), ...args], {
      cwd: ROOT,
      env: childEnv(),
      timeout: timeoutMs,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as Error & { code?: number | string; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Like {@link helmOperator}, failing with its output unless it exits 0. */
export async function helmOperatorOk(args: readonly string[], timeoutMs?: number): Promise<string> {
  const r = await helmOperator(args, timeoutMs);
  if (r.code !== 0) throw new Error(`helm-operator ${args.join(' ')} exited ${r.code}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** TCP sockets a process listens on, from `ss` (host:port). */
export async function listeningAddresses(pid: number): Promise<string[]> {
  const { stdout } = await run('ss', ['-ltnpH']);
  return stdout
    .split('\n')
    .filter((l) => l.includes(`pid=${pid},`))
    .map((l) => l.trim().split(/\s+/)[3] ?? '');
}

export const OLM_GROUP = 'operators.coreos.com';

/** OLM's CRDs on the cluster, by name, sorted. */
export async function olmCrds(kc: KubeConfig): Promise<string[]> {
  return (await kc.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition()).items
    .map((c) => c.metadata?.name ?? '')
    .filter((n) => n.endsWith(`.${OLM_GROUP}`))
    .sort();
}

/** The process is gone, or a zombie nobody reaped (the detached children's parent exited). */
export function exited(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2] === 'Z';
  } catch {
    return true;
  }
}

export interface Csv {
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
  status?: { phase?: string; reason?: string; message?: string };
}

export async function readCsv(kc: KubeConfig, namespace: string, name: string): Promise<Csv> {
  return (await kc
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ group: OLM_GROUP, version: 'v1alpha1', plural: 'clusterserviceversions', namespace, name })) as Csv;
}

/** Waits (bounded) for the CSV to reach `phase`; the timeout message carries its last phase, reason and message. */
export async function waitForCsvPhase(
  kc: KubeConfig,
  csv: { namespace: string; name: string },
  phase: string,
  timeoutMs = 180_000,
): Promise<Csv> {
  const { namespace, name } = csv;
  let last: Csv | undefined;
  try {
    return await waitFor(
      `CSV ${namespace}/${name} to reach phase ${phase}`,
      async () => {
        last = await readCsv(kc, namespace, name);
        return last.status?.phase === phase ? last : undefined;
      },
      { timeoutMs, intervalMs: 1000 },
    );
  } catch (err) {
    const s = last?.status;
    throw new Error(`${(err as Error).message}; last status: ${s?.phase ?? '-'} ${s?.reason ?? ''} ${s?.message ?? ''}`, { cause: err });
  }
}

export async function createOperatorGroup(
  kc: KubeConfig,
  namespace: string,
  name: string,
  targetNamespaces?: readonly string[],
): Promise<void> {
  const spec = targetNamespaces === undefined ? {} : { targetNamespaces };
  await createOlmObject(kc, { version: 'v1', plural: 'operatorgroups', kind: 'OperatorGroup', namespace, name, spec });
}

/** An OLM object in a namespace, created through the API (CatalogSource, Subscription, ...). */
export async function createOlmObject(
  kc: KubeConfig,
  o: { version: 'v1' | 'v1alpha1'; plural: string; kind: string; namespace: string; name: string; spec: Record<string, unknown> },
): Promise<void> {
  await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: OLM_GROUP,
    version: o.version,
    plural: o.plural,
    namespace: o.namespace,
    body: { apiVersion: `${OLM_GROUP}/${o.version}`, kind: o.kind, metadata: { name: o.name, namespace: o.namespace }, spec: o.spec },
  });
}
