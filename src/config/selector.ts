/**
 * Kubernetes `metav1.LabelSelector`: validation with the API server's rules, and conversion to the
 * `labelSelector=` query form used for list/watch requests.
 */
import { isPlainObject } from '../util/plain-object.js';

export type LabelSelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: LabelSelectorOperator;
  /** Required and non-empty for In/NotIn; absent or empty for Exists/DoesNotExist. */
  readonly values?: readonly string[];
}

/** All requirements are ANDed. An empty selector matches everything. */
export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

/** One thing wrong with a selector; `path` leads from the selector to the offending value. */
export interface SelectorProblem {
  readonly path: readonly (string | number)[];
  readonly message: string;
}

export type LabelSelectorValidation =
  { readonly ok: true; readonly selector: LabelSelector } | { readonly ok: false; readonly problems: readonly SelectorProblem[] };

const OPERATORS: readonly LabelSelectorOperator[] = ['In', 'NotIn', 'Exists', 'DoesNotExist'];
const SELECTOR_FIELDS = ['matchLabels', 'matchExpressions'];
const REQUIREMENT_FIELDS = ['key', 'operator', 'values'];

// The same expressions and limits as k8s.io/apimachinery/pkg/util/validation.
const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_MAX = 63;
const SUBDOMAIN_MAX = 253;
const NAME_RULE = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

type Path = readonly (string | number)[];
type Sink = (path: Path, message: string) => void;

function describe(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a map';
  return `${typeof v} ${JSON.stringify(v)}`;
}

/** Problems with a label key (`[prefix/]name`), per `IsQualifiedName`; empty when valid. */
export function labelKeyProblems(key: string): string[] {
  const parts = key.split('/');
  if (parts.length > 2) return [`label key ${JSON.stringify(key)} may contain at most one '/'`];
  const name = parts.length === 2 ? (parts[1] ?? '') : key;
  const problems: string[] = [];
  if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    if (prefix === '') problems.push(`label key ${JSON.stringify(key)} has an empty prefix before '/'`);
    else if (prefix.length > SUBDOMAIN_MAX || !DNS1123_SUBDOMAIN.test(prefix))
      problems.push(
        `label key prefix ${JSON.stringify(prefix)} must be a DNS subdomain (lower-case alphanumerics, '-' and '.', at most 253 characters)`,
      );
  }
  if (name === '') problems.push(`label key ${JSON.stringify(key)} has an empty name`);
  else if (name.length > NAME_MAX) problems.push(`label key name ${JSON.stringify(name)} is longer than 63 characters`);
  else if (!NAME_PART.test(name)) problems.push(`label key name ${JSON.stringify(name)} ${NAME_RULE}`);
  return problems;
}

/** Problems with a label value (empty is allowed); empty when valid. */
export function labelValueProblems(value: string): string[] {
  if (value === '') return [];
  if (value.length > NAME_MAX) return [`label value ${JSON.stringify(value)} is longer than 63 characters`];
  return NAME_PART.test(value) ? [] : [`label value ${JSON.stringify(value)} ${NAME_RULE}`];
}

function reportUnknownFields(obj: Record<string, unknown>, known: readonly string[], path: Path, report: Sink): void {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) report([...path, key], `unknown field ${JSON.stringify(key)}; expected one of ${known.join(', ')}`);
  }
}

function checkMatchLabels(value: unknown, report: Sink): Record<string, string> | undefined {
  if (value === null || value === undefined) return undefined;
  if (!isPlainObject(value)) {
    report(['matchLabels'], `must be a map of label keys to values, got ${describe(value)}`);
    return undefined;
  }
  const labels: Record<string, string> = {};
  for (const [key, v] of Object.entries(value)) {
    for (const p of labelKeyProblems(key)) report(['matchLabels', key], p);
    if (typeof v !== 'string') {
      report(['matchLabels', key], `label value must be a string, got ${describe(v)} (quote it)`);
      continue;
    }
    for (const p of labelValueProblems(v)) report(['matchLabels', key], p);
    labels[key] = v;
  }
  return labels;
}

function checkOperator(value: unknown, path: Path, report: Sink): LabelSelectorOperator | undefined {
  if (typeof value === 'string' && (OPERATORS as readonly string[]).includes(value)) return value as LabelSelectorOperator;
  if (value === undefined || value === null) {
    report(path, `operator is required; expected one of ${OPERATORS.join(', ')}`);
    return undefined;
  }
  const hint = OPERATORS.find((op) => typeof value === 'string' && op.toLowerCase() === value.toLowerCase());
  const suffix = hint === undefined ? '' : ` (did you mean ${JSON.stringify(hint)}?)`;
  report(path, `unknown operator ${describe(value)}; expected one of ${OPERATORS.join(', ')}${suffix}`);
  return undefined;
}

function checkValues(value: unknown, path: Path, report: Sink): string[] | undefined {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) {
    report(path, `must be a list of strings, got ${describe(value)}`);
    return undefined;
  }
  const out: string[] = [];
  value.forEach((v: unknown, i) => {
    if (typeof v !== 'string') report([...path, i], `must be a string, got ${describe(v)} (quote it)`);
    else {
      for (const p of labelValueProblems(v)) report([...path, i], p);
      out.push(v);
    }
  });
  return out;
}

function checkOperatorValues(operator: LabelSelectorOperator, values: readonly string[], path: Path, report: Sink): void {
  const needsValues = operator === 'In' || operator === 'NotIn';
  if (needsValues && values.length === 0) report(path, `operator ${operator} needs at least one value`);
  if (!needsValues && values.length > 0) report(path, `operator ${operator} takes no values`);
}

function checkRequirement(value: unknown, path: Path, report: Sink): LabelSelectorRequirement | undefined {
  if (!isPlainObject(value)) {
    report(path, `must be a map with key, operator and values, got ${describe(value)}`);
    return undefined;
  }
  reportUnknownFields(value, REQUIREMENT_FIELDS, path, report);
  const key = value['key'];
  if (typeof key !== 'string' || key === '') report([...path, 'key'], `key is required and must be a string`);
  else for (const p of labelKeyProblems(key)) report([...path, 'key'], p);
  const operator = checkOperator(value['operator'], [...path, 'operator'], report);
  const values = checkValues(value['values'], [...path, 'values'], report);
  if (operator === undefined || values === undefined || typeof key !== 'string') return undefined;
  checkOperatorValues(operator, values, [...path, 'values'], report);
  return values.length === 0 ? { key, operator } : { key, operator, values };
}

function checkMatchExpressions(value: unknown, report: Sink): LabelSelectorRequirement[] | undefined {
  if (value === null || value === undefined) return undefined;
  if (!Array.isArray(value)) {
    report(['matchExpressions'], `must be a list of {key, operator, values}, got ${describe(value)}`);
    return undefined;
  }
  const out: LabelSelectorRequirement[] = [];
  value.forEach((item: unknown, i) => {
    const req = checkRequirement(item, ['matchExpressions', i], report);
    if (req !== undefined) out.push(req);
  });
  return out;
}

/**
 * Checks an untyped value (e.g. parsed YAML) against `metav1.LabelSelector` and the API server's
 * rules: label key and value syntax, known operators, In/NotIn with at least one value,
 * Exists/DoesNotExist with none, no unknown fields. `null`/`undefined` is the empty selector.
 * Every problem is reported, not just the first.
 */
export function validateLabelSelector(value: unknown): LabelSelectorValidation {
  if (value === null || value === undefined) return { ok: true, selector: {} };
  const problems: SelectorProblem[] = [];
  const report: Sink = (path, message) => problems.push({ path, message });
  if (!isPlainObject(value)) {
    report([], `must be a map with matchLabels and/or matchExpressions, got ${describe(value)}`);
    return { ok: false, problems };
  }
  reportUnknownFields(value, SELECTOR_FIELDS, [], report);
  const matchLabels = checkMatchLabels(value['matchLabels'], report);
  const matchExpressions = checkMatchExpressions(value['matchExpressions'], report);
  if (problems.length > 0) return { ok: false, problems };
  const selector: { matchLabels?: Record<string, string>; matchExpressions?: LabelSelectorRequirement[] } = {};
  if (matchLabels !== undefined) selector.matchLabels = matchLabels;
  if (matchExpressions !== undefined) selector.matchExpressions = matchExpressions;
  return { ok: true, selector };
}

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function requirementToString(req: LabelSelectorRequirement): string {
  // Values form a set on the server side: sorted and de-duplicated, as apimachinery prints them.
  const values = [...new Set(req.values ?? [])].sort(byCodePoint).join(',');
  switch (req.operator) {
    case 'In':
      return `${req.key} in (${values})`;
    case 'NotIn':
      return `${req.key} notin (${values})`;
    case 'Exists':
      return req.key;
    case 'DoesNotExist':
      return `!${req.key}`;
  }
}

/**
 * The selector in the `labelSelector=` query form (`a=b,env in (dev,prod),!x`), as
 * `metav1.LabelSelectorAsSelector(...).String()` prints it: requirements sorted by key (ties by
 * their text, so the output is deterministic), values sorted. The empty selector gives `''`
 * (everything). Assumes a selector that passed {@link validateLabelSelector}.
 */
export function labelSelectorToString(selector: LabelSelector): string {
  const labels = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => ({ key, text: `${key}=${value}` }));
  const expressions = (selector.matchExpressions ?? []).map((req) => ({ key: req.key, text: requirementToString(req) }));
  return [...labels, ...expressions]
    .sort((a, b) => byCodePoint(a.key, b.key) || byCodePoint(a.text, b.text))
    .map((r) => r.text)
    .join(',');
}

/** Pure: whether `labels` satisfy every requirement of `selector` (the empty selector matches everything). */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return byLabel && (selector.matchExpressions ?? []).every((r) => requirementMatches(r, labels[r.key]));
}

function requirementMatches(req: LabelSelectorRequirement, value: string | undefined): boolean {
  switch (req.operator) {
    case 'In':
      return value !== undefined && (req.values ?? []).includes(value);
    case 'NotIn':
      return value === undefined || !(req.values ?? []).includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
  }
}
