/**
 * `helm-operator olm install | status | uninstall`, as operator-sdk's `olm` commands (docs/adr/0033).
 * OLM's release manifests and images are not reachable here, so OLM comes from source at the
 * pinned version (hack/tools.sh olm): its CRDs from its module are applied, and on a cluster whose
 * nodes run no containers (the local control plane) its `olm` and `catalog` operators run as local
 * processes, as the deployment of OLM's release would run them.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubernetesObject } from '../k8s/client-node.js';
import { Cluster, OLM_GROUP, poll, type Obj } from './cluster.js';
import { OlmError } from './errors.js';
import { clusterStateDir, logTail, runningPid, startDetached, stopProcess } from './local-processes.js';
import { olmTools, pinnedOlmVersion, type OlmTools } from './tools.js';

export const DEFAULT_OLM_NAMESPACE = 'olm';
const CRDS = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' };
const OPERATORS = ['olm-operator', 'catalog-operator'] as const;
const CSV_CRD = `clusterserviceversions.${OLM_GROUP}`;

export interface OlmOptions {
  readonly version?: string;
  readonly timeoutMs: number;
  readonly olmNamespace: string;
}

/** `v0.33.0` and `0.33.0` name the same release. */
const sameVersion = (a: string, b: string): boolean => a.replace(/^v/, '') === b.replace(/^v/, '');

/** Refuses a version this runtime cannot install: only the pinned one is built from source here. */
export function checkVersion(requested: string | undefined, pinned: string): void {
  if (requested === undefined || requested === 'latest' || sameVersion(requested, pinned)) return;
  throw new OlmError(`OLM ${requested} is not available: this runtime builds OLM ${pinned} from source (its release manifests and images are not fetched); omit --version or pass --version ${pinned}`);
}

async function olmCrds(c: Cluster): Promise<Obj[]> {
  return (await c.list(CRDS)).filter((d) => d.metadata?.name?.endsWith(`.${OLM_GROUP}`) === true);
}

const established = (crd: Obj): boolean => crd.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') === true;

async function readManifests(dir: string): Promise<KubernetesObject[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  const docs = await Promise.all(files.map(async (f) => parseAllDocuments(await readFile(path.join(dir, f), 'utf8')).map((d) => d.toJS() as KubernetesObject | null)));
  return docs.flat().filter((d): d is KubernetesObject => d?.kind !== undefined);
}

function processSpecs(tools: OlmTools, kubeconfig: string, namespace: string): { name: (typeof OPERATORS)[number]; bin: string; args: string[]; env: NodeJS.ProcessEnv }[] {
  // OLM's deployment runs them with OPERATOR_NAMESPACE / OPERATOR_NAME from the downward API.
  const env = { ...process.env, KUBECONFIG: kubeconfig, OPERATOR_NAMESPACE: namespace, OPERATOR_NAME: 'olm-operator' };
  return [
    { name: 'olm-operator', bin: tools.olm, args: ['--namespace', namespace, '--writeStatusName', ''], env },
    { name: 'catalog-operator', bin: tools.catalog, args: ['--namespace', namespace, '--writeStatusName', '', '--kubeconfig', kubeconfig], env },
  ];
}

export async function olmInstall(c: Cluster, o: OlmOptions, log: (line: string) => void): Promise<string> {
  checkVersion(o.version, pinnedOlmVersion());
  if ((await c.get(CRDS, CSV_CRD)) !== undefined) {
    throw new OlmError(`OLM is already installed in this cluster (${CSV_CRD} exists): helm-operator olm status shows it; helm-operator olm uninstall removes it first`);
  }
  if (await c.runsPods()) {
    throw new OlmError(
      "this cluster's nodes run containers: installing OLM there needs OLM's release manifests and images (quay.io/operator-framework/olm), which this runtime does not fetch; install OLM with its own release (operator-sdk olm install, or OLM's install.sh), then use helm-operator run bundle",
    );
  }
  log(`building or finding OLM's binaries (hack/tools.sh olm; the first time takes minutes)`);
  const tools = await olmTools();
  const dir = clusterStateDir(c.server);
  log(`applying OLM ${tools.version}'s CRDs`);
  const crds = await readManifests(tools.crds);
  for (const crd of crds) await c.apply(crd);
  const names = crds.map((d) => d.metadata?.name ?? '');
  const ready = await poll(async () => ((await olmCrds(c)).filter(established).length >= names.length ? true : undefined), o.timeoutMs);
  if (ready === undefined) throw new OlmError(`OLM's CRDs were not Established within ${o.timeoutMs / 1000}s`);
  await c.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: o.olmNamespace } });
  // What OLM's release applies next to its CRDs: the cluster-wide configuration its operator reports on.
  await c.apply({ apiVersion: `${OLM_GROUP}/v1`, kind: 'OLMConfig', metadata: { name: 'cluster' } });
  const kubeconfig = await c.writeKubeconfig(dir);
  for (const spec of processSpecs(tools, kubeconfig, o.olmNamespace)) {
    await stopProcess(dir, spec.name);
    log(`starting ${spec.name} (${spec.bin}) on this machine; log: ${path.join(dir, `${spec.name}.log`)}`);
    await startDetached(dir, spec);
  }
  await writeFile(path.join(dir, 'olm.json'), JSON.stringify({ version: tools.version, namespace: o.olmNamespace, server: c.server }));
  // The olm operator reports on OLMConfig once its controllers run: the sign it works against this cluster.
  const up = await poll(async () => {
    for (const name of OPERATORS) if ((await runningPid(dir, name)) === undefined) throw new OlmError(`${name} exited during start-up:\n${logTail(dir, name)}`);
    const cfg = await c.get({ group: OLM_GROUP, version: 'v1', plural: 'olmconfigs' }, 'cluster');
    return (cfg?.status?.conditions?.length ?? 0) > 0 ? true : undefined;
  }, o.timeoutMs);
  if (up === undefined) throw new OlmError(`OLM did not report ready within ${o.timeoutMs / 1000}s:\n${logTail(dir, 'olm-operator')}`);
  return `OLM ${tools.version} is installed: its CRDs, and olm-operator and catalog-operator running on this machine (this cluster's nodes run no containers)\n${await olmStatus(c, o)}`;
}

interface LocalState {
  readonly version: string;
  readonly namespace: string;
}

async function localState(dir: string): Promise<LocalState | undefined> {
  try {
    return JSON.parse(await readFile(path.join(dir, 'olm.json'), 'utf8')) as LocalState;
  } catch {
    return undefined;
  }
}

/** Columns padded to their widest cell (pure). */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}

async function processRows(dir: string, namespace: string): Promise<{ rows: string[][]; down: string[] }> {
  const rows: string[][] = [];
  const down: string[] = [];
  for (const name of OPERATORS) {
    const pid = await runningPid(dir, name);
    if (pid === undefined) down.push(name);
    rows.push([name, namespace, 'Process (this machine)', pid === undefined ? 'Not running' : `Running (pid ${pid})`]);
  }
  return { rows, down };
}

/** The installation: CRDs, its namespace and the local operators; OlmError when there is none. */
export async function olmStatus(c: Cluster, o: Pick<OlmOptions, 'version' | 'olmNamespace'>): Promise<string> {
  const crds = await olmCrds(c);
  if (crds.length === 0) throw new OlmError('no existing OLM installation found in this cluster (no operators.coreos.com CRDs): helm-operator olm install installs it');
  const dir = clusterStateDir(c.server);
  const version = (await localState(dir))?.version ?? o.version ?? 'unknown';
  const ns = await c.get({ group: '', version: 'v1', plural: 'namespaces' }, o.olmNamespace);
  const { rows, down } = await processRows(dir, o.olmNamespace);
  const table = formatTable([
    ['NAME', 'NAMESPACE', 'KIND', 'STATUS'],
    ...crds.map((crd) => [crd.metadata?.name ?? '', '', 'CustomResourceDefinition', established(crd) ? 'Installed' : 'Not established']),
    [o.olmNamespace, '', 'Namespace', ns === undefined ? 'Not found' : 'Installed'],
    ...rows,
  ]);
  const health = down.length === 0 ? 'OLM is running' : `OLM is installed but ${down.join(' and ')} ${down.length > 1 ? 'are' : 'is'} not running: helm-operator olm uninstall, then olm install`;
  return `OLM version: ${version}\n${table}\n${health}`;
}

/** Every process the OLM commands left running for this cluster: catalog servers, then OLM's operators. */
async function stopLocal(dir: string, log: (line: string) => void): Promise<void> {
  for (const entry of await readdir(path.join(dir, 'catalogs')).catch(() => [])) await stopProcess(path.join(dir, 'catalogs', entry), 'catalog-serve');
  for (const name of OPERATORS) if (await stopProcess(dir, name)) log(`stopped ${name}`);
}

export async function olmUninstall(c: Cluster, o: OlmOptions, log: (line: string) => void): Promise<string> {
  checkVersion(o.version, pinnedOlmVersion());
  const dir = clusterStateDir(c.server);
  const crds = await olmCrds(c);
  const local = await localState(dir);
  if (crds.length === 0 && local === undefined) throw new OlmError('no existing OLM installation found in this cluster: nothing to uninstall');
  // CRDs first, while OLM still runs (a finalizer it owns would otherwise hold a CR, and its CRD, forever).
  for (const crd of crds) {
    log(`deleting CustomResourceDefinition ${crd.metadata?.name ?? ''}`);
    await c.delete(CRDS, crd.metadata?.name ?? '');
  }
  const gone = await poll(async () => ((await olmCrds(c)).length === 0 ? true : undefined), o.timeoutMs);
  if (gone === undefined) throw new OlmError(`OLM's CRDs were not gone within ${o.timeoutMs / 1000}s: ${(await olmCrds(c)).map((d) => d.metadata?.name).join(', ')}`);
  await stopLocal(dir, log);
  await c.delete({ group: '', version: 'v1', plural: 'namespaces' }, local?.namespace ?? o.olmNamespace);
  await rm(dir, { recursive: true, force: true });
  return 'OLM is uninstalled';
}
