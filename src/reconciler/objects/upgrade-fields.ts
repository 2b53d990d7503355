/**
 * What an upgrade applies of a field that another field manager holds (docs/adr/0072). A field
 * under an ignore rule or in a reported fight (drift-ignore.ts, drift-fight.ts) is never taken by
 * helm's apply:
 *
 * - Server-side apply (helm 4): when another manager owns the field, it is left out of what helm
 *   applies, so helm's manager never owns it (had it owned it too, it just lets go, and the other
 *   manager's value stays): no conflict, no reset. When no one else owns it (helm's own field,
 *   or nobody's), it is given its live value: applying the same value changes nothing, and
 *   leaving out a field helm alone owns would delete it.
 * - Client-side apply (helm 3, a forced v4 replace): its three-way merge deletes a field the
 *   previous revision set and this one leaves out, so the field always gets its live value.
 * - An object that does not exist (created by this upgrade, or deleted) is applied whole: there is
 *   nobody else's value to keep.
 *
 * Every other field is applied as the chart renders it; what happens when another manager holds
 * one of those is the watch's `conflictPolicy`. Pure functions; the upgrade action reads the live
 * objects (actions/upgrade-render.ts).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { formatPointer, parsePointer, type DriftIgnoreRule } from '../../config/drift-ignore-rules.js';
import type { FieldPath } from '../drift/drift.js';
import { describeObject, heldPaths, type FightObject } from '../drift/drift-fight.js';
import { ignoredFields, isMapKey, withLiveFields, type RuleSubject } from '../drift/drift-ignore.js';
import { otherManagerOf } from './field-owner.js';
import { keyMatches, type ManagedFieldsEntry } from './field-takeover.js';
import type { DriftFights } from '../status/status.js';
import { isPlainObject } from '../../util/plain-object.js';

/** Pure: the fields of `object` an upgrade leaves to others: those the rules ignore and those `fights` hold. */
export function heldFields(
  rules: readonly DriftIgnoreRule[],
  fights: DriftFights | undefined,
  object: RuleSubject & FightObject,
): FieldPath[] {
  const byRules = rules.length === 0 ? [] : ignoredFields(rules, object);
  const byFights =
    fights === undefined
      ? []
      : heldPaths(fights, object).flatMap((p) => {
          const parsed = parsePointer(p);
          return parsed.ok ? [parsed.tokens] : [];
        });
  return [...byRules, ...byFights];
}

/**
 * Pure: `rendered` as an upgrade applies it, given the live object and the fields `held` (see the
 * module comment). `serverSide`: helm applies server-side; `ours`: the managers that are helm's
 * (its own, and ours for ownership metadata). `rendered` is not changed; it is returned as is when
 * nothing needs settling.
 */
export function settleHeld<T extends Record<string, unknown>>(
  rendered: T,
  live: KubernetesObject | undefined,
  held: readonly FieldPath[],
  how: { readonly serverSide: boolean; readonly ours: readonly string[] },
): T {
  if (live === undefined || held.length === 0) return rendered;
  const entries = (live.metadata?.managedFields ?? []) as ManagedFieldsEntry[];
  const leftOut: FieldPath[] = [];
  const carried: FieldPath[] = [];
  for (const path of held) {
    // A list entry cannot be left out of the list as a key can: it gets its live value instead.
    const foreign =
      how.serverSide &&
      isMapKey(rendered, path) &&
      otherManagerOf(entries, live, path, { ours: how.ours, subresources: true }) !== undefined;
    (foreign ? leftOut : carried).push(path);
  }
  return withLiveFields(withLiveFields(rendered, live, carried), undefined, leftOut);
}

/** A field an apply of the chart's object would take from another manager. */
export interface UpgradeConflict {
  readonly object: FightObject;
  /** As the API server names it (`.spec.replicas`, `.webhooks[name="a"].clientConfig.caBundle`). */
  readonly field: string;
  readonly manager: string;
  /** The field as an RFC 6901 pointer into the applied object, when it could be resolved. */
  readonly pointer?: string;
}

/**
 * Pure: the RFC 6901 pointer of a field path as the API server writes it in a conflict (`.a.b`,
 * `[k="v",…]` for an entry of a keyed list, `[=v]` for a set's value, `[3]` for an index),
 * resolved against the object that was applied; undefined when it cannot be.
 */
export function pointerOf(field: string, applied: unknown): string | undefined {
  const tokens: (string | number)[] = [];
  let value = applied;
  let rest = field;
  while (rest !== '') {
    const name = /^\.([^.[]+)/.exec(rest);
    if (name !== null) {
      const key = name[1] ?? '';
      if (!isPlainObject(value)) return undefined;
      tokens.push(key);
      value = value[key];
      rest = rest.slice(name[0].length);
      continue;
    }
    const entry = /^\[([^\]]*)\]/.exec(rest);
    if (entry === null || !Array.isArray(value)) return undefined;
    const i = entryIndex(entry[1] ?? '', value);
    if (i === undefined) return undefined;
    tokens.push(i);
    value = value[i];
    rest = rest.slice(entry[0].length);
  }
  return tokens.length === 0 ? undefined : formatPointer(tokens);
}

function entryIndex(selector: string, list: readonly unknown[]): number | undefined {
  if (/^\d+$/.test(selector)) return Number(selector);
  if (selector.startsWith('=')) {
    const v = parseJson(selector.slice(1));
    const i = list.findIndex((item) => JSON.stringify(item) === JSON.stringify(v));
    return i < 0 ? undefined : i;
  }
  const key: Record<string, unknown> = {};
  for (const part of selector.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return undefined;
    key[part.slice(0, eq)] = parseJson(part.slice(eq + 1));
  }
  const i = list.findIndex((item) => keyMatches(key, item));
  return i < 0 ? undefined : i;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * Pure: the ResourceConflict message of an upgrade that `conflictPolicy: fail` stopped: per field
 * the object, the field, the manager that holds it, and the two ways to settle it.
 */
export function conflictsMessage(conflicts: readonly UpgradeConflict[]): string {
  const shown = conflicts.slice(0, 3).map((c) => {
    const rule =
      c.pointer === undefined
        ? 'a driftIgnore rule naming that field'
        : `the rule {paths: [${c.pointer}], target: {kind: ${c.object.kind}, name: ${c.object.name}}} to the watch's driftIgnore`;
    return `${describeObject(c.object)}: field ${c.pointer ?? c.field} is owned by field manager "${c.manager}"; to take it back set conflictPolicy: force on the watch, to leave it to "${c.manager}" add ${rule}`;
  });
  const more = conflicts.length > shown.length ? `; …and ${conflicts.length - shown.length} more` : '';
  const n = conflicts.length;
  return `upgrade stopped before helm changed anything: ${n} field conflict${n === 1 ? '' : 's'} under conflictPolicy: fail: ${shown.join('; ')}${more}`;
}
