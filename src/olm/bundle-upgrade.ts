/**
 * `helm-operator run bundle-upgrade <image | directory>`, as operator-sdk's: upgrade an operator
 * that `run bundle` installed. The package's Subscription names the installed CSV and the
 * CatalogSource; the catalog `run bundle` serves from this machine gets the new bundle in the same
 * channel with an edge from the installed CSV (`replaces`), is served again, and the CatalogSource
 * points at it. OLM's own resolver then upgrades the Subscription: an InstallPlan installs the new
 * CSV, which replaces the old one. On a cluster whose nodes run containers the catalog is in a
 * registry pod (docs/adr/0064): a new one serves it with the new bundle and the old one goes.
 * See docs/adr/0057-chart-updates-and-bundle-upgrades.md.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import {
  bundleSource,
  catalogDir,
  catalogSourceName,
  catalogSourceObject,
  packageSelector,
  registryPod,
  renderBundle,
  requireOlm,
  serveCatalog,
  waitForCsv,
  writeCatalog,
  type RenderedBundle,
  type RunBundleOptions,
} from './bundle.js';
import { olmResource, poll, type Cluster, type Obj } from './cluster.js';
import { OlmError } from './errors.js';
import { deleteRegistryPods, ownByCatalogSource, servingRegistryPod, startRegistryPod } from './registry-pod.js';
import { olmTools, type OlmTools } from './tools.js';

type Doc = Record<string, unknown>;
interface ChannelEntry {
  name: string;
  replaces?: string;
}

/**
 * Pure: the catalog `run bundle` wrote (its documents), with `bundle` added to every channel as
 * the upgrade from `installed`, and its olm.bundle blob beside the others.
 * @throws OlmError when the catalog is not the package's or does not hold `installed`.
 */
export function upgradedCatalog(
  docs: readonly Doc[],
  bundle: Pick<RenderedBundle, 'name' | 'packageName' | 'blob'>,
  installed: string,
): string {
  const channels = docs.filter((d) => d.schema === 'olm.channel' && d.package === bundle.packageName);
  const bundles = docs.filter((d) => d.schema === 'olm.bundle');
  if (channels.length === 0)
    throw new OlmError(
      `the catalog run bundle wrote has no channel of package ${bundle.packageName}: run cleanup ${bundle.packageName}, then run bundle`,
    );
  if (!bundles.some((b) => b.name === installed))
    throw new OlmError(
      `the catalog run bundle wrote does not hold the installed ${installed}: run cleanup ${bundle.packageName}, then run bundle`,
    );
  const upgraded = docs
    .filter((d) => !(d.schema === 'olm.bundle' && d.name === bundle.name))
    .map((d) => {
      if (!channels.includes(d)) return d;
      const entries = ((d.entries ?? []) as ChannelEntry[]).filter((e) => e.name !== bundle.name);
      return { ...d, entries: [...entries, { name: bundle.name, replaces: installed }] };
    });
  return [...upgraded, bundle.blob].map((d) => `---\n${stringify(d)}`).join('');
}

/**
 * How long a Subscription may take to name the CSV it installed: OLM writes `installedCSV` in a
 * later sync than the one that sees the CSV succeed, so a bundle-upgrade run right after run bundle
 * may find it unset for a few seconds.
 */
const INSTALLED_CSV_WAIT_MS = 60_000;

/** The package's Subscription in `namespace` and the CSV it has installed. */
async function subscriptionOf(c: Cluster, namespace: string, pkg: string, timeoutMs: number): Promise<{ sub: Obj; installed: string }> {
  const subscriptions = async (): Promise<Obj[]> =>
    (await c.list(olmResource('subscriptions', namespace))).filter((s) => s.spec?.name === pkg);
  const subs = await subscriptions();
  const [first] = subs;
  if (first === undefined)
    throw new OlmError(
      `no existing operator with package name ${pkg} found in namespace ${namespace} (no Subscription for it): install it with helm-operator run bundle first`,
    );
  if (subs.length > 1)
    throw new OlmError(
      `${subs.length} Subscriptions for package ${pkg} in namespace ${namespace}: run bundle-upgrade upgrades exactly one`,
    );
  const sub =
    first.status?.installedCSV !== undefined
      ? first
      : ((await poll(
          async () => (await subscriptions()).find((s) => s.status?.installedCSV !== undefined),
          Math.min(timeoutMs, INSTALLED_CSV_WAIT_MS),
        )) ?? first);
  const installed = sub.status?.installedCSV;
  if (installed === undefined)
    throw new OlmError(
      `Subscription ${namespace}/${sub.metadata?.name ?? ''} has installed no CSV yet: wait for run bundle to succeed (or run cleanup ${pkg})`,
    );
  return { sub, installed };
}

const parseCatalog = (text: string): Doc[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as Doc | null)
    .filter((d): d is Doc => d !== null);

/**
 * The registry pod of the upgrade (pure): named after the new bundle, beside the one `run bundle`
 * started, since a pod cannot be changed and the old one serves until the CatalogSource moves.
 */
export function upgradeRegistryName(pkg: string, bundleName: string): string {
  const version = bundleName.startsWith(`${pkg}.`) ? bundleName.slice(pkg.length + 1) : bundleName;
  return `${catalogSourceName(pkg)}-${version.toLowerCase().replace(/[^a-z0-9.-]+/g, '-')}`.slice(0, 253).replace(/[^a-z0-9]+$/, '');
}

interface Upgrade {
  readonly tools: OlmTools;
  readonly dir: string;
  readonly namespace: string;
  readonly bundle: RenderedBundle;
  readonly installed: string;
  readonly timeoutMs: number;
}

const upgradedCatalogFile = (u: Upgrade, docs: readonly Doc[]): Promise<string> =>
  writeCatalog(u.tools, u.dir, {
    pkg: u.bundle.packageName,
    yaml: upgradedCatalog(docs, u.bundle, u.installed),
    what: `the catalog with ${u.bundle.name}`,
  });

/** Nodes that run no containers: the catalog catalog-serve serves on this machine, with the new bundle, served again. */
async function upgradeServedCatalog(c: Cluster, u: Upgrade, log: (line: string) => void): Promise<void> {
  const pkg = u.bundle.packageName;
  const file = path.join(u.dir, 'catalog', pkg, 'catalog.yaml');
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined)
    throw new OlmError(
      `package ${pkg} was not installed by helm-operator run bundle on this machine (no catalog at ${file}): run bundle-upgrade upgrades what run bundle installed`,
    );
  await upgradedCatalogFile(u, parseCatalog(text));
  const address = await serveCatalog(u.tools, u.dir, u.timeoutMs);
  log(`serving the catalog with ${u.bundle.name} (replacing ${u.installed}) on ${address}`);
  // catalog-serve listens on a new port: the CatalogSource follows it, OLM reconnects, finds the new bundle and resolves the upgrade.
  await c.apply(catalogSourceObject(pkg, u.namespace, address));
}

/**
 * Nodes that run containers, as operator-sdk: a new registry pod (of the old one's image) serves the
 * catalog the old one served plus the new bundle; the CatalogSource names its address and owns it;
 * the old pod and its ConfigMap are deleted.
 */
async function upgradeRegistryPod(c: Cluster, u: Upgrade, log: (line: string) => void): Promise<void> {
  const pkg = u.bundle.packageName;
  const name = catalogSourceName(pkg);
  const address = (await c.get(olmResource('catalogsources', u.namespace), name))?.spec?.address as string | undefined;
  const serving =
    address === undefined ? undefined : await servingRegistryPod(c, { namespace: u.namespace, selector: packageSelector(pkg), address });
  if (serving === undefined) {
    throw new OlmError(
      `package ${pkg} has no registry pod of run bundle serving CatalogSource ${u.namespace}/${name}${address === undefined ? '' : ` at ${address}`}: run bundle-upgrade upgrades what run bundle installed (run cleanup ${pkg}, then run bundle)`,
    );
  }
  const registry = registryPod(u.bundle, {
    namespace: u.namespace,
    catalog: await upgradedCatalogFile(u, parseCatalog(serving.catalog)),
    opmImage: serving.opmImage,
    name: upgradeRegistryName(pkg, u.bundle.name),
  });
  const next = await startRegistryPod(c, registry, u.timeoutMs, log);
  log(`registry pod ${u.namespace}/${registry.name} serves the catalog with ${u.bundle.name} (replacing ${u.installed}) on ${next}`);
  await c.apply(catalogSourceObject(pkg, u.namespace, next));
  const source = await c.get(olmResource('catalogsources', u.namespace), name);
  if (source !== undefined) await ownByCatalogSource(c, registry, source);
  await deleteRegistryPods(
    c,
    { namespace: u.namespace, selector: packageSelector(pkg), timeoutMs: u.timeoutMs, except: registry.name },
    log,
  );
}

export async function runBundleUpgrade(
  c: Cluster,
  ref: string,
  o: Omit<RunBundleOptions, 'installMode'>,
  log: (line: string) => void,
): Promise<string> {
  const source = bundleSource(ref);
  const namespace = o.namespace ?? c.namespace;
  await requireOlm(c);
  const tools = await olmTools();
  const bundle = await renderBundle(tools.opm, source, o);
  const { sub, installed } = await subscriptionOf(c, namespace, bundle.packageName, o.timeoutMs);
  log(`found Subscription ${sub.metadata?.name ?? ''} in namespace ${namespace}, which installed ${installed}`);
  if (installed === bundle.name)
    throw new OlmError(
      `${bundle.name} is already installed in namespace ${namespace}: run bundle-upgrade takes a bundle of a newer version (make bundle VERSION=<next>)`,
    );

  const upgrade: Upgrade = {
    tools,
    dir: catalogDir(c, namespace, bundle.packageName),
    namespace,
    bundle,
    installed,
    timeoutMs: o.timeoutMs,
  };
  await ((await c.runsPods()) ? upgradeRegistryPod : upgradeServedCatalog)(c, upgrade, log);
  log(
    `updated CatalogSource ${catalogSourceName(bundle.packageName)}; waiting for ClusterServiceVersion ${namespace}/${bundle.name} to succeed`,
  );
  await waitForCsv(c, namespace, bundle.name, o.timeoutMs);
  return `Successfully upgraded to "${bundle.name}"`;
}
