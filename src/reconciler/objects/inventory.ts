/**
 * The objects a release created, as kept in the CR's status instead of the whole rendered manifest
 * (which can exceed the object size limit and would expose rendered Secrets to CR readers).
 */
import { readHelmYamlStream } from '../../config/helm-yaml.js';
import { isPlainObject } from '../../util/plain-object.js';

export interface InventoryEntry {
  readonly apiVersion: string;
  readonly kind: string;
  /** Empty for cluster-scoped objects. */
  readonly namespace: string;
  readonly name: string;
}

export interface ManifestObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  readonly annotations: Readonly<Record<string, string>>;
  /**
   * The whole object as rendered, serialised ({@link renderedBody} parses a copy). The reconciler
   * keeps every CR's deployed manifest: as one flat JSON string per object it takes a fraction of
   * the parsed tree's memory, and the apply that restores it sends this same JSON.
   */
  readonly json: string;
}

/** A fresh, mutable copy of the rendered object. */
export const renderedBody = (o: ManifestObject): Record<string, unknown> => JSON.parse(o.json) as Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function toObject(doc: unknown): ManifestObject[] {
  if (!isPlainObject(doc)) return [];
  const apiVersion = str(doc.apiVersion);
  const kind = str(doc.kind);
  if (apiVersion === undefined || kind === undefined) return [];
  // Any document with `items` is a list to helm, whatever its kind (apimachinery's unstructured
  // decoder looks for the field, not the name): its objects are what gets applied.
  if (doc.items !== undefined && doc.items !== null) return Array.isArray(doc.items) ? doc.items.flatMap(toObject) : [];
  const meta = isPlainObject(doc.metadata) ? doc.metadata : {};
  const name = str(meta.name);
  if (name === undefined) return [];
  const annotations = isPlainObject(meta.annotations)
    ? Object.fromEntries(Object.entries(meta.annotations).filter((e): e is [string, string] => typeof e[1] === 'string'))
    : {};
  const namespace = str(meta.namespace);
  return [{ apiVersion, kind, name, ...(namespace === undefined ? {} : { namespace }), annotations, json: JSON.stringify(doc) }];
}

/**
 * Pure: the objects of a rendered multi-document manifest, in order, read as helm reads them
 * (YAML 1.1: `defaultMode: 0400` is 256, which is what helm sent to the API server). Each document
 * goes through JSON first: the YAML parser's strings are slices of the manifest text, and one kept
 * name or annotation would keep the whole text alive as long as the reconciler keeps the object.
 */
export function parseManifest(manifest: string): ManifestObject[] {
  return readHelmYamlStream(manifest, MANIFEST_READ).flatMap((d) => toObject(viaJson(d)));
}

/**
 * A manifest is helm's own output, read by helm with go-yaml v2, which takes any number of aliases
 * in a document of up to 400,000 decoded nodes (and fewer in larger ones): a reader stopping at 100
 * aliases would drop a document helm applied and hide its objects from the inventory and the
 * confinement check. Expansion is bounded by nodes instead: 2,000,000 nodes are more than 3 MiB of
 * JSON, beyond the API server's request limit, so no object that could be created is dropped.
 */
export const MANIFEST_READ = { maxAliasCount: -1, maxNodes: 2_000_000 } as const;

function viaJson(value: unknown): unknown {
  const json = JSON.stringify(value) as string | undefined;
  return json === undefined ? undefined : JSON.parse(json);
}

/**
 * The inventory of a manifest. An object without a namespace lands in the release namespace when
 * its kind is namespaced (as helm applies it) and stays cluster-wide otherwise.
 */
export async function inventoryOf(
  objects: readonly ManifestObject[],
  releaseNamespace: string,
  isNamespaced: (apiVersion: string, kind: string) => Promise<boolean>,
): Promise<InventoryEntry[]> {
  const entries: InventoryEntry[] = [];
  for (const o of objects) {
    const namespace = (await isNamespaced(o.apiVersion, o.kind)) ? (o.namespace ?? releaseNamespace) : '';
    entries.push({ apiVersion: o.apiVersion, kind: o.kind, namespace, name: o.name });
  }
  return entries;
}
