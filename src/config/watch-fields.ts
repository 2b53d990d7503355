/**
 * Reading and validating the keys of one watches.yaml entry; each problem is reported with its
 * position and reading goes on, so one pass finds them all. Tenancy keys are in tenancy-fields.ts,
 * overrideValues in override-values.ts.
 */
import { isSeq, type Node } from 'yaml';
import { closestName } from './closest-name.js';
import { validateDriftIgnoreRules, WATCH_DRIFT_IGNORE_LIMITS, type DriftIgnoreRule } from './drift-ignore-rules.js';
import { DurationError, parseDuration } from './duration.js';
import { validateLabelSelector, type LabelSelector } from './selector.js';
import { CONFLICT_POLICIES, CRD_POLICIES, type ConflictPolicy, type CrdPolicy } from './watch.js';
import { addProblem, fail, quote, type EntryContext } from './watches-problems.js';
import { DNS1035_LABEL, DNS1123_SUBDOMAIN, FIELDS, KIND, periodFloorProblem, type FieldName } from './watches-schema.js';
import { deref, describe, isEmpty, nodeAt, scalarValue, valueNode } from './yaml-nodes.js';

export type FieldNodes = Partial<Record<FieldName, Node>>;

export function collectFields(ctx: EntryContext): FieldNodes {
  const fields: FieldNodes = {};
  for (const pair of ctx.node.items) {
    const keyNode = deref(ctx.pc.doc, pair.key);
    const key = scalarValue(keyNode);
    if (typeof key !== 'string') {
      addProblem(ctx.pc, ctx, { node: keyNode, reason: `field names must be strings, got ${describe(keyNode)}` });
      continue;
    }
    if (!(FIELDS as readonly string[]).includes(key)) {
      const hint = closestName(key, FIELDS);
      const reason = `unknown field ${quote(key)}${hint === undefined ? `; known fields: ${FIELDS.join(', ')}` : ` (did you mean ${quote(hint)}?)`}`;
      addProblem(ctx.pc, ctx, { node: keyNode, field: key, showField: false, reason });
      continue;
    }
    const value = valueNode(ctx.pc.doc, pair.value, keyNode);
    if (value === undefined) fail(ctx, keyNode, key, 'alias refers to an unknown anchor');
    else fields[key as FieldName] = value;
  }
  return fields;
}

/** A string field; undefined when absent or empty (reported if `required`) or of another type. */
export function readString(ctx: EntryContext, fields: FieldNodes, field: FieldName, required: boolean): string | undefined {
  const node = fields[field];
  if (node === undefined) {
    if (required) fail(ctx, undefined, field, 'required field is missing');
    return undefined;
  }
  const value = scalarValue(node);
  if (value === null || value === '') {
    if (required) fail(ctx, node, field, 'must not be empty');
    return value === '' ? '' : undefined;
  }
  if (typeof value !== 'string') {
    fail(ctx, node, field, `expected a string, got ${describe(node)}`);
    return undefined;
  }
  return value;
}

export function readGroup(ctx: EntryContext, fields: FieldNodes): string {
  const group = readString(ctx, fields, 'group', false) ?? '';
  if (group !== '' && (group.length > 253 || !DNS1123_SUBDOMAIN.test(group)))
    fail(
      ctx,
      fields.group,
      'group',
      `group ${quote(group)} must be empty (the core group) or a DNS subdomain: lower-case letters, digits, '-' and '.', e.g. "example.com"`,
    );
  return group;
}

export function readVersion(ctx: EntryContext, fields: FieldNodes): string | undefined {
  const version = readString(ctx, fields, 'version', true);
  if (version === undefined || version === '') return undefined;
  if (version.length > 63 || !DNS1035_LABEL.test(version)) {
    fail(
      ctx,
      fields.version,
      'version',
      `version ${quote(version)} must be a DNS label starting with a letter (lower-case letters, digits and '-'), e.g. "v1alpha1"`,
    );
    return undefined;
  }
  return version;
}

export function readKind(ctx: EntryContext, fields: FieldNodes): string | undefined {
  const kind = readString(ctx, fields, 'kind', true);
  if (kind === undefined || kind === '') return undefined;
  if (kind.length > 63 || !KIND.test(kind)) {
    const fixed = kind.replace(/[^A-Za-z0-9]/g, '');
    const hint = fixed === '' ? '' : ` (e.g. ${quote(fixed.charAt(0).toUpperCase() + fixed.slice(1))})`;
    fail(ctx, fields.kind, 'kind', `kind ${quote(kind)} must start with an upper-case letter and contain only letters and digits${hint}`);
    return undefined;
  }
  return kind;
}

export function readBoolean(ctx: EntryContext, fields: FieldNodes, field: FieldName, fallback: boolean): boolean {
  const node = fields[field];
  if (isEmpty(node)) return fallback;
  const value = scalarValue(node);
  if (typeof value === 'boolean') return value;
  fail(ctx, node, field, `expected true or false, got ${describe(node)}`);
  return fallback;
}

/** A field that takes one of `choices`; undefined when absent (the watch's default applies) or wrong (reported with `expected`). */
export function readChoice<T extends string>(
  ctx: EntryContext,
  fields: FieldNodes,
  field: FieldName,
  o: { readonly choices: readonly T[]; readonly expected: string },
): T | undefined {
  const node = fields[field];
  if (isEmpty(node)) return undefined;
  const value = scalarValue(node);
  if (typeof value === 'string' && (o.choices as readonly string[]).includes(value)) return value as T;
  fail(ctx, node, field, `expected ${o.expected}, got ${describe(node)}`);
  return undefined;
}

/** `conflictPolicy`: `force` or `fail`; undefined when absent (the default, `force`) or wrong (reported). */
export const readConflictPolicy = (ctx: EntryContext, fields: FieldNodes): ConflictPolicy | undefined =>
  readChoice(ctx, fields, 'conflictPolicy', {
    choices: CONFLICT_POLICIES,
    expected: `"force" (an upgrade takes back the chart's fields from other field managers, the default) or "fail" (it stops with ResourceConflict)`,
  });

/** `crds`: `Skip`, `Create` or `CreateReplace`; undefined when absent (the default, `Create`) or wrong (reported). */
export const readCrdPolicy = (ctx: EntryContext, fields: FieldNodes): CrdPolicy | undefined =>
  readChoice(ctx, fields, 'crds', {
    choices: CRD_POLICIES,
    expected: `"Create" (the chart's crds/ created at install when missing, as helm does; the default), "CreateReplace" (also replaced at upgrade when OLM v1's upgrade-safety rules allow it) or "Skip" (never installed)`,
  });

export function readReconcilePeriod(ctx: EntryContext, fields: FieldNodes): number | undefined {
  const node = fields.reconcilePeriod;
  if (isEmpty(node)) return undefined;
  const value = scalarValue(node);
  if (typeof value !== 'string') {
    fail(ctx, node, 'reconcilePeriod', `expected a duration string such as "30s" or "1m30s", got ${describe(node)}`);
    return undefined;
  }
  try {
    const ms = parseDuration(value);
    const tooShort = periodFloorProblem(ms);
    if (tooShort !== undefined) fail(ctx, node, 'reconcilePeriod', `${quote(value)} is ${tooShort}`);
    return ms === 0 || tooShort !== undefined ? undefined : ms;
  } catch (err) {
    if (!(err instanceof DurationError)) throw err;
    fail(ctx, node, 'reconcilePeriod', err.message);
    return undefined;
  }
}

export function readMaxConcurrent(ctx: EntryContext, fields: FieldNodes): number | undefined {
  const node = fields.maxConcurrentReconciles;
  if (isEmpty(node)) return undefined;
  const value = scalarValue(node);
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) return value;
  fail(ctx, node, 'maxConcurrentReconciles', `expected a whole number of at least 1, got ${describe(node)}`);
  return undefined;
}

/** `sensitiveValues`: a list of dotted value paths, each segment non-empty. */
export function readValuePaths(ctx: EntryContext, fields: FieldNodes): string[] {
  const node = fields.sensitiveValues;
  if (isEmpty(node)) return [];
  if (!isSeq(node)) {
    fail(ctx, node, 'sensitiveValues', `expected a list of value paths such as "auth.password", got ${describe(node)}`);
    return [];
  }
  const paths: string[] = [];
  node.items.forEach((item, i) => {
    const itemNode = deref(ctx.pc.doc, item);
    const value = scalarValue(itemNode);
    if (typeof value !== 'string' || value.split('.').some((segment) => segment === '')) {
      fail(
        ctx,
        itemNode,
        `sensitiveValues[${i}]`,
        `expected a value path such as "auth.password" (keys joined by "."), got ${describe(itemNode)}`,
      );
      return;
    }
    paths.push(value);
  });
  return paths;
}

export function readSelector(ctx: EntryContext, fields: FieldNodes): LabelSelector | undefined {
  const node = fields.selector;
  if (isEmpty(node) || node === undefined) return undefined;
  let value: unknown;
  try {
    value = node.toJS(ctx.pc.doc);
  } catch (err) {
    fail(ctx, node, 'selector', (err as Error).message);
    return undefined;
  }
  const result = validateLabelSelector(value);
  if (result.ok) return result.selector;
  for (const p of result.problems) fail(ctx, nodeAt(ctx.pc.doc, node, p.path), `selector${pathText(p.path)}`, p.message);
  return undefined;
}

const pathText = (path: readonly (string | number)[]): string => path.map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`)).join('');

/** `driftIgnore`: rules whose every problem is reported at the line of the value it is about. */
export function readDriftIgnore(ctx: EntryContext, fields: FieldNodes): readonly DriftIgnoreRule[] {
  const node = fields.driftIgnore;
  if (isEmpty(node) || node === undefined) return [];
  let value: unknown;
  try {
    value = node.toJS(ctx.pc.doc);
  } catch (err) {
    fail(ctx, node, 'driftIgnore', (err as Error).message);
    return [];
  }
  const result = validateDriftIgnoreRules(value, WATCH_DRIFT_IGNORE_LIMITS);
  if (result.ok) return result.rules;
  for (const p of result.problems) fail(ctx, nodeAt(ctx.pc.doc, node, p.path), `driftIgnore${pathText(p.path)}`, p.message);
  return [];
}
