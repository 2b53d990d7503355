/**
 * A chart's values.schema.json (JSON Schema draft 4 to 2020-12, as helm reads it) converted to a
 * Kubernetes structural schema. What a structural schema cannot say becomes an open node
 * (`x-kubernetes-preserve-unknown-fields`) or a dropped validation, each with a warning naming the
 * path: the CRD may accept more than the chart's schema, never less, and helm still validates the
 * merged values on every install and upgrade. See docs/adr/0013-typed-crd-from-values-schema.md.
 */
import { isDeepStrictEqual } from 'node:util';
import { fieldPath } from '../util/field-path.js';
import { isPlainObject } from '../util/plain-object.js';
import {
  INT_OR_STRING,
  PRESERVE,
  compilePattern,
  openSchema,
  whyNotFits,
  type JsonValue,
  type OpenApiSchema,
  type OpenApiType,
} from './openapi.js';

export interface SchemaWarning {
  readonly path: string;
  readonly message: string;
}

type Raw = Record<string, unknown>;

/**
 * How values.yaml relates to a node. helm merges the CR's spec over values.yaml, map by map, so
 * `required` and `default` at a node mean something else there than in the chart's schema.
 * `off`: under a list or map value, where nothing is merged; `unknown`: values.yaml not given.
 */
type Merge = { readonly values: unknown } | 'unknown' | 'off';

interface Context {
  readonly root: unknown;
  readonly path: string;
  /** The $refs expanded on the way to this node: seeing one again is a cycle. */
  readonly refs: readonly string[];
  readonly merge: Merge;
  readonly warnings: SchemaWarning[];
  readonly budget: { nodes: number };
}

/** Expanding shared $refs inline can grow a schema exponentially: stop well before the API server's limits. */
const MAX_NODES = 20_000;

/** Formats the API server validates (apiextensions-apiserver's supported formats). */
const KNOWN_FORMATS = new Set([
  'bsonobjectid',
  'uri',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'cidr',
  'mac',
  'uuid',
  'uuid3',
  'uuid4',
  'uuid5',
  'isbn',
  'isbn10',
  'isbn13',
  'creditcard',
  'ssn',
  'hexcolor',
  'rgbcolor',
  'byte',
  'password',
  'date',
  'datetime',
  'date-time',
  'int32',
  'int64',
  'float',
  'double',
]);

/** Keywords that only constrain a value: what a oneOf/anyOf branch may keep in a structural schema. */
const VALUE_VALIDATIONS = new Set([
  'enum',
  'const',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
]);

/** Validations a CRD has no way to express; dropped with a warning, the node keeps the rest. */
const UNSUPPORTED = ['not', 'if', 'dependencies', 'dependentRequired', 'dependentSchemas', 'propertyNames', 'contains', 'unevaluatedItems'];

const SCALARS: ReadonlySet<string> = new Set(['string', 'integer', 'number', 'boolean']);

export function convertValuesSchema(schema: unknown, values: Merge, warnings: SchemaWarning[]): OpenApiSchema {
  const context: Context = { root: schema, path: '.spec', refs: [], merge: values, warnings, budget: { nodes: 0 } };
  return convert(schema, context);
}

const warn = (c: Context, message: string): void => {
  c.warnings.push({ path: c.path, message });
};

function open(c: Context, message?: string): OpenApiSchema {
  if (message !== undefined) warn(c, message);
  return openSchema();
}

function convert(raw: unknown, c: Context): OpenApiSchema {
  if (++c.budget.nodes === MAX_NODES + 1)
    warn(c, `the schema has over ${MAX_NODES} nodes once $refs are expanded: this part and the rest are left open`);
  if (c.budget.nodes > MAX_NODES) return openSchema();
  if (raw === true) return openSchema();
  if (!isPlainObject(raw)) return open(c, raw === false ? 'a false schema (nothing allowed) is left open' : 'not a JSON schema: left open');
  const resolved = expandRefs(raw, c);
  if (resolved === undefined) return withDescription(openSchema(), raw);
  return convertResolved(resolved.node, { ...c, refs: resolved.refs });
}

/** The node with its $ref (and allOf members) merged in; undefined after a warning when that is impossible. */
function expandRefs(raw: Raw, c: Context): { node: Raw; refs: readonly string[] } | undefined {
  let node = raw;
  let refs = c.refs;
  while (typeof node.$ref === 'string') {
    const ref = node.$ref;
    if (refs.includes(ref)) {
      warn(c, `recursive $ref ${ref}: left open below this point`);
      return undefined;
    }
    const target = resolvePointer(c.root, ref);
    if (target === undefined) {
      warn(
        c,
        ref.startsWith('#')
          ? `$ref ${ref} points to nothing: left open`
          : `$ref ${ref} names another document, which the CRD cannot hold: left open (helm fetches it at every install and upgrade; the operator refuses the chart unless its watch sets allowSchemaRefs: true)`,
      );
      return undefined;
    }
    refs = [...refs, ref];
    const { $ref: _ref, ...siblings } = node;
    // Keywords beside a $ref (a description, a default) refine the target (draft 2019-09 and later).
    node = isPlainObject(target) ? { ...target, ...siblings } : target === true ? siblings : { not: {} };
  }
  if (!Array.isArray(node.allOf)) return { node, refs };
  return flattenAllOf(node, node.allOf, { ...c, refs });
}

/** `#`, `#/definitions/x`, `#/$defs/a~1b`: a JSON pointer (RFC 6901) into this document. */
function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let pointer: string;
  try {
    pointer = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined; // a malformed %-escape
  }
  if (pointer === '') return root;
  if (!pointer.startsWith('/')) return undefined; // a named anchor ($anchor, $id): not followed
  let node: unknown = root;
  for (const token of pointer.slice(1).split('/')) {
    const key = token.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(node)) node = node[Number(key)];
    else if (isPlainObject(node) && Object.hasOwn(node, key)) node = node[key];
    else return undefined;
  }
  return node;
}

/**
 * allOf is how schemas compose (`allOf: [{$ref: common}, {properties: ...}]`): its members are merged
 * into one node. A property both define is merged again (allOf of both) when it is converted.
 */
function flattenAllOf(node: Raw, members: unknown[], c: Context): { node: Raw; refs: readonly string[] } {
  const { allOf: _allOf, ...merged } = node;
  let refs = c.refs;
  for (const member of members) {
    const expanded = isPlainObject(member) ? expandRefs(member, { ...c, refs }) : undefined;
    if (expanded === undefined) {
      if (member !== true && !isPlainObject(member)) warn(c, 'an allOf member is not a schema: ignored');
      continue;
    }
    refs = [...new Set([...refs, ...expanded.refs])];
    mergeInto(merged, expanded.node);
  }
  return { node: merged, refs };
}

function mergeInto(target: Raw, source: Raw): void {
  for (const [key, value] of Object.entries(source)) {
    const current = target[key];
    if (current === undefined) target[key] = value;
    else if (key === 'required' && Array.isArray(current) && Array.isArray(value))
      target[key] = [...new Set<unknown>([...(current as unknown[]), ...(value as unknown[])])];
    else if (key === 'properties' && isPlainObject(current) && isPlainObject(value)) {
      const properties = new Map(Object.entries(current));
      for (const [name, schema] of Object.entries(value)) {
        properties.set(name, properties.has(name) ? { allOf: [properties.get(name), schema] } : schema);
      }
      target[key] = Object.fromEntries(properties);
    }
  }
}

function withDescription(schema: OpenApiSchema, raw: Raw): OpenApiSchema {
  const description = typeof raw.description === 'string' ? raw.description : typeof raw.title === 'string' ? raw.title : undefined;
  return description === undefined ? schema : { description, ...schema };
}

function convertResolved(raw: Raw, c: Context): OpenApiSchema {
  for (const keyword of UNSUPPORTED) {
    if (raw[keyword] !== undefined)
      warn(
        c,
        `${keyword === 'if' ? 'if/then/else' : keyword} cannot be expressed in a CRD: not validated by the API server (helm still checks it)`,
      );
  }
  const union = unionBranches(raw, c);
  if (union === 'open') return withDescription(openSchema(), raw);
  const node = union ?? raw;
  const { types, nullable } = typesOf(node);
  const schema = schemaForTypes(node, types, c);
  if (nullable) schema.nullable = true;
  return finish(withDescription(schema, node), node, c);
}

function schemaForTypes(node: Raw, types: ReadonlySet<string>, c: Context): OpenApiSchema {
  const only = types.size === 1 ? [...types][0] : undefined;
  if (types.size === 0) {
    if (node.type !== undefined) warn(c, 'only null is allowed here: left open');
    return openSchema();
  }
  if (only !== undefined) return convertTyped(node, only, c);
  if (types.size === 2 && types.has('integer') && types.has('number')) return convertTyped(node, 'number', c);
  if (types.size === 2 && types.has('integer') && types.has('string')) return { [INT_OR_STRING]: true };
  return open(c, `a value of type ${[...types].sort().join(' or ')} cannot be expressed: left open`);
}

/**
 * oneOf/anyOf. Branches that only name types (`[{type: string}, {type: integer}]`, `[X, {type:
 * null}]`) become a type union; branches of pure value validations beside a typed node are kept
 * (structural schemas allow that); anything else is dropped with a warning, leaving the node typed
 * when the branches agree on one type and open otherwise.
 */
function unionBranches(raw: Raw, c: Context): Raw | 'open' | undefined {
  const keyword = Array.isArray(raw.oneOf) ? 'oneOf' : Array.isArray(raw.anyOf) ? 'anyOf' : undefined;
  if (keyword === undefined) return undefined;
  const { [keyword]: branchesRaw, ...rest } = raw;
  const branches = expandBranches(branchesRaw as unknown[], c);
  if (branches === undefined) return 'open';
  const nonNull = branches.filter((b) => !isNullType(b.type));
  const nullable = nonNull.length < branches.length;
  const withNull = (node: Raw): Raw => (nullable ? { ...node, type: [...typesOf(node).types, 'null'] } : node);
  if (nonNull.length === 1 && rest.type === undefined) return withNull({ ...(nonNull[0] as Raw), ...rest });
  const typeOnly = typeUnion(rest, nonNull, nullable);
  if (typeOnly !== undefined) return typeOnly;
  if (typesOf(rest).types.size > 0 && nonNull.every((b) => Object.keys(b).every((k) => VALUE_VALIDATIONS.has(k)))) {
    return { ...rest, [`x-kept-${keyword}`]: nonNull };
  }
  const common = commonType(rest, nonNull);
  if (common === undefined) {
    warn(c, `${keyword} of different types cannot be expressed: left open`);
    return 'open';
  }
  warn(c, `${keyword} alternatives cannot be expressed: only their common type is validated (helm still checks them)`);
  return withNull(common);
}

function expandBranches(branches: unknown[], c: Context): Raw[] | undefined {
  const out: Raw[] = [];
  for (const branch of branches) {
    const expanded = isPlainObject(branch) ? expandRefs(branch, c) : undefined;
    if (expanded === undefined) return undefined;
    out.push(expanded.node);
  }
  return out;
}

/** The node typed by its own type, or by the one type all branches agree on. */
function commonType(rest: Raw, branches: Raw[]): Raw | undefined {
  if (typesOf(rest).types.size > 0) return rest;
  const agreed = new Set(branches.flatMap((b) => [...typesOf(b).types]));
  return agreed.size === 1 ? { ...rest, type: [...agreed][0] } : undefined;
}

const isNullType = (type: unknown): boolean => type === 'null' || (Array.isArray(type) && type.length === 1 && type[0] === 'null');

/** Branches that only name types: the node allows their types (or anything, if one names none). */
function typeUnion(rest: Raw, branches: Raw[], nullable: boolean): Raw | 'open' | undefined {
  if (
    rest.type !== undefined ||
    !branches.every((b) => Object.keys(b).every((k) => k === 'type' || k === 'description' || k === 'title'))
  ) {
    return undefined;
  }
  if (branches.some((b) => typesOf(b).types.size === 0)) return 'open';
  const types = new Set(branches.flatMap((b) => [...typesOf(b).types]));
  return { ...rest, type: [...types, ...(nullable ? ['null'] : [])] };
}

/** The JSON types a node allows, from `type` or, failing that, its keywords. */
function typesOf(node: Raw): { types: Set<string>; nullable: boolean } {
  const declared = declaredTypes(node.type);
  const enumValues = enumOf(node);
  const nullable = [declared?.includes('null'), enumValues?.includes(null), node.nullable === true].includes(true);
  if (node[INT_OR_STRING] === true) return { types: new Set(['integer', 'string']), nullable };
  if (declared !== undefined) return { types: new Set(declared.filter((t) => t !== 'null')), nullable };
  return { types: inferTypes(node, enumValues), nullable };
}

const declaredTypes = (type: unknown): string[] | undefined =>
  typeof type === 'string' ? [type] : Array.isArray(type) ? type.filter((t): t is string => typeof t === 'string') : undefined;

const enumOf = (node: Raw): unknown[] | undefined =>
  Array.isArray(node.enum) ? node.enum : node.const !== undefined ? [node.const] : undefined;

function inferTypes(node: Raw, enumValues: unknown[] | undefined): Set<string> {
  if (enumValues !== undefined) {
    return new Set(
      enumValues
        .filter((v) => v !== null)
        .map((v) =>
          Array.isArray(v)
            ? 'array'
            : typeof v === 'number'
              ? Number.isInteger(v)
                ? 'integer'
                : 'number'
              : typeof v === 'object'
                ? 'object'
                : typeof v,
        ),
    );
  }
  if (['properties', 'additionalProperties', 'patternProperties', 'required'].some((k) => node[k] !== undefined))
    return new Set(['object']);
  if (['items', 'prefixItems', 'minItems', 'maxItems'].some((k) => node[k] !== undefined)) return new Set(['array']);
  if (['minLength', 'maxLength', 'pattern'].some((k) => node[k] !== undefined)) return new Set(['string']);
  if (['minimum', 'maximum', 'multipleOf'].some((k) => node[k] !== undefined)) return new Set(['number']);
  return new Set();
}

function convertTyped(node: Raw, type: string, c: Context): OpenApiSchema {
  if (type === 'object') return convertObject(node, c);
  if (type === 'array') return convertArray(node, c);
  if (type !== 'string' && type !== 'integer' && type !== 'number' && type !== 'boolean') return open(c, `unknown type ${type}: left open`);
  return convertScalar(node, type, c);
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const count = (v: unknown): number | undefined => (Number.isInteger(v) && (v as number) >= 0 ? (v as number) : undefined);

function convertScalar(node: Raw, type: OpenApiType, c: Context): OpenApiSchema {
  const schema: OpenApiSchema = { type };
  if (type === 'string') {
    schema.minLength = count(node.minLength);
    schema.maxLength = count(node.maxLength);
    schema.pattern = checkedPattern(node.pattern, c);
  }
  if (type === 'integer' || type === 'number') Object.assign(schema, bounds(node), { multipleOf: num(node.multipleOf) });
  if (typeof node.format === 'string') schema.format = checkedFormat(node.format, type, c);
  const enumValues = enumOf(node);
  if (enumValues !== undefined) {
    const fitting = enumValues.filter((v): v is JsonValue => v !== null && whyNotFits(v, { type }) === undefined);
    if (fitting.length < enumValues.filter((v) => v !== null).length) warn(c, `enum values that are not of type ${type} were dropped`);
    if (fitting.length > 0) schema.enum = fitting;
  }
  return compact(schema);
}

/** Draft 6+ writes `exclusiveMinimum: 5`; OpenAPI v3.0 (and so a CRD) writes `minimum: 5, exclusiveMinimum: true`. */
function bounds(node: Raw): OpenApiSchema {
  const out: OpenApiSchema = {};
  for (const [bound, exclusive, stricter] of [
    ['minimum', 'exclusiveMinimum', Math.max],
    ['maximum', 'exclusiveMaximum', Math.min],
  ] as const) {
    const inclusive = num(node[bound]);
    const exclusiveValue = num(node[exclusive]);
    if (exclusiveValue !== undefined && (inclusive === undefined || stricter(inclusive, exclusiveValue) === exclusiveValue)) {
      out[bound] = exclusiveValue;
      out[exclusive] = true;
    } else if (inclusive !== undefined) {
      out[bound] = inclusive;
      if (node[exclusive] === true) out[exclusive] = true;
    }
  }
  return out;
}

/** ECMA-262 constructs RE2 (the API server's regexp engine) rejects or reads differently. */
const NOT_RE2 = /\(\?<?[=!]|\\[1-9]|\\k<|\\u[0-9a-fA-F{]|\\c[A-Za-z]|\(\?<[A-Za-z]/;

function checkedPattern(pattern: unknown, c: Context): string | undefined {
  if (typeof pattern !== 'string') return undefined;
  if (compilePattern(pattern) !== undefined && !NOT_RE2.test(pattern)) return pattern;
  warn(c, `pattern ${JSON.stringify(pattern)} uses syntax the API server's RE2 engine does not support: not validated`);
  return undefined;
}

function checkedFormat(format: string, type: OpenApiType, c: Context): string | undefined {
  const numeric = format === 'int32' || format === 'int64' || format === 'float' || format === 'double';
  if (KNOWN_FORMATS.has(format) && numeric === (type !== 'string')) return format;
  const why = format === 'duration' ? ' (JSON Schema means ISO 8601, the API server Go durations)' : '';
  warn(c, `format ${format}${why} is not one the API server checks for a ${type}: dropped`);
  return undefined;
}

function convertObject(node: Raw, c: Context): OpenApiSchema {
  const properties = isPlainObject(node.properties) ? convertProperties(node.properties, c) : undefined;
  const schema: OpenApiSchema = { type: 'object', properties, ...openness(node, properties !== undefined, c) };
  if (node[PRESERVE] === true) schema[PRESERVE] = true;
  schema.required = keptRequired(node.required, properties ?? {}, c);
  schema.minProperties = count(node.minProperties);
  schema.maxProperties = count(node.maxProperties);
  return compact(schema);
}

function convertProperties(properties: Raw, c: Context): Record<string, OpenApiSchema> {
  const valuesHere = typeof c.merge === 'object' ? c.merge.values : undefined;
  // fromEntries, not assignment: a property named __proto__ must stay a property.
  return Object.fromEntries(
    Object.entries(properties).map(([name, child]) => {
      const own = isPlainObject(valuesHere) && Object.hasOwn(valuesHere, name) ? valuesHere[name] : undefined;
      const merge: Merge = typeof c.merge === 'object' ? { values: own } : c.merge;
      const schema = convert(child, { ...c, path: `${c.path}${fieldPath(name)}`, merge });
      return [name, deletable(merge) ? { ...schema, nullable: true } : schema];
    }),
  );
}

/**
 * A user's `key: null` deletes values.yaml's value of the key (helm's coalescing), so a field that
 * values.yaml sets must accept null: the API server prunes a null from a non-nullable field, and
 * helm would then use the chart's value after all.
 */
const deletable = (merge: Merge): boolean =>
  merge === 'unknown' || (typeof merge === 'object' && merge.values !== undefined && merge.values !== null);

/** What an object does with fields it does not list: a map's value schema, kept (open), or pruned (closed). */
function openness(node: Raw, hasProperties: boolean, c: Context): OpenApiSchema {
  const additional = node.additionalProperties;
  const additionalSchema = isPlainObject(additional) && Object.keys(additional).length > 0 ? additional : undefined;
  if (isPlainObject(node.patternProperties) && Object.keys(node.patternProperties).length > 0) {
    warn(c, 'patternProperties cannot be expressed: fields not listed in properties are kept unvalidated');
    return { [PRESERVE]: true };
  }
  if (additionalSchema !== undefined && !hasProperties) {
    return { additionalProperties: convert(additionalSchema, { ...c, path: `${c.path}.*`, merge: 'off' }) };
  }
  if (additional === false || (additional === undefined && node.unevaluatedProperties === false)) return {};
  if (additionalSchema !== undefined)
    warn(c, 'additionalProperties beside properties cannot be expressed: the other fields are kept unvalidated');
  // JSON Schema objects are open unless additionalProperties is false; a CRD prunes unknown fields.
  return { [PRESERVE]: true };
}

/** `.image.tag`, or `["app.kubernetes.io/name"]` for keys that are not identifiers (src/util/field-path.ts). */
export { fieldPath };

/**
 * helm validates the CR's spec merged over values.yaml, so a key values.yaml sets is not required
 * of the CR. Where nothing is merged (list items, map values) `required` is kept as is.
 */
function keptRequired(required: unknown, properties: Record<string, OpenApiSchema>, c: Context): string[] | undefined {
  if (!Array.isArray(required)) return undefined;
  const names = [...new Set(required.filter((r): r is string => typeof r === 'string'))];
  if (c.merge === 'off') return names.length > 0 ? names : undefined;
  // A defaulted field is always there when the API server checks required: nothing to enforce.
  const undefaulted = names.filter((n) => properties[n]?.default === undefined);
  if (c.merge === 'unknown') {
    if (undefaulted.length > 0)
      warn(c, `required ${undefaulted.join(', ')} not enforced: values.yaml may set them (give the values to keep the others)`);
    return undefined;
  }
  const values = c.merge.values;
  const kept = undefaulted.filter((n) => !(isPlainObject(values) && values[n] !== undefined && values[n] !== null));
  return kept.length > 0 ? kept : undefined;
}

function convertArray(node: Raw, c: Context): OpenApiSchema {
  const schema: OpenApiSchema = { type: 'array' };
  const itemsContext: Context = { ...c, path: `${c.path}[*]`, merge: 'off' };
  if (Array.isArray(node.items) || Array.isArray(node.prefixItems)) {
    warn(itemsContext, 'tuple items (a schema per position) cannot be expressed: items left open');
    schema.items = openSchema();
  } else {
    schema.items = node.items === undefined ? openSchema() : convert(node.items, itemsContext);
  }
  schema.minItems = count(node.minItems);
  schema.maxItems = count(node.maxItems);
  if (node.uniqueItems === true) {
    const scalarItems = schema.items.type !== undefined && SCALARS.has(schema.items.type);
    if (scalarItems) schema['x-kubernetes-list-type'] = 'set';
    else warn(c, 'uniqueItems of non-scalar items cannot be expressed: not validated');
  }
  return compact(schema);
}

/** Junctor branches kept as value validations, the default and x-kubernetes extensions. */
function finish(schema: OpenApiSchema, node: Raw, c: Context): OpenApiSchema {
  for (const keyword of ['oneOf', 'anyOf'] as const) {
    const kept = node[`x-kept-${keyword}`];
    if (Array.isArray(kept)) schema[keyword] = kept.map((b) => branchValidations(b as Raw, schema, c));
  }
  if (node.default !== undefined) {
    const fitting = checkedDefault(node.default, schema, c);
    if (fitting !== undefined) schema.default = fitting;
  }
  return schema;
}

function branchValidations(branch: Raw, outer: OpenApiSchema, c: Context): OpenApiSchema {
  const converted =
    outer.type !== undefined && outer.type !== 'object' && outer.type !== 'array'
      ? convertScalar({ ...branch }, outer.type, c)
      : {
          ...bounds(branch),
          minItems: count(branch.minItems),
          maxItems: count(branch.maxItems),
          minProperties: count(branch.minProperties),
          maxProperties: count(branch.maxProperties),
        };
  const { type: _type, ...validations } = compact(converted);
  return validations;
}

function checkedDefault(value: unknown, schema: OpenApiSchema, c: Context): JsonValue | undefined {
  if (value === null) return undefined;
  const why = whyNotFits(value, schema) ?? (schema.format !== undefined && value === '' ? `"" is not a valid ${schema.format}` : undefined);
  if (why !== undefined) {
    warn(c, `default ${JSON.stringify(value)} dropped: ${why}`);
    return undefined;
  }
  if (
    c.merge !== 'off' &&
    c.merge !== 'unknown' &&
    c.merge.values !== undefined &&
    c.merge.values !== null &&
    !isDeepStrictEqual(c.merge.values, value)
  ) {
    warn(c, `default ${JSON.stringify(value)} dropped: values.yaml sets ${JSON.stringify(c.merge.values)}, which is what helm uses`);
    return undefined;
  }
  return value as JsonValue;
}

/** The schema without undefined fields, so it serialises as written. */
function compact(schema: OpenApiSchema): OpenApiSchema {
  return Object.fromEntries(Object.entries(schema).filter(([, v]) => v !== undefined));
}
