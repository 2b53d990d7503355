/**
 * Which fields the chart's manifest claims back from other field managers before a drift repair.
 *
 * A forced server-side apply takes over fields whose *value* conflicts, but it cannot remove a
 * list entry someone else added: when a hand edit changes the key of an associative-list entry
 * (a Service port number, a container, env var or volume name), the API server sees the chart's
 * entry removed and a new one, owned by the editor, added. Applying the manifest then adds the
 * chart's entry back next to the edited one (two ports, two containers). Moving the edited entry
 * into helm's apply ownership first makes the apply remove it, because an applier's fields that
 * are absent from its configuration are deleted when nobody else owns them (the approach of
 * Flux's SSA manager for `kubectl` edits, narrowed to what the chart sets).
 *
 * Pure functions over `metadata.managedFields` (FieldsV1: `f:<field>`, `k:<list-map key JSON>`,
 * `v:<set value JSON>`, `i:<index>`, `.` for an entry itself). List semantics are read from the
 * live object's own field sets, so no schema is needed.
 */
import { isDeepStrictEqual } from 'node:util';
import { isPlainObject } from '../../util/plain-object.js';

/** A FieldsV1 set: nested keys, `{}` for a leaf. */
export interface FieldSet {
  [key: string]: FieldSet;
}

/** One entry of `metadata.managedFields`, as the API server returns it. */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: FieldSet;
  subresource?: string;
}

/** The manager whose apply ownership the repair uses (see release-objects.ts). */
export interface Claimant {
  readonly manager: string;
  readonly apiVersion: string;
  readonly time: string;
}

/**
 * Pure: the managed fields after moving every field the chart claims (see {@link claimedFields})
 * from other managers into `claimant`'s Apply entry; undefined when no other manager owns any of
 * them, so nothing needs writing. Entries of the claimant's own manager (any operation) and of
 * other API versions are left as they are.
 */
export function takeOver(
  entries: readonly ManagedFieldsEntry[],
  desired: unknown,
  live: unknown,
  claimant: Claimant,
): ManagedFieldsEntry[] | undefined {
  const comparable = entries.filter((e) => e.apiVersion === claimant.apiVersion && isPlainObject(e.fieldsV1));
  const claimed = claimedFields(desired, live, union(comparable.map((e) => e.fieldsV1 as FieldSet)));
  let moved: FieldSet = {};
  const next: ManagedFieldsEntry[] = [];
  for (const entry of entries) {
    if (entry.manager === claimant.manager || !comparable.includes(entry)) {
      next.push(entry);
      continue;
    }
    const fields = entry.fieldsV1 as FieldSet;
    const taken = intersect(fields, claimed);
    if (isEmpty(taken)) {
      next.push(entry);
      continue;
    }
    moved = union([moved, taken]);
    const kept = subtract(fields, claimed);
    if (!isEmpty(kept)) next.push({ ...entry, fieldsV1: kept });
  }
  if (isEmpty(moved)) return undefined;
  const own = next.findIndex((e) => isClaimantApply(e, claimant));
  if (own >= 0) {
    const entry = next[own] as ManagedFieldsEntry;
    next[own] = { ...entry, fieldsV1: union([entry.fieldsV1 ?? {}, moved]) };
  } else {
    next.push({
      manager: claimant.manager,
      operation: 'Apply',
      apiVersion: claimant.apiVersion,
      time: claimant.time,
      fieldsType: 'FieldsV1',
      fieldsV1: moved,
    });
  }
  return next;
}

function isClaimantApply(e: ManagedFieldsEntry, c: Claimant): boolean {
  return e.manager === c.manager && e.operation === 'Apply' && e.apiVersion === c.apiVersion && (e.subresource ?? '') === '';
}

/**
 * Pure: the part of `owned` (the union of every manager's fields) that the chart claims: each
 * field the manifest sets, and each associative-list entry whose key was changed by hand (an
 * entry the manifest does not have, standing at the index of a manifest entry that is missing).
 * Entries only added by others (an injected sidecar), and fields the manifest leaves out (an
 * HPA's replicas, labels others add), are not claimed.
 */
export function claimedFields(desired: unknown, live: unknown, owned: FieldSet): FieldSet {
  if (!isPlainObject(desired)) return {};
  const claimed: FieldSet = {};
  const liveObj = isPlainObject(live) ? live : {};
  for (const [key, value] of Object.entries(desired)) {
    const field = `f:${key}`;
    const node = owned[field];
    if (node === undefined) continue;
    if (Array.isArray(value)) {
      // A leaf node is an atomic list, owned (and claimed) as a whole.
      const sub = claimedList(value, liveObj[key], node);
      if (!isEmpty(sub) || isEmpty(node)) claimed[field] = sub;
    } else if (isPlainObject(value)) {
      const sub = claimedFields(value, liveObj[key], node);
      if (!isEmpty(sub)) claimed[field] = sub;
    } else {
      claimed[field] = node;
    }
  }
  return claimed;
}

function claimedList(desired: readonly unknown[], live: unknown, owned: FieldSet): FieldSet {
  const keys = Object.keys(owned);
  if (keys.some((k) => k.startsWith('k:'))) return claimedMapList(desired, Array.isArray(live) ? live : [], owned);
  if (keys.some((k) => k.startsWith('v:'))) {
    const claimed: FieldSet = {};
    for (const item of desired) {
      const key = `v:${JSON.stringify(item)}`;
      if (owned[key] !== undefined) claimed[key] = owned[key];
    }
    return claimed;
  }
  // An atomic list (or one managed by index): owned as a whole.
  return owned;
}

function claimedMapList(desired: readonly unknown[], live: readonly unknown[], owned: FieldSet): FieldSet {
  const entries = Object.keys(owned)
    .filter((k) => k.startsWith('k:'))
    .map((k) => ({ fieldKey: k, key: parseKey(k) }))
    .filter((e): e is { fieldKey: string; key: Record<string, unknown> } => e.key !== undefined);
  const claimed: FieldSet = {};
  const matched = new Set<string>();
  const missing = new Set<number>();
  desired.forEach((item, i) => {
    const entry = entries.find((e) => keyMatches(e.key, item));
    if (entry === undefined) {
      missing.add(i);
      return;
    }
    matched.add(entry.fieldKey);
    const sub = claimedFields(
      item,
      live.find((l) => keyMatches(entry.key, l)),
      owned[entry.fieldKey] as FieldSet,
    );
    if (!isEmpty(sub)) claimed[entry.fieldKey] = sub;
  });
  for (const e of entries) {
    if (matched.has(e.fieldKey)) continue;
    const at = live.findIndex((l) => keyMatches(e.key, l));
    if (at >= 0 && missing.has(at)) claimed[e.fieldKey] = owned[e.fieldKey] as FieldSet;
  }
  return claimed;
}

export function parseKey(fieldKey: string): Record<string, unknown> | undefined {
  try {
    const key: unknown = JSON.parse(fieldKey.slice(2));
    return isPlainObject(key) ? key : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a list item has this key. A key field the item leaves out matches: the API server
 * defaults some key fields (a port's `protocol`) before it records them.
 */
export function keyMatches(key: Readonly<Record<string, unknown>>, item: unknown): boolean {
  if (!isPlainObject(item)) return false;
  const present = Object.entries(key).filter(([k]) => item[k] !== undefined);
  return present.length > 0 && present.every(([k, v]) => isDeepStrictEqual(item[k], v));
}

export function isEmpty(set: FieldSet): boolean {
  return Object.keys(set).length === 0;
}

export function union(sets: readonly FieldSet[]): FieldSet {
  const out: FieldSet = {};
  for (const set of sets) {
    for (const [k, v] of Object.entries(set)) out[k] = out[k] === undefined ? structuredClone(v) : union([out[k], v]);
  }
  return out;
}

/** The fields of `a` that are in `b`; a leaf of `b` covers everything below it in `a`. */
export function intersect(a: FieldSet, b: FieldSet): FieldSet {
  const out: FieldSet = {};
  for (const [k, v] of Object.entries(a)) {
    const other = b[k];
    if (other === undefined) continue;
    if (isEmpty(other)) out[k] = structuredClone(v);
    else if (isEmpty(v)) continue;
    else {
      const sub = intersect(v, other);
      if (!isEmpty(sub)) out[k] = sub;
    }
  }
  return out;
}

/** The fields of `a` that are not in `b`; a leaf of `b` removes everything below it in `a`. */
export function subtract(a: FieldSet, b: FieldSet): FieldSet {
  const out: FieldSet = {};
  for (const [k, v] of Object.entries(a)) {
    const other = b[k];
    if (other === undefined) out[k] = structuredClone(v);
    else if (isEmpty(other)) continue;
    else if (isEmpty(v)) out[k] = {};
    else {
      const sub = subtract(v, other);
      if (!isEmpty(sub)) out[k] = sub;
    }
  }
  return out;
}
