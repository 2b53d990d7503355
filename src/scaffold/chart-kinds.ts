/**
 * What a chart creates, for its RBAC rules: the objects `helm template` renders with the default
 * values and with each `--values` file (CRDs of `crds/` included), and how each kind maps to a
 * resource: the built-in table, the chart's own CRDs, then the cluster's discovery when one answers.
 */
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { readHelmYamlStream } from '../config/helm-yaml.js';
import type { ChartHelm } from '../helm/chart-helm.js';
import { HelmError } from '../helm/errors.js';
import { NoKindMatchError, RestMapper } from '../k8s/restmapper.js';
import { groupOf, parseApiVersion } from '../util/group-kind.js';
import type { RenderedObject, ResourceInfo } from './ports.js';

export class ChartRenderError extends Error {
  override readonly name = 'ChartRenderError';
}

interface RawObject {
  apiVersion?: unknown;
  kind?: unknown;
  metadata?: { namespace?: unknown; name?: unknown };
  items?: unknown;
  rules?: unknown;
  roleRef?: unknown;
  spec?: { group?: unknown; scope?: unknown; names?: { kind?: unknown; plural?: unknown } };
}

/** What a rendered CustomResourceDefinition defines, when it says so completely. */
function definedKind(o: RawObject): RenderedObject['defines'] {
  if (o.kind !== 'CustomResourceDefinition') return undefined;
  const { group, scope, names } = o.spec ?? {};
  if (typeof group !== 'string' || typeof names?.kind !== 'string' || typeof names.plural !== 'string') return undefined;
  return { group, kind: names.kind, resource: names.plural, namespaced: scope !== 'Cluster' };
}

function refsOf(doc: unknown): RenderedObject[] {
  if (typeof doc !== 'object' || doc === null) return [];
  const o = doc as RawObject;
  if (typeof o.apiVersion !== 'string' || typeof o.kind !== 'string') return [];
  if (o.kind.endsWith('List') && Array.isArray(o.items)) return o.items.flatMap(refsOf);
  const { namespace, name } = o.metadata ?? {};
  const defines = definedKind(o);
  const present = <K extends string, V>(k: K, v: V | undefined): Partial<Record<K, V>> =>
    v === undefined ? {} : ({ [k]: v } as Record<K, V>);
  return [
    {
      apiVersion: o.apiVersion,
      kind: o.kind,
      ...present('namespace', typeof namespace === 'string' ? namespace : undefined),
      ...present('name', typeof name === 'string' ? name : undefined),
      ...present('rules', o.rules),
      ...present('roleRef', o.roleRef),
      ...present('defines', defines),
    },
  ];
}

/** The objects of a rendered manifest stream (documents that are not objects are skipped). */
export function objectsOfManifest(manifest: string): RenderedObject[] {
  return readHelmYamlStream(manifest).flatMap((d) => refsOf(d));
}

/** The objects of one `helm template` of `chartDir` (CRDs included), `values` over its defaults, then `valuesFiles`. */
export async function renderWith(
  helm: ChartHelm,
  chartDir: string,
  values: Record<string, unknown>,
  valuesFiles: readonly string[] = [],
): Promise<RenderedObject[]> {
  const manifest = await helm.template({
    release: 'release-name',
    namespace: 'default',
    chart: chartDir,
    values,
    includeCrds: true,
    extraValuesFiles: valuesFiles,
  });
  return objectsOfManifest(manifest);
}

/** Renders `chartDir` with its defaults, then with each values file; the union of the objects. */
export async function renderedObjects(helm: ChartHelm, chartDir: string, valuesFiles: readonly string[]): Promise<RenderedObject[]> {
  const sets: (readonly string[])[] = [[], ...valuesFiles.map((f) => [path.resolve(f)])];
  const all: RenderedObject[] = [];
  for (const files of sets) {
    try {
      all.push(...(await renderWith(helm, chartDir, {}, files)));
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
  /** How kinds were mapped, for the CLI's report (never for a generated file: it differs by machine). */
  readonly via: string;
}

const DISCOVERY_TIMEOUT_MS = 10_000;

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      reject(new Error(`no answer within ${ms} ms`));
    }, ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

const key = (apiVersion: string, kind: string): string => `${apiVersion}\0${kind}`;

/** Pure: the kinds the chart's own CRDs define, for every version of their group. */
function chartDefinitions(objects: readonly RenderedObject[]): (apiVersion: string, kind: string) => ResourceInfo | undefined {
  const byGroupKind = new Map<string, ResourceInfo>();
  for (const o of objects)
    if (o.defines !== undefined)
      byGroupKind.set(`${o.defines.group}\0${o.defines.kind}`, {
        group: o.defines.group,
        resource: o.defines.resource,
        namespaced: o.defines.namespaced,
      });
  return (apiVersion, kind) => byGroupKind.get(`${groupOf(apiVersion)}\0${kind}`);
}

/**
 * Maps every kind of `objects` up front (rulesForObjects wants a synchronous lookup). What the
 * generated role says must not depend on the machine (a re-run with a cluster changes nothing), so
 * the built-in table and the chart's own CRDs come first; the cluster's discovery, when `kc` is
 * given and it answers, maps only kinds neither knows (a ServiceMonitor, another operator's CRD).
 */
export async function resolveKinds(
  objects: readonly RenderedObject[],
  kc: KubeConfig | undefined,
  builtin: (apiVersion: string, kind: string) => ResourceInfo | undefined,
): Promise<KindResolution> {
  const defined = chartDefinitions(objects);
  const local = (apiVersion: string, kind: string): ResourceInfo | undefined => builtin(apiVersion, kind) ?? defined(apiVersion, kind);
  const rest = objects.filter((o) => local(o.apiVersion, o.kind) === undefined);
  const found = new Map<string, ResourceInfo>();
  let via = "the built-in table of Kubernetes kinds and the chart's CRDs";
  if (rest.length > 0 && kc === undefined) via += ' (no cluster to ask about the others)';
  if (rest.length > 0 && kc !== undefined) {
    try {
      await discoverAll(new RestMapper(kc), rest, found);
      via += ", the others by the cluster's API discovery";
    } catch (err) {
      via += ` (discovery of the others failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)})`;
    }
  }
  return { resolve: (apiVersion, kind) => local(apiVersion, kind) ?? found.get(key(apiVersion, kind)), via };
}

async function discoverAll(mapper: RestMapper, objects: readonly RenderedObject[], found: Map<string, ResourceInfo>): Promise<void> {
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
