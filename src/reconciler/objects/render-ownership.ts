/**
 * The CR's ownership put into a release's objects as helm renders them (ADR 0060): run as helm's
 * post-renderer, so helm creates each object with the chart label and its owner reference (or the
 * owner annotations) and no PATCH per object follows the install, as operator-sdk's post-renderer
 * does.
 *
 * A chart is untrusted input here: only a document read as helm reads it (helm-yaml.ts) into one
 * plain object with a name, no `items` list, no owner references of its own, and labels and
 * annotations that are maps of strings, of a kind the API server serves, is rewritten (as JSON, the
 * object exactly as read, plus the metadata). Every other document passes through byte for byte;
 * the objects it makes get their ownership after the install, with a PATCH, as before.
 */
import { readHelmYaml, splitHelmStream } from '../../config/helm-yaml.js';
import { isPlainObject } from '../../util/plain-object.js';
import { MANIFEST_READ } from './inventory.js';
import { renderedOwnership, type Owner } from './ownership.js';

export interface StampContext {
  readonly owner: Owner;
  readonly chartName: string;
  /** The release's namespace: where helm puts a namespaced object that names none. */
  readonly namespace: string;
  /** Rejects for a kind the API server does not serve. */
  readonly isNamespaced: (apiVersion: string, kind: string) => Promise<boolean>;
}

const isStringMap = (v: unknown): v is Record<string, string> => isPlainObject(v) && Object.values(v).every((x) => typeof x === 'string');
const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** A manifest with the ownership of every object it can safely stamp (see the module comment). */
export async function stampOwnership(manifest: string, ctx: StampContext): Promise<string> {
  const chunks = splitHelmStream(manifest);
  const out: string[] = [];
  for (const chunk of chunks) out.push((await stampDocument(chunk, ctx)) ?? chunk);
  return out.join('---\n');
}

interface Stampable {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: unknown;
  };
}

/** Pure: whether a document read as helm reads it is one object whose metadata can be stamped. */
function isStampable(doc: unknown): doc is Stampable {
  if (!isPlainObject(doc) || !nonEmpty(doc.apiVersion) || !nonEmpty(doc.kind)) return false;
  if (doc.items !== undefined || !isPlainObject(doc.metadata)) return false;
  const meta = doc.metadata;
  const optional = (v: unknown, is: (x: unknown) => boolean): boolean => v === undefined || is(v);
  return (
    nonEmpty(meta.name) &&
    meta.ownerReferences === undefined &&
    optional(meta.namespace, nonEmpty) &&
    optional(meta.labels, isStringMap) &&
    optional(meta.annotations, isStringMap)
  );
}

/** The document with ownership, or undefined to leave it as it is. */
async function stampDocument(chunk: string, ctx: StampContext): Promise<string | undefined> {
  let doc: unknown;
  let namespaced: boolean;
  try {
    doc = readHelmYaml(chunk, MANIFEST_READ);
    if (!isStampable(doc)) return undefined;
    namespaced = await ctx.isNamespaced(doc.apiVersion, doc.kind);
  } catch {
    return undefined;
  }
  const meta = doc.metadata;
  const entry = {
    apiVersion: doc.apiVersion,
    kind: doc.kind,
    name: meta.name,
    namespace: namespaced ? (meta.namespace ?? ctx.namespace) : '',
  };
  const annotations = meta.annotations ?? {};
  const own = renderedOwnership({ entry, owner: ctx.owner, chartName: ctx.chartName, renderedAnnotations: annotations });
  meta.labels = { ...meta.labels, ...own.labels };
  if (own.annotations !== undefined) meta.annotations = { ...annotations, ...own.annotations };
  if (own.ownerReferences !== undefined) meta.ownerReferences = own.ownerReferences;
  return rewrittenDocument(chunk, doc);
}

/** `doc` in place of the document `chunk`, as JSON, with the chunk's comments. */
export function rewrittenDocument(chunk: string, doc: unknown): string {
  // helm's `# Source:` comments stay: `helm get manifest` still says which template made what.
  const comments = chunk
    .split(/(?<=\n)/)
    .filter((line) => /^\s*#/.test(line))
    .join('');
  return `${comments}${JSON.stringify(doc)}\n`;
}
