/**
 * Who last wrote a field, read from the live object's `metadata.managedFields`: what names the
 * other side of a drift fight (drift-fight.ts). Pure; list entries are found in the field sets as
 * field-takeover.ts finds them (`k:` keys, `v:` values, `i:` indexes, a leaf for an atomic list).
 */
import type { FieldPath } from '../drift/drift.js';
import { isEmpty, keyMatches, parseKey, type FieldSet, type ManagedFieldsEntry } from './field-takeover.js';
import { isPlainObject } from '../../util/plain-object.js';

/**
 * Pure: the field manager that owns the field at `path` of `live`, other than those in `ours`
 * (the repair's own managers); the most recent writer when several do; undefined when nobody
 * else owns it. A subresource's entries count only with `subresources` (an upgrade asks: the
 * `scale` subresource's writer, `kubectl scale` or an HPA, owns the object's `spec.replicas`);
 * drift repair's fights are between writers of the object itself.
 */
export function otherManagerOf(
  entries: readonly ManagedFieldsEntry[],
  live: unknown,
  path: FieldPath,
  others: { readonly ours: readonly string[]; readonly subresources?: boolean },
): string | undefined {
  const { ours, subresources = false } = others;
  const owners = entries.filter(
    (e) =>
      e.manager !== undefined &&
      !ours.includes(e.manager) &&
      (subresources || (e.subresource ?? '') === '') &&
      isPlainObject(e.fieldsV1) &&
      owns(e.fieldsV1, live, path),
  );
  owners.sort((a, b) => (b.time ?? '').localeCompare(a.time ?? ''));
  return owners[0]?.manager;
}

function owns(set: FieldSet, live: unknown, path: FieldPath): boolean {
  let node = set;
  let value = live;
  for (const token of path) {
    // A leaf above the field: the manager owns that value whole (an atomic list or map).
    if (node !== set && isEmpty(node)) return true;
    let next: FieldSet | undefined;
    if (Array.isArray(value)) {
      const i = Number(token);
      const item: unknown = value[i];
      const keyed = Object.keys(node).find((k) => {
        if (!k.startsWith('k:')) return false;
        const key = parseKey(k);
        return key !== undefined && keyMatches(key, item);
      });
      next = node[keyed ?? `v:${JSON.stringify(item)}`] ?? node[`i:${i}`];
      value = item;
    } else {
      next = node[`f:${String(token)}`];
      value = isPlainObject(value) ? value[String(token)] : undefined;
    }
    if (next === undefined) return false;
    node = next;
  }
  return true;
}
