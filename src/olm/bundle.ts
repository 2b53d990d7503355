/**
 * `helm-operator run bundle <image | directory>` and `helm-operator cleanup <package>`, as
 * operator-sdk's (docs/adr/0033): the bundle goes into a one-bundle file-based catalog (`opm render`,
 * `opm validate`), served to OLM over its registry API, and a CatalogSource, an OperatorGroup and a
 * Subscription make OLM install it until the ClusterServiceVersion Succeeds. Where the cluster's
 * nodes run no containers (the local control plane), the catalog is served by a process on this
 * machine on loopback (`catalog-serve`) and the CatalogSource names its address, so OLM starts no
 * registry pod; opm render puts the bundle's manifests into the catalog, so no unpack Job either.
 */
import { existsSync, statSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { parseAllDocuments, stringify } from 'yaml';
import { Cluster, OLM_GROUP, olmResource, poll, type Obj, type ObjStatus } from './cluster.js';
import type { ResourceRef } from '../k8s/raw-client.js';
import { OlmError } from './errors.js';
import { chooseInstallMode, type InstallMode } from './install-mode.js';
import { defaultOpmImage } from './in-cluster.js';
import { clusterStateDir, logFile, logTail, runningPid, startDetached, stopProcess } from './local-processes.js';
import { deleteRegistryPods, ownByCatalogSource, startRegistryPod, type RegistryPod } from './registry-pod.js';
import { olmTools, type OlmTools } from './tools.js';

export const OPERATOR_GROUP = 'helm-operator-og';
export const CHANNEL = 'helm-operator-run-bundle';
const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'helm-operator-run-bundle' };
const PACKAGE_LABEL = 'helm-operator.dev/run-bundle-package';
const CRDS = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' };

export interface RunBundleOptions {
  readonly namespace?: string;
  readonly timeoutMs: number;
  readonly installMode?: string;
  /** The opm image of the registry pod, on a cluster whose nodes run containers (operator-sdk's --index-image). */
  readonly indexImage?: string;
  readonly useHttp: boolean;
  readonly skipTlsVerify: boolean;
}

/** A directory on disk, or an image reference; anything else says what it looked for. */
export function bundleSource(ref: string): { kind: 'directory' | 'image'; ref: string } {
  if (existsSync(ref)) {
    if (!statSync(ref).isDirectory())
      throw new OlmError(`${ref} is a file: run bundle takes a bundle directory (manifests/, metadata/) or a bundle image`);
    if (!existsSync(path.join(ref, 'metadata', 'annotations.yaml')))
      throw new OlmError(`${ref} is not a bundle directory: it has no metadata/annotations.yaml (make bundle writes ./bundle)`);
    return { kind: 'directory', ref: path.resolve(ref) };
  }
  // An image reference has a registry or repository path; ./x, /x and plain names are paths that are missing.
  if (/^(\.{0,2}\/|~)/.test(ref) || !ref.includes('/'))
    throw new OlmError(`bundle directory ${ref} does not exist (make bundle writes ./bundle; an image is <registry>/<repository>:<tag>)`);
  return { kind: 'image', ref };
}

export interface RenderedBundle {
  readonly name: string;
  readonly packageName: string;
  readonly blob: Record<string, unknown>;
  readonly installModes: { type: string; supported: boolean }[];
  readonly ownedCrds: string[];
}

/** `opm render` of the bundle: its olm.bundle blob, with the CSV (for install modes and owned CRDs). */
export async function renderBundle(
  opm: string,
  source: { ref: string },
  o: Pick<RunBundleOptions, 'useHttp' | 'skipTlsVerify'>,
): Promise<RenderedBundle> {
  const args = [
    'render',
    source.ref,
    '--output',
    'yaml',
    ...(o.useHttp ? ['--use-http'] : []),
    ...(o.skipTlsVerify ? ['--skip-tls-verify'] : []),
  ];
  const r = await execa(opm, args, { reject: false, maxBuffer: 64 * 1024 * 1024 });
  if (r.exitCode !== 0)
    throw new OlmError(`cannot read the bundle ${source.ref} (opm render): ${r.stderr.trim().split('\n').slice(-5).join('\n')}`);
  const blobs = parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Record<string, unknown> | null)
    .filter((b) => b?.schema === 'olm.bundle') as Record<string, unknown>[];
  const blob = blobs[0];
  if (blobs.length !== 1 || blob === undefined)
    throw new OlmError(`${source.ref} holds ${blobs.length} bundles; run bundle takes one bundle (an index image is not a bundle)`);
  const props = (blob.properties ?? []) as { type: string; value: unknown }[];
  const objects = props
    .filter((p) => p.type === 'olm.bundle.object')
    .map((p) => JSON.parse(Buffer.from((p.value as { data: string }).data, 'base64').toString('utf8')) as Obj);
  const csv = objects.find((o) => o.kind === 'ClusterServiceVersion');
  if (csv === undefined) throw new OlmError(`the bundle ${source.ref} has no ClusterServiceVersion`);
  const spec = csv.spec as {
    installModes?: { type: string; supported: boolean }[];
    customresourcedefinitions?: { owned?: { name: string }[] };
  };
  return {
    name: String(blob.name),
    packageName: String(blob.package),
    blob: inlineBundle(blob),
    installModes: spec.installModes ?? [],
    ownedCrds: (spec.customresourcedefinitions?.owned ?? []).map((c) => c.name),
  };
}

/**
 * The olm.bundle blob without its image (pure): OLM installs a catalog bundle that has no image from
 * the manifests embedded in it (olm.bundle.object); with one, it first unpacks the image in a Job
 * whose pod needs OLM's util image and a node that runs containers, to read what opm render read.
 */
export function inlineBundle(blob: Record<string, unknown>): Record<string, unknown> {
  const { image: _image, ...inline } = blob;
  return inline;
}

/** A file-based catalog of the one bundle: package, one channel, the bundle (pure). */
export function catalogYaml(b: Pick<RenderedBundle, 'name' | 'packageName' | 'blob'>, channel = CHANNEL): string {
  const docs = [
    { schema: 'olm.package', name: b.packageName, defaultChannel: channel },
    { schema: 'olm.channel', package: b.packageName, name: channel, entries: [{ name: b.name }] },
    b.blob,
  ];
  return docs.map((d) => `---\n${stringify(d)}`).join('');
}

export const catalogDir = (c: Cluster, namespace: string, pkg: string): string =>
  path.join(clusterStateDir(c.server), 'catalogs', `${namespace}.${pkg}`);

/** OLM installed and its operators running, on a cluster whose catalogs this machine serves (see runBundle). */
export async function requireOlm(c: Cluster): Promise<void> {
  if ((await c.get(CRDS, `subscriptions.${OLM_GROUP}`)) === undefined) {
    throw new OlmError(
      'OLM is not installed in this cluster (no subscriptions.operators.coreos.com CRD): run helm-operator olm install first',
    );
  }
  if (!(await c.runsPods()) && (await runningPid(clusterStateDir(c.server), 'olm-operator')) === undefined) {
    throw new OlmError(
      "OLM's operators are not running on this machine for this cluster: helm-operator olm status shows what is missing; olm uninstall, then olm install",
    );
  }
}

/** catalog-serve on a loopback port, detached; resolves with its address once it listens. */
export async function serveCatalog(tools: OlmTools, dir: string, timeoutMs: number): Promise<string> {
  await stopProcess(dir, 'catalog-serve');
  await rm(path.join(dir, 'catalog-serve.log'), { force: true });
  await startDetached(dir, { name: 'catalog-serve', bin: tools.catalogServe, args: [path.join(dir, 'catalog')], env: process.env });
  const address = await poll(
    async () => {
      const m = /^serving (\S+)$/m.exec(await readFile(path.join(dir, 'catalog-serve.log'), 'utf8').catch(() => ''));
      if (m?.[1] !== undefined) return m[1];
      if ((await runningPid(dir, 'catalog-serve')) === undefined)
        throw new OlmError(`catalog-serve exited:\n${logTail(dir, 'catalog-serve')}`);
      return undefined;
    },
    Math.min(timeoutMs, 60_000),
    200,
  );
  if (address === undefined) throw new OlmError(`catalog-serve did not listen within 60s:\n${logTail(dir, 'catalog-serve')}`);
  return address;
}

const nameOf = (o: Obj): string => o.metadata?.name ?? '';

/** The catalog `yaml` of package `pkg` written to `dir` (what catalog-serve serves), validated with opm; `what` names it in the error. */
export async function writeCatalog(tools: OlmTools, dir: string, c: { pkg: string; yaml: string; what: string }): Promise<string> {
  await rm(path.join(dir, 'catalog'), { recursive: true, force: true });
  await mkdir(path.join(dir, 'catalog', c.pkg), { recursive: true });
  await writeFile(path.join(dir, 'catalog', c.pkg, 'catalog.yaml'), c.yaml);
  const valid = await execa(tools.opm, ['validate', path.join(dir, 'catalog')], { reject: false });
  if (valid.exitCode !== 0) throw new OlmError(`${c.what} is not valid (opm validate): ${valid.stderr.trim()}`);
  return c.yaml;
}

/** The label selector of a package's run bundle objects (CatalogSource, registry pods and their ConfigMaps). */
export const packageSelector = (pkg: string): string => `${PACKAGE_LABEL}=${pkg}`;

/** A registry pod of a package: its ConfigMap and pod are named `name` (by default the CatalogSource's name) and labelled for cleanup. */
export const registryPod = (
  bundle: Pick<RenderedBundle, 'packageName'>,
  at: { namespace: string; catalog: string; opmImage: string; name?: string },
): RegistryPod => ({
  name: at.name ?? catalogSourceName(bundle.packageName),
  namespace: at.namespace,
  packageName: bundle.packageName,
  catalog: at.catalog,
  opmImage: at.opmImage,
  labels: { ...MANAGED_BY, [PACKAGE_LABEL]: bundle.packageName },
});

export const catalogSourceName = (pkg: string): string => `${pkg}-catalog`;

/** The CatalogSource of the catalog served at `address` (no registry pod: OLM dials the address). */
export const catalogSourceObject = (pkg: string, namespace: string, address: string): Obj => ({
  apiVersion: `${OLM_GROUP}/v1alpha1`,
  kind: 'CatalogSource',
  metadata: { name: catalogSourceName(pkg), namespace, labels: { ...MANAGED_BY, [PACKAGE_LABEL]: pkg } },
  spec: { sourceType: 'grpc', address, displayName: `${pkg} (run bundle)`, publisher: 'helm-operator' },
});

/** CatalogSource, OperatorGroup (unless the namespace has one) and Subscription, as operator-sdk creates them. */
async function subscribe(
  c: Cluster,
  bundle: RenderedBundle,
  at: { namespace: string; address: string; mode: InstallMode },
  log: (line: string) => void,
): Promise<void> {
  const { namespace, address, mode } = at;
  const labels = { ...MANAGED_BY, [PACKAGE_LABEL]: bundle.packageName };
  const catalogSource = catalogSourceName(bundle.packageName);
  await c.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  await c.apply(catalogSourceObject(bundle.packageName, namespace, address));
  const [group] = await c.list(olmResource('operatorgroups', namespace, 'v1'));
  if (group === undefined) {
    const spec = mode.targetNamespaces === undefined ? {} : { targetNamespaces: [...mode.targetNamespaces] };
    await c.apply({
      apiVersion: `${OLM_GROUP}/v1`,
      kind: 'OperatorGroup',
      metadata: { name: OPERATOR_GROUP, namespace, labels: MANAGED_BY },
      spec,
    } as Obj);
    log(`created OperatorGroup ${OPERATOR_GROUP} (${mode.type})`);
  } else {
    log(`namespace ${namespace} has OperatorGroup ${nameOf(group)}: it decides the install mode`);
  }
  await c.apply({
    apiVersion: `${OLM_GROUP}/v1alpha1`,
    kind: 'Subscription',
    metadata: { name: `${bundle.name}-sub`, namespace, labels },
    spec: {
      name: bundle.packageName,
      channel: CHANNEL,
      source: catalogSource,
      sourceNamespace: namespace,
      startingCSV: bundle.name,
      installPlanApproval: 'Automatic',
    },
  } as Obj);
  log(`created Subscription ${bundle.name}-sub; waiting for ClusterServiceVersion ${namespace}/${bundle.name} to succeed`);
}

/**
 * Failed reasons OLM leaves by itself: in the Failed phase it checks the CSV's requirements again
 * and goes back to Pending once they are met. A replacing CSV meets `RequirementsNotMet` ("requirements
 * no longer met") while the ServiceAccount and CRDs it shares with the CSV it replaces are still
 * that one's; operator-sdk gives up there, and a `run bundle-upgrade` that OLM would have finished
 * fails.
 */
const PASSING_FAILURES: ReadonlySet<string> = new Set(['RequirementsNotMet']);

/** Pure: what a CSV's status means to a wait for it: Succeeded, failed for good (with OLM's reason), or not yet. */
export function csvProgress(status: ObjStatus | undefined): 'succeeded' | 'waiting' | { readonly failed: string } {
  if (status?.phase === 'Succeeded') return 'succeeded';
  if (status?.phase === 'Failed' && !PASSING_FAILURES.has(status.reason ?? ''))
    return { failed: `${status.reason ?? ''} ${status.message ?? ''}`.trim() || 'no reason given' };
  return 'waiting';
}

/** Until the CSV is Succeeded; failing for good or the timeout is an error with OLM's reason (and the Subscription's, when no CSV came). */
export async function waitForCsv(c: Cluster, namespace: string, name: string, timeoutMs: number): Promise<void> {
  let last: Obj | undefined;
  const done = await poll(async () => {
    last = await c.get(olmResource('clusterserviceversions', namespace), name);
    const progress = csvProgress(last?.status);
    if (typeof progress === 'object') throw new OlmError(`ClusterServiceVersion ${namespace}/${name} failed: ${progress.failed}`);
    return progress === 'succeeded' ? true : undefined;
  }, timeoutMs);
  if (done !== undefined) return;
  const sub = await c.get(olmResource('subscriptions', namespace), `${name}-sub`);
  const why = (sub?.status?.conditions ?? []).filter((x) => x.status === 'True').map((x) => `${x.type}: ${x.message ?? x.reason ?? ''}`);
  const s = last?.status;
  const phase = [s?.phase ?? 'not created', s?.reason, s?.message].filter((x) => x !== undefined && x !== '').join(' ');
  throw new OlmError(
    `ClusterServiceVersion ${namespace}/${name} did not succeed within ${timeoutMs / 1000}s (phase: ${phase})${why.length > 0 ? `; subscription: ${why.join('; ')}` : ''}`,
  );
}

export async function runBundle(c: Cluster, ref: string, o: RunBundleOptions, log: (line: string) => void): Promise<string> {
  const source = bundleSource(ref);
  const namespace = o.namespace ?? c.namespace;
  await requireOlm(c);
  const tools = await olmTools();
  const bundle = await renderBundle(tools.opm, source, o);
  const mode = chooseInstallMode(bundle.installModes, namespace, o.installMode);
  const dir = catalogDir(c, namespace, bundle.packageName);
  const catalog = await writeCatalog(tools, dir, {
    pkg: bundle.packageName,
    yaml: catalogYaml(bundle),
    what: `the catalog of ${bundle.name}`,
  });
  if (!(await c.runsPods())) {
    if (o.indexImage !== undefined)
      throw new OlmError(
        `--index-image ${o.indexImage}: this cluster's nodes run no containers (kwok's fake nodes), so the catalog is served from this machine; omit --index-image`,
      );
    const address = await serveCatalog(tools, dir, o.timeoutMs);
    log(`serving the catalog of ${bundle.name} on ${address} (catalog-serve on this machine; log: ${path.join(dir, 'catalog-serve.log')})`);
    await subscribe(c, bundle, { namespace, address, mode }, log);
  } else {
    // As operator-sdk: a registry pod from the opm image serves the catalog; the CatalogSource names its address and owns it.
    const registry = registryPod(bundle, { namespace, catalog, opmImage: o.indexImage ?? defaultOpmImage() });
    await c.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    const address = await startRegistryPod(c, registry, o.timeoutMs, log);
    log(`registry pod ${namespace}/${registry.name} serves the catalog of ${bundle.name} on ${address}`);
    await subscribe(c, bundle, { namespace, address, mode }, log);
    const source = await c.get(olmResource('catalogsources', namespace), catalogSourceName(bundle.packageName));
    if (source !== undefined) await ownByCatalogSource(c, registry, source);
  }
  await waitForCsv(c, namespace, bundle.name, o.timeoutMs);
  return `OLM has successfully installed "${bundle.name}" in namespace ${namespace}`;
}

export interface CleanupOptions {
  readonly namespace?: string;
  readonly timeoutMs: number;
  readonly deleteAll: boolean;
  readonly deleteCrds: boolean;
  readonly deleteOperatorGroups: boolean;
}

/** The package's Subscriptions, their CSVs and the CRDs those own. */
async function installedPackage(c: Cluster, namespace: string, pkg: string): Promise<{ subs: Obj[]; csvs: string[]; crds: string[] }> {
  const subs = (await c.list(olmResource('subscriptions', namespace))).filter((s) => s.spec?.name === pkg);
  const csvs = [
    ...new Set(subs.flatMap((s) => [s.status?.installedCSV, s.status?.currentCSV]).filter((n): n is string => n !== undefined)),
  ];
  const crds: string[] = [];
  for (const name of csvs) {
    const csv = await c.get(olmResource('clusterserviceversions', namespace), name);
    const spec = csv?.spec as { customresourcedefinitions?: { owned?: { name: string }[] } } | undefined;
    crds.push(...(spec?.customresourcedefinitions?.owned ?? []).map((d) => d.name));
  }
  return { subs, csvs, crds: [...new Set(crds)] };
}

async function deleteAll(
  c: Cluster,
  what: { ref: ResourceRef; kind: string },
  names: readonly string[],
  log: (line: string) => void,
): Promise<void> {
  for (const name of names) if (await c.delete(what.ref, name)) log(`${what.kind} ${name} deleted`);
}

/**
 * Deletes the InstallPlans that install `csvs`, before the CSVs and CRDs: until the garbage collector
 * removes them after their Subscription, OLM's catalog operator may apply one again and create the
 * CSV and its CRDs anew after they were deleted.
 */
async function deleteInstallPlans(c: Cluster, namespace: string, csvs: readonly string[], log: (line: string) => void): Promise<void> {
  const ref = olmResource('installplans', namespace);
  const installs = (p: Obj): readonly string[] =>
    (p.spec as { clusterServiceVersionNames?: string[] } | undefined)?.clusterServiceVersionNames ?? [];
  const plans = (await c.list(ref)).filter((p) => installs(p).some((n) => csvs.includes(n)));
  await deleteAll(c, { ref, kind: 'installplan' }, plans.map(nameOf), log);
}

/**
 * How long nothing of the package may come back before cleanup counts it gone: OLM's catalog
 * operator can apply an InstallPlan once more from its cache after every object was deleted.
 */
const SETTLED_MS = 5_000;

/**
 * Waits until `csvs` are gone and have stayed gone for SETTLED_MS; throws naming those still there
 * at the timeout, and what holds them. OLM's catalog operator can apply an InstallPlan once more
 * before it sees its Subscription gone, creating a CSV and its CRDs again after they were deleted
 * (even after cleanup had seen them gone, in one CI run): whatever is back and not being deleted (a
 * CSV, or one of `crds`) is deleted again, and the quiet period starts over.
 */
async function csvsGone(
  c: Cluster,
  w: { namespace: string; csvs: readonly string[]; crds: readonly string[]; timeoutMs: number },
): Promise<void> {
  const { namespace, csvs, crds, timeoutMs } = w;
  const csvRef = olmResource('clusterserviceversions', namespace);
  /** The object when it is there; deleted again when it came back (it is there and not being deleted). */
  const back = async (ref: ResourceRef, name: string): Promise<{ there: Obj | undefined; recreated: boolean }> => {
    const o = await c.get(ref, name);
    const recreated = o !== undefined && o.metadata?.deletionTimestamp === undefined;
    if (recreated) await c.delete(ref, name);
    return { there: o, recreated };
  };
  let left: Obj[] = [];
  let lastSeen = Date.now();
  await poll(async () => {
    const found = await Promise.all(csvs.map((name) => back(csvRef, name)));
    left = found.flatMap((f) => (f.there === undefined ? [] : [f.there]));
    const crdsBack = (await Promise.all(crds.map((name) => back(CRDS, name)))).some((f) => f.recreated);
    if (left.length > 0 || crdsBack) lastSeen = Date.now();
    return left.length === 0 && Date.now() - lastSeen >= SETTLED_MS ? true : undefined;
  }, timeoutMs);
  if (left.length === 0) return;
  const local = c.runsPods().then((pods) => (pods ? undefined : logFile(clusterStateDir(c.server), 'olm-operator')));
  throw new OlmError(csvsNotGoneMessage(left, timeoutMs, await local));
}

export async function cleanup(c: Cluster, pkg: string, o: CleanupOptions, log: (line: string) => void): Promise<string> {
  const namespace = o.namespace ?? c.namespace;
  const { subs, csvs, crds } = await installedPackage(c, namespace, pkg);
  const catalogs = await c.list(olmResource('catalogsources', namespace), packageSelector(pkg));
  const dir = catalogDir(c, namespace, pkg);
  if (subs.length === 0 && catalogs.length === 0 && (await runningPid(dir, 'catalog-serve')) === undefined) {
    throw new OlmError(
      `no operator with package name ${pkg} found in namespace ${namespace} (no Subscription for it): nothing to clean up`,
    );
  }
  await deleteAll(c, { ref: olmResource('subscriptions', namespace), kind: 'subscription' }, subs.map(nameOf), log);
  await deleteInstallPlans(c, namespace, csvs, log);
  await deleteAll(c, { ref: olmResource('clusterserviceversions', namespace), kind: 'clusterserviceversion' }, csvs, log);
  await deleteAll(c, { ref: olmResource('catalogsources', namespace), kind: 'catalogsource' }, catalogs.map(nameOf), log);
  if (await stopProcess(dir, 'catalog-serve')) log('catalog-serve stopped');
  await deleteRegistryPods(c, { namespace, selector: packageSelector(pkg), timeoutMs: o.timeoutMs }, log);
  await rm(dir, { recursive: true, force: true });
  const crdsToo = o.deleteAll || o.deleteCrds;
  if (crdsToo) await deleteAll(c, { ref: CRDS, kind: 'customresourcedefinition (and its custom resources)' }, crds, log);
  // The OperatorGroup run bundle created, once no other Subscription in the namespace needs it.
  if ((o.deleteAll || o.deleteOperatorGroups) && (await c.list(olmResource('subscriptions', namespace))).length === 0) {
    await deleteAll(c, { ref: olmResource('operatorgroups', namespace, 'v1'), kind: 'operatorgroup' }, [OPERATOR_GROUP], log);
  }
  await csvsGone(c, { namespace, csvs, crds: crdsToo ? crds : [], timeoutMs: o.timeoutMs });
  return `operator "${pkg}" uninstalled`;
}

/**
 * Why cleanup gave up: each CSV still there, and what holds it. OLM's olm-operator removes its
 * `csv-cleanup` finalizer only after the cluster roles and bindings it made for the CSV are gone.
 */
export function csvsNotGoneMessage(left: readonly Obj[], timeoutMs: number, olmOperatorLog: string | undefined): string {
  const lines = left.map((csv) => {
    const finalizers = csv.metadata?.finalizers ?? [];
    const state =
      csv.metadata?.deletionTimestamp === undefined ? 'not being deleted' : `being deleted since ${String(csv.metadata.deletionTimestamp)}`;
    return `  ${csv.metadata?.name ?? '?'}: ${state}${finalizers.length > 0 ? `, held by finalizer ${finalizers.join(', ')}` : ''}`;
  });
  const holder = left.some((csv) => csv.metadata?.finalizers?.some((f) => f.startsWith('operators.coreos.com/')))
    ? `\nOLM's olm-operator removes its finalizer once the CSV's cluster roles and bindings are gone${olmOperatorLog === undefined ? '' : `; its log: ${olmOperatorLog}`}. Run cleanup again to wait longer (--timeout).`
    : '';
  return `ClusterServiceVersions were not gone within ${timeoutMs / 1000}s:\n${lines.join('\n')}${holder}`;
}
