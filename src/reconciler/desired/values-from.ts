/**
 * Chart values from Secrets and ConfigMaps of the CR's namespace, so secrets need not sit in the
 * CR's spec in plain text. A CR lists its references in an annotation (the spec is the chart's
 * values and a typed CRD would prune an unknown key; see docs/adr/0016-tenancy.md):
 *
 *   helm.sdk.operatorframework.io/values-from: |
 *     - {kind: Secret, name: db, key: password, targetPath: auth.password}
 *     - {kind: ConfigMap, name: defaults}            # key values.yaml, merged at the root
 *
 * Pure: parsing the references and composing what they hold. Reading them is the operator's.
 */
import { readHelmYaml } from '../../config/helm-yaml.js';
import { parseValuePath, valuePathProblem, type ValuePath } from '../../config/value-path.js';
import { bracketDepth, VALUES_FROM_LIMITS, VALUES_LIMITS, valuesProblem } from '../decide/limits.js';
import { leafStrings } from '../../util/value-leaves.js';
import { isPlainObject } from '../../util/plain-object.js';
import { setValueAt, type Values } from './values.js';
import { leafPaths } from './secret-paths.js';

export const VALUES_FROM_ANNOTATION = 'helm.sdk.operatorframework.io/values-from';
/** A Secret's or ConfigMap's opt-in to being referenced (and watched: src/operator/values-sources.ts). */
export const VALUES_SOURCE_LABEL = 'helm.sdk.operatorframework.io/values-source';

export interface ValuesReference {
  readonly kind: 'Secret' | 'ConfigMap';
  readonly name: string;
  /** The data key; `values.yaml` by default (a YAML document merged at the root or at `targetPath`). */
  readonly key: string;
  /** Where the key's text goes, as a plain string (`--set-string` semantics); absent: parsed as YAML and merged. */
  readonly targetPath?: string;
  /** A missing object or key is skipped instead of blocking the release. */
  readonly optional: boolean;
}

const FIELDS = new Set(['kind', 'name', 'key', 'targetPath', 'optional']);
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DATA_KEY = /^[-._a-zA-Z0-9]+$/;

/** A referenced object as read: its data (a Secret's decoded), and whether it opted in to being one. */
export interface ValuesSource {
  readonly data: Readonly<Record<string, string>>;
  /** Labelled `helm.sdk.operatorframework.io/values-source: "true"`. */
  readonly optedIn: boolean;
}

/**
 * Reads the referenced objects (src/operator implements it). Which CR refers to which is indexed
 * from the CRs' watch events there, not learned from reconciles.
 */
export interface ValuesSourcePort {
  /**
   * The object, or undefined when it does not exist. With `as`, read as that user (its RBAC
   * applies: a Forbidden rejects).
   */
  read(kind: ValuesReference['kind'], namespace: string, name: string, as?: string): Promise<ValuesSource | undefined>;
}

export const referenceName = (r: Pick<ValuesReference, 'kind' | 'name'>): string => `${r.kind} ${r.name}`;

/**
 * Pure: the references in the annotation's value, or the first problem found (never throws). Its
 * length is checked before it is parsed, and each entry's fields before anything is read.
 */
export function parseValuesFrom(raw: string | undefined): { refs: ValuesReference[] } | { problem: string } {
  if (raw === undefined || raw.trim() === '') return { refs: [] };
  const { maxLength, maxReferences, maxBrackets } = VALUES_FROM_LIMITS;
  if (raw.length > maxLength)
    return {
      problem: `annotation ${VALUES_FROM_ANNOTATION} is ${raw.length} characters long, more than ${maxLength}: list references, not values`,
    };
  if (bracketDepth(raw, maxBrackets) > maxBrackets)
    return {
      problem: `annotation ${VALUES_FROM_ANNOTATION} nests more than ${maxBrackets} brackets: list flat references such as {kind: Secret, name: db}`,
    };
  let doc: unknown;
  try {
    doc = readHelmYaml(raw, { maxAliasCount: 10 });
  } catch (err) {
    return { problem: `annotation ${VALUES_FROM_ANNOTATION} is not valid YAML: ${(err as Error).message.split('\n')[0] ?? ''}` };
  }
  if (!Array.isArray(doc))
    return { problem: `annotation ${VALUES_FROM_ANNOTATION} must be a list of {kind, name, key, targetPath, optional}` };
  if (doc.length > maxReferences)
    return { problem: `annotation ${VALUES_FROM_ANNOTATION} lists ${doc.length} references, more than ${maxReferences}` };
  const refs: ValuesReference[] = [];
  for (const [i, item] of doc.entries()) {
    const ref = parseReference(item);
    if (typeof ref === 'string') return { problem: `annotation ${VALUES_FROM_ANNOTATION}, entry ${i}: ${ref}` };
    refs.push(ref);
  }
  return { refs };
}

function parseReference(item: unknown): ValuesReference | string {
  if (!isPlainObject(item)) return 'expected a map such as {kind: Secret, name: db, key: password, targetPath: auth.password}';
  const unknown = Object.keys(item).find((k) => !FIELDS.has(k));
  if (unknown !== undefined) return `unknown field "${unknown}" (known: ${[...FIELDS].join(', ')})`;
  const { kind, name, key = 'values.yaml', targetPath, optional = false } = item;
  const problem = checkObject(kind, name) ?? checkKey(key) ?? checkTargetPath(targetPath) ?? checkOptional(optional);
  if (problem !== undefined) return problem;
  return {
    kind: kind as ValuesReference['kind'],
    name: name as string,
    key: key as string,
    optional: optional as boolean,
    ...(targetPath === undefined ? {} : { targetPath: targetPath as string }),
  };
}

/** A field's value in a message: a scalar quoted and cut, a map or list by its type (it may nest deep). */
function shown(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object' && v !== null) return 'a map';
  const text = typeof v === 'string' ? v : String(v);
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
}

function checkObject(kind: unknown, name: unknown): string | undefined {
  if (kind !== 'Secret' && kind !== 'ConfigMap') return `kind must be Secret or ConfigMap, got ${shown(kind)}`;
  if (typeof name !== 'string' || !DNS1123_SUBDOMAIN.test(name))
    return `name must be the name of a ${kind} in the CR's namespace, got ${shown(name)}`;
  return undefined;
}

function checkOptional(optional: unknown): string | undefined {
  return typeof optional === 'boolean' ? undefined : `optional must be true or false, got ${shown(optional)}`;
}

function checkKey(key: unknown): string | undefined {
  return typeof key === 'string' && DATA_KEY.test(key)
    ? undefined
    : `key must be a data key (letters, digits, '-', '_', '.'), got ${shown(key)}`;
}

function checkTargetPath(path: unknown): string | undefined {
  if (path === undefined) return undefined;
  const problem = typeof path === 'string' ? valuePathProblem(path) : 'not a string';
  return problem === undefined
    ? undefined
    : `targetPath must be a value path such as "auth.password" or "args[0]", got ${shown(path)}: ${problem}`;
}

export interface ComposedValues {
  readonly values: Values;
  /** Required objects or keys that are absent, e.g. `Secret db key password`. */
  readonly missing: string[];
  /** Keys whose content is not a YAML map where one is merged at the root. */
  readonly invalid: string[];
  /** Keys, or all of them together, whose values are beyond VALUES_LIMITS, each with why. */
  readonly oversized: string[];
}

/**
 * Pure: the values the references hold, in order, later ones winning; `data[i]` is the i-th
 * object's data (decoded), undefined when it does not exist. Problems name objects and keys,
 * never their content.
 */
export function composeReferencedValues(
  refs: readonly ValuesReference[],
  data: readonly (Readonly<Record<string, string>> | undefined)[],
): ComposedValues {
  let values: Values = {};
  const missing: string[] = [];
  const invalid: string[] = [];
  const oversized: string[] = [];
  const read = valuesFileReader();
  refs.forEach((ref, i) => {
    const text = data[i]?.[ref.key];
    if (text === undefined) {
      if (!ref.optional) missing.push(data[i] === undefined ? referenceName(ref) : `${referenceName(ref)} key ${ref.key}`);
      return;
    }
    if (ref.targetPath !== undefined) {
      setValueAt(values, parseValuePath(ref.targetPath), text);
      return;
    }
    const parsed = read(text);
    if (parsed === undefined) invalid.push(`${referenceName(ref)} key ${ref.key}`);
    else if (typeof parsed === 'string') oversized.push(`${referenceName(ref)} key ${ref.key} ${parsed}`);
    else values = deepMerge(values, parsed);
  });
  // Each key is within the limits, and indexes of targetPaths too: together they may not be.
  const total = oversized.length === 0 ? valuesProblem(values) : undefined;
  if (total !== undefined) oversized.push(`the merge of all references ${total}`);
  return { values, missing, invalid, oversized };
}

/**
 * Pure: the strings the references' Secrets put into the values (each `targetPath` text, each
 * scalar of a merged values.yaml and its text), which must never be shown. ConfigMaps are not
 * secret.
 */
export function secretStrings(refs: readonly ValuesReference[], data: readonly (Readonly<Record<string, string>> | undefined)[]): string[] {
  const read = valuesFileReader();
  return refs.flatMap((ref, i) => {
    const text = data[i]?.[ref.key];
    if (ref.kind !== 'Secret' || text === undefined) return [];
    if (ref.targetPath !== undefined) return [text];
    const parsed = read(text);
    // Values beyond the limits are refused, never used: their whole text is enough to hide.
    return typeof parsed === 'string' ? [text] : [text, ...leafStrings(parsed)];
  });
}

/**
 * Pure: the value paths the references' Secrets set (each `targetPath`, each leaf of a merged
 * values.yaml; a text that is no map: the root, every value), recorded on the revision
 * (secret-paths.ts) so that a later plan still hides them once they no longer come from a Secret.
 */
export function secretValuePaths(
  refs: readonly ValuesReference[],
  data: readonly (Readonly<Record<string, string>> | undefined)[],
): ValuePath[] {
  const read = valuesFileReader();
  return refs.flatMap((ref, i): ValuePath[] => {
    const text = data[i]?.[ref.key];
    if (ref.kind !== 'Secret' || text === undefined) return [];
    if (ref.targetPath !== undefined) return [parseValuePath(ref.targetPath)];
    const parsed = read(text);
    return typeof parsed === 'object' ? leafPaths(parsed) : [[]];
  });
}

/**
 * Pure: under a ServiceAccount (docs/adr/0016-tenancy.md), the existing references whose objects
 * did not opt in, as `Secret db`: whoever may create a CR must not route a Secret its author may
 * not read into a release it can read.
 */
export function notOptedIn(refs: readonly ValuesReference[], sources: readonly (ValuesSource | undefined)[]): string[] {
  return refs.filter((_, i) => sources[i]?.optedIn === false).map(referenceName);
}

/**
 * A values file, as helm reads one (YAML 1.1: `mode: 0400` is 256, `enabled: yes` is true);
 * undefined when it is no YAML map, why when it is beyond VALUES_LIMITS (then nothing recursive
 * may walk it).
 */
function parseYamlMap(text: string): Values | string | undefined {
  // The YAML reader takes seconds to give up on deep flow nesting (40 s on 1 MiB of `[`).
  if (bracketDepth(text, VALUES_LIMITS.maxDepth) > VALUES_LIMITS.maxDepth) return `nests more than ${VALUES_LIMITS.maxDepth} brackets`;
  let doc: unknown;
  try {
    doc = readHelmYaml(text, { maxAliasCount: 100 });
  } catch {
    return undefined;
  }
  if (doc === null || doc === undefined) return {};
  return isPlainObject(doc) ? (valuesProblem(doc) ?? doc) : undefined;
}

/**
 * Reads values files as parseYamlMap does, each distinct text once (32 references may name one
 * object), and none once the texts read reach VALUES_LIMITS.maxBytes: reading YAML is the slow
 * part, and the event loop every CR shares waits for it.
 */
function valuesFileReader(): (text: string) => Values | string | undefined {
  const read = new Map<string, Values | string | undefined>();
  let bytes = 0;
  return (text) => {
    if (read.has(text)) return read.get(text);
    bytes += text.length;
    const parsed =
      bytes > VALUES_LIMITS.maxBytes
        ? `is past the ${VALUES_LIMITS.maxBytes / 1048576} MiB of text the referenced values files may hold together`
        : parseYamlMap(text);
    read.set(text, parsed);
    return parsed;
  };
}

/** Pure: helm's coalescing of two values maps: maps merge key by key, anything else replaces. */
export function deepMerge(base: Values, over: Values): Values {
  const out: Values = structuredClone(base);
  for (const [key, value] of Object.entries(over)) {
    const prior = Object.hasOwn(out, key) ? out[key] : undefined;
    const next = isPlainObject(prior) && isPlainObject(value) ? deepMerge(prior, value) : structuredClone(value);
    Object.defineProperty(out, key, { value: next, writable: true, enumerable: true, configurable: true });
  }
  return out;
}
