/**
 * What a chart creates, for its RBAC rules: the objects `helm template` renders with the default
 * values and with each `--values` file (CRDs of `crds/` included), and how each kind maps to a
 * resource: through the cluster's discovery when one answers, else through the built-in table.
 */
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { readHelmYamlStream } from '../config/helm-yaml.js';
import { HelmError, type HelmClient } from '../helm/index.js';
import { NoKindMatchError, parseApiVersion, RestMapper } from '../k8s/restmapper.js';
import type { RenderedObject, ResourceInfo } from './ports.js';

export class ChartRenderError extends Error {
  override readonly name = 'ChartRenderError';
}

function refsOf(doc: unknown): RenderedObject[] {
  if (typeof doc !== 'object' || doc === null) return [];
  const o = doc as { apiVersion?: unknown; kind?: unknown; metadata?: { namespace?: unknown; name?: unknown }; items?: unknown; rules?: unknown; roleRef?: unknown };
  if (typeof o.apiVersion !== 'string' || typeof o.kind !== 'string') return [];
  if (o.kind.endsWith('List') && Array.isArray(o.items)) return o.items.flatMap(refsOf);
  const { namespace, name } = o.metadata ?? {};
  return [
    {
      apiVersion: o.apiVersion,
      kind: o.kind,
      ...(typeof namespace === 'string' ? { namespace } : {}),
      ...(typeof name === 'string' ? { name } : {}),
      ...(o.rules === undefined ? {} : { rules: o.rules }),
      ...(o.roleRef === undefined ? {} : { roleRef: o.roleRef }),
    },
  ];
}

/** The objects of a rendered manifest stream (documents that are not objects are skipped). */
export function objectsOfManifest(manifest: string): RenderedObject[] {
  return readHelmYamlStream(manifest).flatMap((d) => refsOf(d));
}

/** Renders `chartDir` with its defaults, then with each values file; the union of the objects. */
export async function renderedObjects(helm: HelmClient, chartDir: string, valuesFiles: readonly string[]): Promise<RenderedObject[]> {
  const sets: (readonly string[])[] = [[], ...valuesFiles.map((f) => [path.resolve(f)])];
  const all: RenderedObject[] = [];
  for (const files of sets) {
    try {
      const manifest = await helm.template({ release: 'release-name', namespace: 'default', chart: chartDir, values: {}, includeCrds: true, extraValuesFiles: files });
      all.push(...objectsOfManifest(manifest));
    } catch (err) {
      if (!(err instanceof HelmError)) throw err;
      const which = files.length === 0 ? 'its default values' : files.join(', ');
      throw new ChartRenderError(`helm template of ${path.basename(chartDir)} with ${which} failed: ${err.summary}`);
    }
  }
  const seen = new Set<string>();
  return all.filter((o) => {
    const key = JSON.stringify(o);
    return seen.has(key) ? false : (seen.add(key), true);
  });
}

export interface KindResolution {
  readonly resolve: (apiVersion: string, kind: string) => ResourceInfo | undefined;
  /** How kinds were mapped, for the RBAC comment and the CLI's report. */
  readonly via: string;
}

const DISCOVERY_TIMEOUT_MS = 10_000;

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => { reject(new Error(`no answer within ${ms} ms`)); }, ms);
    p.then(
      (v) => { clearTimeout(t); resolve(v); },
      (e: unknown) => { clearTimeout(t); reject(e instanceof Error ? e : new Error(String(e))); },
    );
  });
}

/**
 * Maps every kind of `objects` up front (rulesForObjects wants a synchronous lookup): discovery
 * first when `kc` is given and the cluster answers, the built-in table for the rest.
 */
export async function resolveKinds(
  objects: readonly RenderedObject[],
  kc: KubeConfig | undefined,
  builtin: (apiVersion: string, kind: string) => ResourceInfo | undefined,
): Promise<KindResolution> {
  const found = new Map<string, ResourceInfo>();
  const key = (apiVersion: string, kind: string): string => `${apiVersion}\0${kind}`;
  let via = 'the built-in table of Kubernetes kinds (no cluster answered)';
  if (kc !== undefined) {
    try {
      await discoverAll(new RestMapper(kc), objects, found, key);
      via = "the cluster's API discovery";
    } catch (err) {
      via = `the built-in table of Kubernetes kinds (discovery failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)})`;
    }
  }
  return { resolve: (apiVersion, kind) => found.get(key(apiVersion, kind)) ?? builtin(apiVersion, kind), via };
}

async function discoverAll(
  mapper: RestMapper,
  objects: readonly RenderedObject[],
  found: Map<string, ResourceInfo>,
  key: (apiVersion: string, kind: string) => string,
): Promise<void> {
  for (const o of objects) {
    if (found.has(key(o.apiVersion, o.kind))) continue;
    const info = await withTimeout(mapOne(mapper, o), DISCOVERY_TIMEOUT_MS);
    if (info !== undefined) found.set(key(o.apiVersion, o.kind), info);
  }
}

async function mapOne(mapper: RestMapper, o: RenderedObject): Promise<ResourceInfo | undefined> {
  const { group, version } = parseApiVersion(o.apiVersion);
  try {
    const m = await mapper.mapping({ group, version, kind: o.kind });
    return { group, resource: m.plural, namespaced: m.namespaced };
  } catch (err) {
    if (err instanceof NoKindMatchError) return undefined;
    throw err;
  }
}
