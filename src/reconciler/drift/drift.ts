/**
 * Drift: a field the chart sets whose live value differs. Fields the chart does not set (defaults,
 * an HPA's replicas, injected sidecars, labels others added) are not drift.
 */
import { isDeepStrictEqual } from 'node:util';
import { isPlainObject } from '../../util/plain-object.js';

/** Server-managed metadata that never counts as drift. */
const IGNORED_METADATA = new Set(['resourceVersion', 'managedFields', 'generation', 'uid', 'creationTimestamp', 'selfLink']);

/** A field's place in an object: keys and list indexes from the root. */
export type FieldPath = readonly (string | number)[];

/** `.spec.template.spec.containers[0].image`, as events and conditions name a field. */
export function dottedPath(path: FieldPath): string {
  return path.map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`)).join('') || '.';
}

/**
 * Pure: the paths where `desired` is not contained in `live`: every key of a desired object must be
 * in the live object with a contained value, and lists must have the same length, items compared
 * in order. A cheap first
 * filter: the API server normalises some values (quantities, defaults inside lists), so a path
 * reported here is confirmed by a server-side dry run before anything is changed.
 */
export function driftedPaths(desired: unknown, live: unknown): string[] {
  return driftedFields(desired, live, []).map(dottedPath);
}

function driftedFields(desired: unknown, live: unknown, path: FieldPath): FieldPath[] {
  if (isPlainObject(desired)) {
    if (!isPlainObject(live)) return [path];
    return Object.entries(desired).flatMap(([key, value]) => {
      if (path.length === 0 && key === 'status') return [];
      if (path.length === 1 && path[0] === 'metadata' && IGNORED_METADATA.has(key)) return [];
      return driftedFields(value, live[key], [...path, key]);
    });
  }
  if (Array.isArray(desired)) {
    // A longer live list is suspect too: extra entries may be someone else's (a sidecar in a keyed
    // list, which the dry run then clears) or drift (a verb added to an atomic list).
    if (!Array.isArray(live) || live.length !== desired.length) return [path];
    return desired.flatMap((item, i) => driftedFields(item, live[i], [...path, i]));
  }
  if (desired === null) return live === null || live === undefined ? [] : [path];
  return isDeepStrictEqual(desired, live) ? [] : [path];
}

/** What an apply would change, for comparing a dry-run result with the live object (status and server metadata left out). */
export function comparable(obj: unknown): unknown {
  if (!isPlainObject(obj)) return obj;
  const { status: _status, metadata, ...rest } = obj;
  const meta = isPlainObject(metadata) ? Object.fromEntries(Object.entries(metadata).filter(([k]) => !IGNORED_METADATA.has(k))) : metadata;
  return { ...rest, metadata: meta };
}

/** Pure: whether applying would change the object (the dry-run result differs from the live one). */
export function applyWouldChange(dryRunResult: unknown, live: unknown): boolean {
  return !isDeepStrictEqual(comparable(dryRunResult), comparable(live));
}

/**
 * Pure: the paths where the object after an apply differs from the object before it, i.e. what
 * the API server changed, which is what a drift event names. Unlike {@link driftedPaths} it does
 * not list what the chart sets and the server omits or normalises (`hostNetwork: false`, `[]`,
 * `500m` for `0.5`): those were never drift. Lists of equal length are compared item by item.
 */
export function changedPaths(before: unknown, after: unknown): string[] {
  return changedFields(before, after).map(dottedPath);
}

/** Pure: {@link changedPaths} as field paths, for naming a field's manager or a JSON pointer. */
export function changedFields(before: unknown, after: unknown): FieldPath[] {
  return differences(comparable(before), comparable(after), []);
}

function differences(a: unknown, b: unknown, path: FieldPath): FieldPath[] {
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].flatMap((key) => differences(a[key], b[key], [...path, key]));
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) return a.flatMap((item, i) => differences(item, b[i], [...path, i]));
  return isDeepStrictEqual(a, b) ? [] : [path];
}
