/**
 * Whether a regenerated CRD may replace the one a cluster serves: OLM v1's CRD upgrade-safety
 * preflight (operator-controller's crdupgradesafety) applied to two CRD documents, old and new.
 * A change that could make a stored or previously valid object invalid, or change what it means,
 * is reported with the field's path and why; a change the checks do not know is reported too
 * (OLM's "unknown change, refusing to determine that change is safe"). Pure; used at build time
 * (`create api --force`, docs/adr/0057-chart-updates-and-bundle-upgrades.md) and by the operator
 * before it replaces a chart's CRDs (`crds: CreateReplace`, docs/adr/0075).
 */
import { isDeepStrictEqual } from 'node:util';
import { isPlainObject } from '../util/plain-object.js';
import { fieldPath } from '../util/field-path.js';

/** The check that refused a change, named as OLM v1 names it. */
export type UpgradeCheck =
  | 'NoScopeChange'
  | 'NoStoredVersionRemoved'
  | 'NoExistingFieldRemoved'
  | 'Type'
  | 'Required'
  | 'Enum'
  | 'Default'
  | 'Minimum'
  | 'Maximum'
  | 'Pattern'
  | 'Format'
  | 'Nullable'
  | 'PreserveUnknownFields'
  | 'Unknown';

export interface UnsafeChange {
  /** The CRD version whose schema changed; undefined for CRD-level checks (scope). */
  readonly version?: string;
  /** `.spec.service.port`, `.spec.hosts[*]`, `.spec.labels.*`; `.` for the object itself. */
  readonly path: string;
  readonly check: UpgradeCheck;
  readonly message: string;
}

type Schema = Record<string, unknown>;

/** Keywords that describe a field without constraining its values: changes to them are safe. */
const DESCRIPTIVE = new Set(['description', 'title', 'example', 'externalDocs']);
/** Keywords that hold child schemas: compared field by field, not as the node's own constraints. */
const CHILDREN = new Set(['properties', 'items', 'additionalProperties']);

const show = (v: unknown): string => JSON.stringify(v);
const schemaAt = (s: Schema, key: string): Schema | undefined => (isPlainObject(s[key]) ? s[key] : undefined);
const numberAt = (s: Schema, key: string): number | undefined => (typeof s[key] === 'number' ? s[key] : undefined);
const stringsAt = (s: Schema, key: string): string[] =>
  Array.isArray(s[key]) ? s[key].filter((x): x is string => typeof x === 'string') : [];

/** What a node accepts as a type: int-or-string is a type of its own here, an untyped node is `any`. */
const typeOf = (s: Schema): string =>
  typeof s.type === 'string' ? s.type : s['x-kubernetes-int-or-string'] === true ? 'int-or-string' : 'any';

type Finding = Omit<UnsafeChange, 'version'>;
/** One check of a node: the keywords it decides on, and what it finds unsafe about their change. */
interface NodeCheck {
  readonly keys: readonly string[];
  readonly check: (old: Schema, next: Schema, path: string) => Finding[];
}

const bound = (kind: 'min' | 'max', key: string): NodeCheck => ({
  keys: [key],
  check: (old, next, path) => {
    const a = numberAt(old, key);
    const b = numberAt(next, key);
    if (b === undefined || a === b) return [];
    const check = kind === 'min' ? 'Minimum' : 'Maximum';
    if (a === undefined) return [{ path, check, message: `${key} ${b} added where there was no bound` }];
    const stricter = kind === 'min' ? b > a : b < a;
    return stricter ? [{ path, check, message: `${key} ${kind === 'min' ? 'increased' : 'decreased'} from ${a} to ${b}` }] : [];
  },
});

/** A keyword whose addition or change narrows what is valid and whose removal widens it. */
const narrowing = (key: string, check: UpgradeCheck): NodeCheck => ({
  keys: [key],
  check: (old, next, path) => {
    if (next[key] === undefined || isDeepStrictEqual(old[key], next[key])) return [];
    return [
      {
        path,
        check,
        message: old[key] === undefined ? `${key} ${show(next[key])} added` : `${key} changed from ${show(old[key])} to ${show(next[key])}`,
      },
    ];
  },
});

const NODE_CHECKS: readonly NodeCheck[] = [
  {
    keys: ['type', 'x-kubernetes-int-or-string'],
    check: (old, next, path) =>
      typeOf(old) === typeOf(next) ? [] : [{ path, check: 'Type', message: `type changed from ${typeOf(old)} to ${typeOf(next)}` }],
  },
  {
    keys: ['enum'],
    check: (old, next, path) => {
      const before = Array.isArray(old.enum) ? old.enum : [];
      const after = Array.isArray(next.enum) ? next.enum : [];
      if (after.length === 0) return [];
      if (before.length === 0) return [{ path, check: 'Enum', message: `enum ${show(after)} added where any value was allowed` }];
      const removed = before.filter((v) => !after.some((w) => isDeepStrictEqual(v, w)));
      return removed.length === 0 ? [] : [{ path, check: 'Enum', message: `enum values ${show(removed)} removed` }];
    },
  },
  {
    // The API server applies a default when it reads a stored object too: changing it changes existing objects.
    keys: ['default'],
    check: (old, next, path) => {
      if (isDeepStrictEqual(old.default, next.default)) return [];
      const message =
        old.default === undefined
          ? `default ${show(next.default)} added`
          : next.default === undefined
            ? `default ${show(old.default)} removed`
            : `default changed from ${show(old.default)} to ${show(next.default)}`;
      return [{ path, check: 'Default', message }];
    },
  },
  {
    // Reported at the child's own path: that is the field an existing object may lack.
    keys: ['required'],
    check: (old, next, path) => {
      const before = new Set(stringsAt(old, 'required'));
      const props = schemaAt(next, 'properties') ?? {};
      return stringsAt(next, 'required')
        .filter((name) => !before.has(name) && !(isPlainObject(props[name]) && props[name].default !== undefined))
        .map((name) => ({
          path: `${path === '.' ? '' : path}${fieldPath(name)}`,
          check: 'Required' as const,
          message: 'now required, without a default',
        }));
    },
  },
  bound('min', 'minimum'),
  bound('min', 'minLength'),
  bound('min', 'minItems'),
  bound('min', 'minProperties'),
  bound('max', 'maximum'),
  bound('max', 'maxLength'),
  bound('max', 'maxItems'),
  bound('max', 'maxProperties'),
  narrowing('pattern', 'Pattern'),
  narrowing('format', 'Format'),
  {
    keys: ['nullable'],
    check: (old, next, path) =>
      old.nullable === true && next.nullable !== true
        ? [{ path, check: 'Nullable', message: 'no longer nullable: a null is now pruned' }]
        : [],
  },
  {
    keys: ['x-kubernetes-preserve-unknown-fields'],
    check: (old, next, path) =>
      old['x-kubernetes-preserve-unknown-fields'] === true && next['x-kubernetes-preserve-unknown-fields'] !== true
        ? [{ path, check: 'PreserveUnknownFields', message: 'no longer keeps unknown fields: the API server now prunes them' }]
        : [],
  },
];

const HANDLED = new Set([...DESCRIPTIVE, ...CHILDREN, ...NODE_CHECKS.flatMap((c) => c.keys)]);

/** The node's own keywords no check decides on, where old and new differ. */
function unknownChanges(old: Schema, next: Schema): string[] {
  const keys = new Set([...Object.keys(old), ...Object.keys(next)]);
  return [...keys].filter((k) => !HANDLED.has(k) && !isDeepStrictEqual(old[k], next[k])).sort();
}

/** The child schemas of a node by path: its properties, its items (`[*]`), its map values (`.*`). */
function children(s: Schema, path: string): Map<string, Schema> {
  const prefix = path === '.' ? '' : path;
  const out = new Map<string, Schema>();
  for (const [name, child] of Object.entries(schemaAt(s, 'properties') ?? {}))
    if (isPlainObject(child)) out.set(`${prefix}${fieldPath(name)}`, child);
  const items = schemaAt(s, 'items');
  if (items !== undefined) out.set(`${prefix}[*]`, items);
  const values = schemaAt(s, 'additionalProperties');
  if (values !== undefined) out.set(`${prefix}.*`, values);
  return out;
}

function compareNode(old: Schema, next: Schema, path: string, out: Finding[]): void {
  for (const c of NODE_CHECKS) out.push(...c.check(old, next, path));
  const unknown = unknownChanges(old, next);
  if (unknown.length > 0)
    out.push({ path, check: 'Unknown', message: `${unknown.join(', ')} changed: unknown change, refusing to determine that it is safe` });
  const after = children(next, path);
  for (const [childPath, child] of children(old, path)) {
    const counterpart = after.get(childPath);
    if (counterpart === undefined) out.push({ path: childPath, check: 'NoExistingFieldRemoved', message: 'removed' });
    else compareNode(child, counterpart, childPath, out);
  }
}

/** Pure: the unsafe changes from one `openAPIV3Schema` to the next, in the order of the old schema's fields. */
export function schemaUpgradeSafety(old: unknown, next: unknown): Finding[] {
  const out: Finding[] = [];
  compareNode(isPlainObject(old) ? old : {}, isPlainObject(next) ? next : {}, '.', out);
  return out;
}

interface CrdVersion {
  readonly name: string;
  readonly storage: boolean;
  readonly schema: unknown;
}

function versionsOf(crd: Schema): CrdVersion[] {
  const spec = schemaAt(crd, 'spec') ?? {};
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isPlainObject) : [];
  return versions.map((v) => ({
    name: String(v.name),
    storage: v.storage === true,
    schema: (schemaAt(v, 'schema') ?? {}).openAPIV3Schema,
  }));
}

/**
 * Pure: what makes `next` unsafe to apply over `old` (two CustomResourceDefinition documents as
 * parsed YAML): a scope change, a storage version gone, and each shared version's schema changes.
 * A version only `next` has is new, so nothing can break there. `storedVersions`: the live CRD's
 * `status.storedVersions`, versions objects may still be stored in whatever the storage version is
 * now: removing one of those is refused too.
 */
export function crdUpgradeSafety(old: unknown, next: unknown, storedVersions: readonly string[] = []): UnsafeChange[] {
  const a = isPlainObject(old) ? old : {};
  const b = isPlainObject(next) ? next : {};
  const out: UnsafeChange[] = [];
  const scope = (c: Schema): unknown => (schemaAt(c, 'spec') ?? {}).scope;
  if (scope(a) !== scope(b))
    out.push({ path: '.', check: 'NoScopeChange', message: `scope changed from ${String(scope(a))} to ${String(scope(b))}` });
  const after = new Map(versionsOf(b).map((v) => [v.name, v]));
  for (const v of versionsOf(a)) {
    const counterpart = after.get(v.name);
    if (counterpart === undefined) {
      if (v.storage || storedVersions.includes(v.name))
        out.push({ version: v.name, path: '.', check: 'NoStoredVersionRemoved', message: `stored version ${v.name} removed` });
      continue;
    }
    out.push(...schemaUpgradeSafety(v.schema, counterpart.schema).map((f) => ({ version: v.name, ...f })));
  }
  const known = new Set(versionsOf(a).map((v) => v.name));
  for (const name of storedVersions)
    if (!known.has(name) && !after.has(name))
      out.push({ version: name, path: '.', check: 'NoStoredVersionRemoved', message: `stored version ${name} removed` });
  return out;
}

/** One line per change, `  v1alpha1 .spec.port: type changed from integer to string (Type)`. */
export function formatUnsafeChanges(changes: readonly UnsafeChange[]): string {
  return changes.map((c) => `  ${c.version === undefined ? '' : `${c.version} `}${c.path}: ${c.message} (${c.check})`).join('\n');
}
