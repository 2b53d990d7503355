/**
 * One serialisation of JSON data, and its digest, shared by what compares values: the fingerprint
 * and fleet labels (src/reconciler) and the values a release was stored with (src/helm/parse.ts).
 */
import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted at every level, so equal values always serialise alike.
 * Numbers are already normalised by JSON (1 and 1.0 are one number), which is the lesson of
 * operator-sdk#5041, where int-vs-float comparisons caused endless upgrades.
 */
export function canonicalJson(value: unknown): string {
  // Array.from visits the holes an index past the end leaves (`a[2]`): null, as JSON.stringify writes them.
  if (Array.isArray(value)) return `[${Array.from(value, canonicalJson).join(',')}]`;
  // Arrays are handled above (a util imports no other util, so not isPlainObject).
  if (typeof value === 'object' && value !== null) {
    const map = value as Record<string, unknown>;
    const keys = Object.keys(map)
      .filter((k) => map[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(map[k])}`).join(',')}}`;
  }
  // Values come from JSON, so everything left is a string, number, boolean or null.
  return value === undefined ? 'null' : JSON.stringify(value);
}

/** SHA-256 of the canonical JSON, 40 hex characters (fits a label value). */
export function jsonDigest(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 40);
}
