/**
 * `helm-operator olm install | status | uninstall`, as operator-sdk's `olm` commands (docs/adr/0033,
 * 0064). OLM's release manifests are not reachable here, so OLM comes from source at the pinned
 * version (hack/tools.sh olm): its CRDs from its module are applied; on a cluster whose nodes run
 * containers its `olm` and `catalog` operators run as Deployments of an OLM image (`--image`; built
 * here by hack/olm-images.sh), and on one whose nodes run none (the local control plane) as local
 * processes, as the deployment of OLM's release would run them.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubernetesObject } from '../k8s/client-node.js';
import type { ResourceRef } from '../k8s/raw-client.js';
import { Cluster, OLM_GROUP, poll, type Obj } from './cluster.js';
import { OlmError } from './errors.js';
import {
  defaultOlmImage,
  defaultOpmImage,
  deploymentAvailable,
  OLM_CLUSTER_ROLE,
  olmClusterRoleBinding,
  olmObjects,
  OLM_OPERATORS,
  podStuck,
} from './in-cluster.js';
import { clusterStateDir, logTail, runningPid, startDetached, stopProcess } from './local-processes.js';
import { olmTools, pinnedOlmVersion, type OlmTools } from './tools.js';

const CRDS = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' };
const OPERATORS = OLM_OPERATORS;
const CSV_CRD = `clusterserviceversions.${OLM_GROUP}`;

export interface OlmOptions {
  readonly version?: string;
  /** OLM's image, on a cluster whose nodes run containers (default: upstream's name at the pinned version). */
  readonly image?: string;
  readonly timeoutMs: number;
  readonly olmNamespace: string;
}

const DEPLOYMENTS = (namespace: string): ResourceRef => ({ group: 'apps', version: 'v1', plural: 'deployments', namespace });
const PODS = (namespace: string): ResourceRef => ({ group: '', version: 'v1', plural: 'pods', namespace });
const NAMESPACES = { group: '', version: 'v1', plural: 'namespaces' };

/** `v0.33.0` and `0.33.0` name the same release. */
const sameVersion = (a: string, b: string): boolean => a.replace(/^v/, '') === b.replace(/^v/, '');

/** Refuses a version this runtime cannot install: only the pinned one is built from source here. */
export function checkVersion(requested: string | undefined, pinned: string): void {
  if (requested === undefined || requested === 'latest' || sameVersion(requested, pinned)) return;
  throw new OlmError(
    `OLM ${requested} is not available: this runtime builds OLM ${pinned} from source (its release manifests and images are not fetched); omit --version or pass --version ${pinned}`,
  );
}

async function olmCrds(c: Cluster): Promise<Obj[]> {
  return (await c.list(CRDS)).filter((d) => d.metadata?.name?.endsWith(`.${OLM_GROUP}`) === true);
}

const established = (crd: Obj): boolean => crd.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') === true;

async function readManifests(dir: string): Promise<KubernetesObject[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  const docs = await Promise.all(
    files.map(async (f) => parseAllDocuments(await readFile(path.join(dir, f), 'utf8')).map((d) => d.toJS() as KubernetesObject | null)),
  );
  return docs.flat().filter((d): d is KubernetesObject => d?.kind !== undefined);
}

function processSpecs(
  tools: OlmTools,
  kubeconfig: string,
  namespace: string,
): { name: (typeof OPERATORS)[number]; bin: string; args: string[]; env: NodeJS.ProcessEnv }[] {
  // OLM's deployment runs them with OPERATOR_NAMESPACE / OPERATOR_NAME from the downward API.
  const env = { ...process.env, KUBECONFIG: kubeconfig, OPERATOR_NAMESPACE: namespace, OPERATOR_NAME: 'olm-operator' };
  return [
    { name: 'olm-operator', bin: tools.olm, args: ['--namespace', namespace, '--writeStatusName', ''], env },
    {
      name: 'catalog-operator',
      bin: tools.catalog,
      args: ['--namespace', namespace, '--writeStatusName', '', '--kubeconfig', kubeconfig],
      env,
    },
  ];
}

/** OLM's CRDs from its module, applied and Established; then its namespace and the OLMConfig its operator reports on. */
async function applyCrds(c: Cluster, tools: OlmTools, o: OlmOptions, log: (line: string) => void): Promise<void> {
  log(`applying OLM ${tools.version}'s CRDs`);
  const crds = await readManifests(tools.crds);
  for (const crd of crds) await c.apply(crd);
  const ready = await poll(async () => ((await olmCrds(c)).filter(established).length >= crds.length ? true : undefined), o.timeoutMs);
  if (ready === undefined) throw new OlmError(`OLM's CRDs were not Established within ${o.timeoutMs / 1000}s`);
  await c.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: o.olmNamespace } });
  // What OLM's release applies next to its CRDs: the cluster-wide configuration its operator reports on.
  await c.apply({ apiVersion: `${OLM_GROUP}/v1`, kind: 'OLMConfig', metadata: { name: 'cluster' } });
}

/** The olm operator reports on OLMConfig once its controllers run: the sign it works against this cluster. */
async function olmConfigReported(c: Cluster): Promise<boolean> {
  const cfg = await c.get({ group: OLM_GROUP, version: 'v1', plural: 'olmconfigs' }, 'cluster');
  return (cfg?.status?.conditions?.length ?? 0) > 0;
}

/** OLM's operators as Deployments of `image`: until both are Available and OLM reports; a pod that cannot start fails it at once. */
async function installDeployments(c: Cluster, o: OlmOptions, log: (line: string) => void): Promise<string> {
  const image = o.image ?? defaultOlmImage();
  const ns = o.olmNamespace;
  for (const obj of olmObjects({ namespace: ns, image, opmImage: defaultOpmImage() })) await c.apply(obj);
  log(`created Deployments olm-operator and catalog-operator in namespace ${ns} from image ${image}; waiting for them to be Available`);
  const up = await poll(async () => {
    for (const pod of await c.list(PODS(ns))) {
      const stuck = podStuck(pod);
      if (stuck !== undefined)
        throw new OlmError(
          `OLM's ${stuck}${/Pull/.test(stuck) ? `; is ${image} in a registry the nodes reach? (hack/olm-images.sh push builds and pushes it for the real node)` : ''}`,
        );
    }
    const available = await Promise.all(OPERATORS.map(async (name) => deploymentAvailable(await c.get(DEPLOYMENTS(ns), name))));
    return available.every(Boolean) && (await olmConfigReported(c)) ? true : undefined;
  }, o.timeoutMs);
  if (up === undefined)
    throw new OlmError(
      `OLM's Deployments were not Available (and reporting on OLMConfig/cluster) within ${o.timeoutMs / 1000}s: kubectl -n ${ns} describe pods shows why`,
    );
  return `OLM ${pinnedOlmVersion()} is installed: its CRDs, and olm-operator and catalog-operator as Deployments in namespace ${ns} (image ${image})\n${await olmStatus(c, o)}`;
}

export async function olmInstall(c: Cluster, o: OlmOptions, log: (line: string) => void): Promise<string> {
  checkVersion(o.version, pinnedOlmVersion());
  if ((await c.get(CRDS, CSV_CRD)) !== undefined) {
    throw new OlmError(
      `OLM is already installed in this cluster (${CSV_CRD} exists): helm-operator olm status shows it; helm-operator olm uninstall removes it first`,
    );
  }
  const pods = await c.runsPods();
  if (!pods && o.image !== undefined)
    throw new OlmError(
      `--image ${o.image}: this cluster's nodes run no containers (kwok's fake nodes), so OLM runs as processes on this machine; omit --image, or use a cluster with a node that runs pods (hack/cluster.sh up --real-node)`,
    );
  log(`building or finding OLM's binaries (hack/tools.sh olm; the first time takes minutes)`);
  const tools = await olmTools();
  await applyCrds(c, tools, o, log);
  if (pods) return installDeployments(c, o, log);
  const dir = clusterStateDir(c.server);
  const kubeconfig = await c.writeKubeconfig(dir);
  for (const spec of processSpecs(tools, kubeconfig, o.olmNamespace)) {
    await stopProcess(dir, spec.name);
    log(`starting ${spec.name} (${spec.bin}) on this machine; log: ${path.join(dir, `${spec.name}.log`)}`);
    await startDetached(dir, spec);
  }
  await writeFile(path.join(dir, 'olm.json'), JSON.stringify({ version: tools.version, namespace: o.olmNamespace, server: c.server }));
  const up = await poll(async () => {
    for (const name of OPERATORS)
      if ((await runningPid(dir, name)) === undefined) throw new OlmError(`${name} exited during start-up:\n${logTail(dir, name)}`);
    return (await olmConfigReported(c)) ? true : undefined;
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
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
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

/** The tag of an image reference (pure; undefined for a digest or no tag). */
export const imageTag = (image: string | undefined): string | undefined => /:([^:/@]+)$/.exec(image ?? '')?.[1];

const containerImage = (d: Obj | undefined): string | undefined =>
  (d?.spec?.template as { spec?: { containers?: { image?: string }[] } } | undefined)?.spec?.containers?.[0]?.image;

/** OLM's Deployments, and the olm-operator's image (whose tag is OLM's version). */
async function deploymentRows(c: Cluster, namespace: string): Promise<{ rows: string[][]; down: string[]; image?: string }> {
  const rows: string[][] = [];
  const down: string[] = [];
  let image: string | undefined;
  for (const name of OPERATORS) {
    const d = await c.get(DEPLOYMENTS(namespace), name);
    if (!deploymentAvailable(d)) down.push(name);
    rows.push([name, namespace, 'Deployment', d === undefined ? 'Not found' : deploymentAvailable(d) ? 'Available' : 'Not available']);
    image ??= containerImage(d);
  }
  return { rows, down, ...(image === undefined ? {} : { image }) };
}

/** The installation: CRDs, its namespace and the operators (Deployments, or local processes); OlmError when there is none. */
export async function olmStatus(c: Cluster, o: Pick<OlmOptions, 'version' | 'olmNamespace'>): Promise<string> {
  const crds = await olmCrds(c);
  if (crds.length === 0)
    throw new OlmError(
      'no existing OLM installation found in this cluster (no operators.coreos.com CRDs): helm-operator olm install installs it',
    );
  const dir = clusterStateDir(c.server);
  const { rows, down, image } = (await c.runsPods())
    ? await deploymentRows(c, o.olmNamespace)
    : { ...(await processRows(dir, o.olmNamespace)), image: undefined };
  const version = (await localState(dir))?.version ?? imageTag(image) ?? o.version ?? 'unknown';
  const ns = await c.get(NAMESPACES, o.olmNamespace);
  const table = formatTable([
    ['NAME', 'NAMESPACE', 'KIND', 'STATUS'],
    ...crds.map((crd) => [crd.metadata?.name ?? '', '', 'CustomResourceDefinition', established(crd) ? 'Installed' : 'Not established']),
    [o.olmNamespace, '', 'Namespace', ns === undefined ? 'Not found' : 'Installed'],
    ...rows,
  ]);
  const health =
    down.length === 0
      ? 'OLM is running'
      : `OLM is installed but ${down.join(' and ')} ${down.length > 1 ? 'are' : 'is'} not running: helm-operator olm uninstall, then olm install`;
  return `OLM version: ${version}\n${table}\n${health}`;
}

/** Every process the OLM commands left running for this cluster: catalog servers, then OLM's operators. */
async function stopLocal(dir: string, log: (line: string) => void): Promise<void> {
  for (const entry of await readdir(path.join(dir, 'catalogs')).catch(() => []))
    await stopProcess(path.join(dir, 'catalogs', entry), 'catalog-serve');
  for (const name of OPERATORS) if (await stopProcess(dir, name)) log(`stopped ${name}`);
}

/** CRDs first, while OLM still runs (a finalizer it owns would otherwise hold a CR, and its CRD, forever). */
async function deleteCrds(c: Cluster, crds: readonly Obj[], timeoutMs: number, log: (line: string) => void): Promise<void> {
  for (const crd of crds) {
    log(`deleting CustomResourceDefinition ${crd.metadata?.name ?? ''}`);
    await c.delete(CRDS, crd.metadata?.name ?? '');
  }
  const gone = await poll(async () => ((await olmCrds(c)).length === 0 ? true : undefined), timeoutMs);
  if (gone === undefined)
    throw new OlmError(
      `OLM's CRDs were not gone within ${timeoutMs / 1000}s: ${(await olmCrds(c)).map((d) => d.metadata?.name).join(', ')}`,
    );
}

export async function olmUninstall(c: Cluster, o: OlmOptions, log: (line: string) => void): Promise<string> {
  checkVersion(o.version, pinnedOlmVersion());
  const dir = clusterStateDir(c.server);
  const crds = await olmCrds(c);
  const local = await localState(dir);
  const deployed = (await c.get(DEPLOYMENTS(o.olmNamespace), 'olm-operator')) !== undefined;
  if (crds.length === 0 && local === undefined && !deployed)
    throw new OlmError('no existing OLM installation found in this cluster: nothing to uninstall');
  await deleteCrds(c, crds, o.timeoutMs, log);
  await stopLocal(dir, log);
  const namespace = local?.namespace ?? o.olmNamespace;
  // OLM's Deployments (when it ran as pods) go with their namespace; its cluster-wide RBAC by name.
  await c.delete({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterrolebindings' }, olmClusterRoleBinding(namespace));
  await c.delete({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterroles' }, OLM_CLUSTER_ROLE);
  await c.delete(NAMESPACES, namespace);
  if ((await poll(async () => ((await c.get(NAMESPACES, namespace)) === undefined ? true : undefined), o.timeoutMs)) === undefined) {
    throw new OlmError(
      `namespace ${namespace} (OLM's Deployments) was not gone within ${o.timeoutMs / 1000}s: kubectl get namespace ${namespace} -o yaml shows what holds it`,
    );
  }
  await rm(dir, { recursive: true, force: true });
  return 'OLM is uninstalled';
}
