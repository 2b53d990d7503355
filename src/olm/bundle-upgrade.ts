/**
 * `helm-operator run bundle-upgrade <image | directory>`, as operator-sdk's: upgrade an operator
 * that `run bundle` installed. The package's Subscription names the installed CSV and the
 * CatalogSource; the catalog `run bundle` serves from this machine gets the new bundle in the same
 * channel with an edge from the installed CSV (`replaces`), is served again, and the CatalogSource
 * points at it. OLM's own resolver then upgrades the Subscription: an InstallPlan installs the new
 * CSV, which replaces the old one. See docs/adr/0057-chart-updates-and-bundle-upgrades.md.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { parseAllDocuments, stringify } from 'yaml';
import { bundleSource, catalogDir, catalogSourceName, catalogSourceObject, renderBundle, requireOlm, serveCatalog, waitForCsv, type RenderedBundle, type RunBundleOptions } from './bundle.js';
import { olmResource, type Cluster, type Obj } from './cluster.js';
import { OlmError } from './errors.js';
import { olmTools } from './tools.js';

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
export function upgradedCatalog(docs: readonly Doc[], bundle: Pick<RenderedBundle, 'name' | 'packageName' | 'blob'>, installed: string): string {
  const channels = docs.filter((d) => d.schema === 'olm.channel' && d.package === bundle.packageName);
  const bundles = docs.filter((d) => d.schema === 'olm.bundle');
  if (channels.length === 0) throw new OlmError(`the catalog run bundle wrote has no channel of package ${bundle.packageName}: run cleanup ${bundle.packageName}, then run bundle`);
  if (!bundles.some((b) => b.name === installed)) throw new OlmError(`the catalog run bundle wrote does not hold the installed ${installed}: run cleanup ${bundle.packageName}, then run bundle`);
  const upgraded = docs
    .filter((d) => !(d.schema === 'olm.bundle' && d.name === bundle.name))
    .map((d) => {
      if (!channels.includes(d)) return d;
      const entries = ((d.entries ?? []) as ChannelEntry[]).filter((e) => e.name !== bundle.name);
      return { ...d, entries: [...entries, { name: bundle.name, replaces: installed }] };
    });
  return [...upgraded, bundle.blob].map((d) => `---\n${stringify(d)}`).join('');
}

/** The package's Subscription in `namespace` and the CSV it has installed. */
async function subscriptionOf(c: Cluster, namespace: string, pkg: string): Promise<{ sub: Obj; installed: string }> {
  const subs = (await c.list(olmResource('subscriptions', namespace))).filter((s) => s.spec?.name === pkg);
  const [sub] = subs;
  if (sub === undefined) throw new OlmError(`no existing operator with package name ${pkg} found in namespace ${namespace} (no Subscription for it): install it with helm-operator run bundle first`);
  if (subs.length > 1) throw new OlmError(`${subs.length} Subscriptions for package ${pkg} in namespace ${namespace}: run bundle-upgrade upgrades exactly one`);
  const installed = sub.status?.installedCSV;
  if (installed === undefined) throw new OlmError(`Subscription ${namespace}/${sub.metadata?.name ?? ''} has installed no CSV yet: wait for run bundle to succeed (or run cleanup ${pkg})`);
  return { sub, installed };
}

async function readCatalog(file: string, pkg: string): Promise<Doc[]> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) throw new OlmError(`package ${pkg} was not installed by helm-operator run bundle on this machine (no catalog at ${file}): run bundle-upgrade upgrades what run bundle installed`);
  return parseAllDocuments(text).map((d) => d.toJS() as Doc | null).filter((d): d is Doc => d !== null);
}

export async function runBundleUpgrade(c: Cluster, ref: string, o: Omit<RunBundleOptions, 'installMode'>, log: (line: string) => void): Promise<string> {
  const source = bundleSource(ref);
  const namespace = o.namespace ?? c.namespace;
  await requireOlm(c);
  if (await c.runsPods()) throw new OlmError("run bundle-upgrade on a cluster whose nodes run containers is not implemented yet (run bundle's catalog is in a registry pod there): cleanup, then run bundle the newer bundle");
  const tools = await olmTools();
  const bundle = await renderBundle(tools.opm, source, o);
  const { sub, installed } = await subscriptionOf(c, namespace, bundle.packageName);
  log(`found Subscription ${sub.metadata?.name ?? ''} in namespace ${namespace}, which installed ${installed}`);
  if (installed === bundle.name) throw new OlmError(`${bundle.name} is already installed in namespace ${namespace}: run bundle-upgrade takes a bundle of a newer version (make bundle VERSION=<next>)`);

  const dir = catalogDir(c, namespace, bundle.packageName);
  const file = path.join(dir, 'catalog', bundle.packageName, 'catalog.yaml');
  await writeFile(file, upgradedCatalog(await readCatalog(file, bundle.packageName), bundle, installed));
  const valid = await execa(tools.opm, ['validate', path.join(dir, 'catalog')], { reject: false });
  if (valid.exitCode !== 0) throw new OlmError(`the catalog with ${bundle.name} is not valid (opm validate): ${valid.stderr.trim()}`);
  const address = await serveCatalog(tools, dir, o.timeoutMs);
  log(`serving the catalog with ${bundle.name} (replacing ${installed}) on ${address}`);

  // catalog-serve listens on a new port: the CatalogSource follows it, OLM reconnects, finds the new bundle and resolves the upgrade.
  await c.apply(catalogSourceObject(bundle.packageName, namespace, address));
  log(`updated CatalogSource ${catalogSourceName(bundle.packageName)}; waiting for ClusterServiceVersion ${namespace}/${bundle.name} to succeed`);
  await waitForCsv(c, namespace, bundle.name, o.timeoutMs);
  return `Successfully upgraded to "${bundle.name}"`;
}
