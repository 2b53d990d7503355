/**
 * The OpenAPI v3 schema subset a CustomResourceDefinition accepts (apiextensions.k8s.io/v1
 * JSONSchemaProps), and a check that a value fits such a schema, which the API server requires of
 * every `default` when it accepts a CRD.
 */
import { isDeepStrictEqual } from 'node:util';
import { isPlainObject } from '../util/plain-object.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export type OpenApiType = 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';

/** A node of a CRD's `openAPIV3Schema`: plain JSON, ready to be written as YAML. */
export interface OpenApiSchema {
  type?: OpenApiType;
  description?: string;
  format?: string;
  nullable?: boolean;
  default?: JsonValue;
  enum?: JsonValue[];
  // strings
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  // numbers
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  // arrays
  items?: OpenApiSchema;
  minItems?: number;
  maxItems?: number;
  // objects
  properties?: Record<string, OpenApiSchema>;
  additionalProperties?: OpenApiSchema;
  required?: string[];
  minProperties?: number;
  maxProperties?: number;
  // value validations only (no type, description or default inside)
  oneOf?: OpenApiSchema[];
  anyOf?: OpenApiSchema[];
  'x-kubernetes-preserve-unknown-fields'?: true;
  'x-kubernetes-int-or-string'?: true;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
}

export const PRESERVE = 'x-kubernetes-preserve-unknown-fields';
export const INT_OR_STRING = 'x-kubernetes-int-or-string';

/** A node that accepts any value and keeps every field under it. */
export const openSchema = (): OpenApiSchema => ({ [PRESERVE]: true });

const typeOf = (value: unknown): OpenApiType | 'null' | undefined => {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'boolean';
  return isPlainObject(value) ? 'object' : undefined;
};

/**
 * Pure: why `value` does not fit `schema` (the first reason found, with its path below the
 * node), or undefined when it fits. Checks what the API server checks of a default: types,
 * enum, bounds, pattern, required fields, and that it has no field the schema would prune.
 * Formats are not checked: callers treat a default under a format conservatively.
 */
export function whyNotFits(value: unknown, schema: OpenApiSchema, path = ''): string | undefined {
  const where = path || 'value';
  const why = whyWrongType(value, schema, where);
  if (why !== undefined || value === null || schema.type === undefined) return why === 'fits' ? undefined : why;
  if (schema.enum !== undefined && !schema.enum.some((e) => isDeepStrictEqual(e, value))) return `${where} is not in enum`;
  return whyValueNotFits(value, schema, path);
}

function whyValueNotFits(value: unknown, schema: OpenApiSchema, path: string): string | undefined {
  const where = path || 'value';
  if (typeof value === 'string') return whyStringNotFits(value, schema, where);
  if (typeof value === 'number') return whyNumberNotFits(value, schema, where);
  if (Array.isArray(value)) return whyArrayNotFits(value, schema, path);
  return isPlainObject(value) ? whyObjectNotFits(value, schema, path) : undefined;
}

/** 'fits' when nothing more is to be checked (null allowed, int-or-string, untyped). */
function whyWrongType(value: unknown, schema: OpenApiSchema, where: string): string | undefined {
  const actual = typeOf(value);
  const intOrString = schema[INT_OR_STRING] === true;
  if (actual === 'null') return schema.nullable === true || (schema.type === undefined && !intOrString) ? 'fits' : `${where} is null`;
  if (intOrString) return actual === 'integer' || actual === 'string' ? 'fits' : `${where} must be an integer or a string`;
  if (schema.type === undefined || actual === schema.type || (schema.type === 'number' && actual === 'integer')) return undefined;
  return `${where} must be of type ${schema.type}`;
}

const outside = (n: number, min: number | undefined, max: number | undefined): boolean =>
  (min !== undefined && n < min) || (max !== undefined && n > max);

function whyStringNotFits(value: string, s: OpenApiSchema, where: string): string | undefined {
  // The API server counts characters (runes), not UTF-16 units.
  if (outside(Array.from(value).length, s.minLength, s.maxLength)) return `${where} has the wrong length`;
  if (s.pattern !== undefined && !matches(s.pattern, value)) return `${where} does not match ${s.pattern}`;
  return undefined;
}

function whyNumberNotFits(value: number, s: OpenApiSchema, where: string): string | undefined {
  const low = s.minimum !== undefined && (s.exclusiveMinimum === true ? value <= s.minimum : value < s.minimum);
  const high = s.maximum !== undefined && (s.exclusiveMaximum === true ? value >= s.maximum : value > s.maximum);
  if (low || high) return `${where} is out of range`;
  if (s.multipleOf !== undefined && !Number.isInteger(value / s.multipleOf)) return `${where} is not a multiple of ${s.multipleOf}`;
  return undefined;
}

function matches(pattern: string, value: string): boolean {
  return compilePattern(pattern)?.test(value) ?? false;
}

/**
 * A JSON Schema pattern as a RegExp, or undefined if it does not compile. Unicode mode first, as
 * JSON Schema means; then legacy mode, which accepts escapes such as `\-` outside a class that
 * RE2 accepts too.
 */
export function compilePattern(pattern: string): RegExp | undefined {
  for (const flags of ['u', '']) {
    try {
      return new RegExp(pattern, flags);
    } catch {
      // try the next mode
    }
  }
  return undefined;
}

function whyArrayNotFits(value: unknown[], s: OpenApiSchema, path: string): string | undefined {
  if (outside(value.length, s.minItems, s.maxItems)) return `${path || 'value'} has the wrong number of items`;
  if (s['x-kubernetes-list-type'] === 'set' && new Set(value.map((v) => JSON.stringify(v))).size !== value.length) {
    return `${path || 'value'} has duplicate items`;
  }
  const items = s.items;
  if (items === undefined) return undefined;
  return value.map((item, i) => whyNotFits(item, items, `${path}[${i}]`)).find((why) => why !== undefined);
}

function whyObjectNotFits(value: Record<string, unknown>, s: OpenApiSchema, path: string): string | undefined {
  const properties = s.properties ?? {};
  const missing = (s.required ?? []).find((k) => !(k in value) && properties[k]?.default === undefined);
  if (missing !== undefined) return `${path}.${missing} is required`;
  if (outside(Object.keys(value).length, s.minProperties, s.maxProperties)) return `${path || 'value'} has the wrong number of fields`;
  for (const [key, v] of Object.entries(value)) {
    const child = Object.hasOwn(properties, key) ? properties[key] : s.additionalProperties;
    const why =
      child === undefined
        ? s[PRESERVE] === true
          ? undefined
          : `${path}.${key} is not in the schema (it would be pruned)`
        : whyNotFits(v, child, `${path}.${key}`);
    if (why !== undefined) return why;
  }
  return undefined;
}
