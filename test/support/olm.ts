/**
 * OLM on the test control plane, as OLM's own upstream code: its CRDs and its `olm` and `catalog`
 * operators from `hack/tools.sh olm` (a pinned release built from source), run as local processes
 * against the cluster. The cluster fakes pods (kwok), so nothing OLM deploys runs a container.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { childEnv, kubectl, ROOT } from './deploy.js';
import { waitFor } from './kube.js';
import { startChild, type Child } from './process.js';

const run = promisify(execFile);

export interface OlmTools {
  readonly olm: string;
  readonly catalog: string;
  /** OLM's CRDs, from its module. */
  readonly crds: string;
  readonly opm: string;
  readonly catalogServe: string;
}

/** Where `hack/tools.sh` put OLM (component olm) and opm / catalog-serve (olm-validate), building them when absent. */
export async function olmTools(): Promise<OlmTools> {
  const tools = path.join(ROOT, 'hack/tools.sh');
  await run('bash', [tools, 'olm', 'olm-validate'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  const dir = async (c: string): Promise<string> => (await run('bash', [tools, 'path', c], { cwd: ROOT })).stdout.trim();
  const [olm, validate] = [await dir('olm'), await dir('olm-validate')];
  return {
    olm: path.join(olm, 'olm'),
    catalog: path.join(olm, 'catalog'),
    crds: path.join(olm, 'crds'),
    opm: path.join(validate, 'opm'),
    catalogServe: path.join(validate, 'catalog-serve'),
  };
}

/** OLM's CRDs as its release ships them; server-side apply (the CSV CRD is too large for the last-applied annotation). */
export async function installOlmCrds(kc: KubeConfig, crdDir: string): Promise<string[]> {
  const files = (await readdir(crdDir)).filter((f) => f.endsWith('.yaml'));
  await kubectl('apply', '--server-side', '--force-conflicts', '-f', crdDir);
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const names = (await ext.listCustomResourceDefinition()).items.map((c) => c.metadata?.name ?? '').filter((n) => n.endsWith('.operators.coreos.com'));
  for (const name of names) {
    await waitFor(`CRD ${name} to be established`, async () => {
      const crd = await ext.readCustomResourceDefinition({ name });
      return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
    });
  }
  if (names.length < files.length) throw new Error(`expected ${files.length} OLM CRDs, found ${names.join(', ')}`);
  return names;
}

/**
 * OLM's two operators as its deployment runs them (`--namespace` is where OLM itself lives); no
 * ClusterOperator status (that is OpenShift's). KUBECONFIG is the admin identity, as OLM's own
 * ServiceAccount is cluster-admin.
 */
export function startOlmOperators(bins: { olm: string; catalog: string }, namespace: string): { olm: Child; catalog: Child } {
  const env = childEnv({ OPERATOR_NAMESPACE: namespace, OPERATOR_NAME: 'olm-operator' });
  const olm = startChild(bins.olm, ['--namespace', namespace, '--writeStatusName', ''], { cwd: ROOT, env });
  const catalog = startChild(bins.catalog, ['--namespace', namespace, '--writeStatusName', '', '--kubeconfig', env.KUBECONFIG ?? ''], { cwd: ROOT, env });
  return { olm, catalog };
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

export interface Csv {
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
  status?: { phase?: string; reason?: string; message?: string };
}

export async function readCsv(kc: KubeConfig, namespace: string, name: string): Promise<Csv> {
  return (await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ group: OLM_GROUP, version: 'v1alpha1', plural: 'clusterserviceversions', namespace, name })) as Csv;
}

/** Waits (bounded) for the CSV to reach `phase`; the timeout message carries its last phase, reason and message. */
export async function waitForCsvPhase(kc: KubeConfig, csv: { namespace: string; name: string }, phase: string, timeoutMs = 180_000): Promise<Csv> {
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

export async function createOperatorGroup(kc: KubeConfig, namespace: string, name: string, targetNamespaces?: readonly string[]): Promise<void> {
  const spec = targetNamespaces === undefined ? {} : { targetNamespaces };
  await createOlmObject(kc, { version: 'v1', plural: 'operatorgroups', kind: 'OperatorGroup', namespace, name, spec });
}

/** `catalog-serve` (hack/olm; `opm serve` on a loopback port) serving a file-based catalog directory; resolves with its address. */
export async function serveCatalog(bin: string, catalogDir: string): Promise<{ address: string; child: Child }> {
  const child = startChild(bin, [catalogDir], { cwd: ROOT, env: process.env });
  const address = await waitFor('catalog-serve to listen', () => Promise.resolve(/^serving (\S+)$/m.exec(child.output())?.[1]), { timeoutMs: 60_000 }).catch(
    async (err: unknown) => {
      await child.stop();
      throw new Error(`${(err as Error).message}\n${child.output()}`, { cause: err });
    },
  );
  return { address, child };
}

/** A file-based catalog of one package with one channel holding `opm render` of the bundle directory; `opm validate` must accept it. */
export async function fileBasedCatalog(opm: string, bundleDir: string, dir: string, pkg: { name: string; channel: string; csv: string }): Promise<void> {
  const header = stringify({ schema: 'olm.package', name: pkg.name, defaultChannel: pkg.channel });
  const channel = stringify({ schema: 'olm.channel', package: pkg.name, name: pkg.channel, entries: [{ name: pkg.csv }] });
  const { stdout: rendered } = await run(opm, ['render', bundleDir, '--output', 'yaml'], { maxBuffer: 32 * 1024 * 1024 });
  await mkdir(path.join(dir, pkg.name), { recursive: true });
  await writeFile(path.join(dir, pkg.name, 'catalog.yaml'), `---\n${header}---\n${channel}${rendered.startsWith('---') ? '' : '---\n'}${rendered}`);
  await run(opm, ['validate', dir]);
}

/** An OLM object in a namespace, created through the API (CatalogSource, Subscription, ...). */
export async function createOlmObject(kc: KubeConfig, o: { version: 'v1' | 'v1alpha1'; plural: string; kind: string; namespace: string; name: string; spec: Record<string, unknown> }): Promise<void> {
  await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: OLM_GROUP,
    version: o.version,
    plural: o.plural,
    namespace: o.namespace,
    body: { apiVersion: `${OLM_GROUP}/${o.version}`, kind: o.kind, metadata: { name: o.name, namespace: o.namespace }, spec: o.spec },
  });
}
