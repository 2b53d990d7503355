/**
 * watches.yaml: the list that maps each custom resource kind to the Helm chart that implements it.
 *
 * Field meanings follow operator-sdk's Helm operator, with deliberate differences:
 * - validation is strict: unknown keys, wrong types and bad values are errors (operator-sdk silently
 *   ignores unknown keys), and every problem is reported at once with file:line:column;
 * - `chart` may also be a `.tgz` archive, and a relative path resolves from the watches file's directory;
 * - `overrideValues` get `$VAR`/`${VAR}` expansion but no Go templates;
 * - `maxConcurrentReconciles` (from helm-operator-plugins) is honoured per watch;
 * - `dryRunOption: server` needs `confineToNamespace: true`: upgrades are decided by a fingerprint,
 *   not by a dry-run render, so the only render it can change is the confinement pre-flight.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, Scalar, type Document, type Node, type YAMLMap } from 'yaml';
import { ChartError, loadChartInfo, type ChartInfo } from './chart.js';
import { DurationError, formatDuration, parseDuration } from './duration.js';
import { valuePathProblem } from './value-path.js';
import { labelSelectorToString, validateLabelSelector, type LabelSelector } from './selector.js';

export interface Watch {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly chart: ChartInfo;
  /** Whether to watch the release's resources and repair drift; default true. */
  readonly watchDependentResources: boolean;
  /**
   * Ours, the migration switch from operator-sdk's Helm operator: a CR takes over the release of
   * its name and chart that this operator did not install. Left out (false) by default, when such
   * a release is reported `ReleaseNotOwned` and never upgraded nor uninstalled (ADR 0042).
   */
  readonly adoptReleases?: boolean;
  /** After `$VAR`/`${VAR}` expansion (unset variables expand to ""); `--set-string` semantics. */
  readonly overrideValues: Readonly<Record<string, string>>;
  readonly selector?: LabelSelector;
  /** `selector` in query form; '' selects everything. */
  readonly labelSelector: string;
  /** Undefined when absent or zero: both mean "use the operator-wide reconcile period". */
  readonly reconcilePeriodMs?: number;
  /** Integer >= 1; undefined means the operator-wide default. */
  readonly maxConcurrentReconciles?: number;
  /**
   * How the `confineToNamespace` pre-flight renders the release: 'client' (offline `helm
   * template`) or 'server' (helm's server-side dry run, as the release's identity, so `lookup()`
   * sees the cluster). '' / absent / 'none' all mean 'client'; 'server' is refused without
   * `confineToNamespace: true`, the only render there is.
   */
  readonly dryRunOption: 'client' | 'server';
  /**
   * Ours: helm and every write to the release's objects run as this ServiceAccount of the CR's
   * namespace (impersonation), so its RBAC, not the operator's, bounds what a CR can create.
   */
  readonly serviceAccountName?: string;
  /**
   * Ours: refuse, before helm runs, a release that renders an object into another namespace or
   * a cluster-scoped object whose kind is not in `allowClusterScoped`.
   */
  readonly confineToNamespace: boolean;
  /** `Kind` (core group) or `Kind.group`: cluster-scoped kinds a confined release may create. */
  readonly allowClusterScoped: readonly string[];
  /**
   * Ours: `Kind` (core group) or `Kind.group`: the only kinds helm may create, change or delete
   * for a CR of this watch, enforced by the helm gateway (docs/adr/0045); undefined: any kind.
   */
  readonly allowKinds?: readonly string[];
  /**
   * Ours: dotted value paths (`auth.password`, `tls`) whose values, whatever set them (spec,
   * overrideValues, values-from), never show in status, events or logs, error text included.
   */
  readonly sensitiveValues: readonly string[];
  /**
   * Ours: let helm fetch what the chart's (and subcharts') `values.schema.json` references outside
   * itself (`$ref` to http(s) or file URLs) at every install and upgrade; refused by default.
   */
  readonly allowSchemaRefs: boolean;
  /** Where the entry was defined; `index` is 0-based, `line` 1-based. */
  readonly source: { readonly file: string; readonly index: number; readonly line: number };
}

export interface WatchesProblem {
  readonly file: string;
  /** 1-based. */
  readonly line?: number;
  /** 1-based. */
  readonly column?: number;
  /** 0-based index of the entry in the list. */
  readonly entry?: number;
  /** `group/version, Kind=Kind` (Go's GroupVersionKind.String) when known. */
  readonly gvk?: string;
  /** Dotted path to the value, e.g. `selector.matchExpressions[0].operator`. */
  readonly field?: string;
  /** The problem on its own. */
  readonly reason: string;
  /** `file:line:column: entry N (gvk): field "f": reason`. */
  readonly message: string;
}

/** A watches file that cannot be used; `problems` lists everything wrong, in file order. */
export class WatchesError extends Error {
  override readonly name = 'WatchesError';
  readonly file: string;
  /** Of the first problem, like the fields below. */
  readonly line?: number;
  readonly column?: number;
  readonly entry?: number;
  readonly field?: string;
  readonly problems: readonly WatchesProblem[];

  constructor(file: string, problems: readonly WatchesProblem[], options?: ErrorOptions) {
    const n = problems.length;
    super([`invalid watches file ${file}: ${n} problem${n === 1 ? '' : 's'}`, ...problems.map((p) => p.message)].join('\n'), options);
    this.file = file;
    this.problems = problems;
    const first = problems[0];
    this.line = first?.line;
    this.column = first?.column;
    this.entry = first?.entry;
    this.field = first?.field;
  }
}

export interface ParseWatchesOptions {
  /** Shown in messages and recorded in `Watch.source.file`. */
  readonly file: string;
  /** For `$VAR` expansion in overrideValues; defaults to `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
  /** Where relative chart paths resolve from; defaults to the directory of `file`. */
  readonly baseDir?: string;
}

const FIELDS = [
  'group',
  'version',
  'kind',
  'chart',
  'watchDependentResources',
  'adoptReleases',
  'overrideValues',
  'sensitiveValues',
  'selector',
  'reconcilePeriod',
  'maxConcurrentReconciles',
  'dryRunOption',
  'serviceAccountName',
  'confineToNamespace',
  'allowClusterScoped',
  'allowKinds',
  'allowSchemaRefs',
] as const;
type FieldName = (typeof FIELDS)[number];

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;
const DRY_RUN_OPTIONS = ['', 'client', 'none', 'server'];

const quote = (s: string): string => JSON.stringify(s);

/**
 * The shortest non-zero period watches.yaml or `--reconcile-period` may set (docs/adr/0046). A
 * resync of an unchanged release runs no helm but still reads the CR and the release's records:
 * below a second every CR of the kind would reconcile in a busy loop, and `1ms` is far likelier a
 * typo of `1m` than a wish.
 */
export const MIN_RECONCILE_PERIOD_MS = 1_000;

/** Why a period of the operator's own configuration is refused ("<value> is ..."), or undefined. */
export function periodFloorProblem(ms: number, zeroAllowed = true): string | undefined {
  if ((ms === 0 && zeroAllowed) || ms >= MIN_RECONCILE_PERIOD_MS) return undefined;
  return `shorter than the ${formatDuration(MIN_RECONCILE_PERIOD_MS)} floor: every CR would be reconciled in a busy loop`;
}

// ---------------------------------------------------------------------------------------------
// Environment expansion

const isShellSpecial = (c: string): boolean => '*#$@!?-0123456789'.includes(c);
const isNameChar = (c: string): boolean => /^[A-Za-z0-9_]$/.test(c);

/** Go's `getShellName`: the variable name after a `$`, and how many characters it spans. */
function shellName(s: string): { readonly name: string; readonly width: number } {
  if (s.startsWith('{')) {
    if (s.length > 2 && isShellSpecial(s.charAt(1)) && s.charAt(2) === '}') return { name: s.charAt(1), width: 3 };
    const close = s.indexOf('}');
    if (close === 1) return { name: '', width: 2 }; // "${}": bad syntax, eaten
    if (close < 0) return { name: '', width: 1 }; // "${" unclosed: bad syntax, "${" eaten
    return { name: s.slice(1, close), width: close + 1 };
  }
  if (s !== '' && isShellSpecial(s.charAt(0))) return { name: s.charAt(0), width: 1 };
  let i = 0;
  while (i < s.length && isNameChar(s.charAt(i))) i++;
  return { name: s.slice(0, i), width: i };
}

/**
 * `$VAR` and `${VAR}` expansion with exactly Go's `os.ExpandEnv` semantics, which operator-sdk
 * applies to overrideValues. Unset variables expand to "". Note that `$$` is NOT an escape in Go:
 * it is the special variable `$`, normally unset, so `$$` expands to "" (we keep that, so a
 * watches file means the same under both operators). A `$` not followed by a name stays as is.
 */
export function expandEnv(text: string, env: NodeJS.ProcessEnv): string {
  let out = '';
  let from = 0;
  for (let j = 0; j < text.length; j++) {
    if (text.charAt(j) !== '$' || j + 1 >= text.length) continue;
    out += text.slice(from, j);
    const { name, width } = shellName(text.slice(j + 1));
    if (name !== '') out += env[name] ?? '';
    else if (width === 0) out += '$';
    j += width;
    from = j + 1;
  }
  return out + text.slice(from);
}

// ---------------------------------------------------------------------------------------------
// Suggestions

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost));
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/** The known name a misspelt one most likely meant, if any is close enough to be worth saying. */
export function closestName(word: string, known: readonly string[]): string | undefined {
  const norm = (s: string): string => s.toLowerCase().replace(/[-_ ]/g, '');
  const w = norm(word);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const c = norm(candidate);
    // "labelSelector" → "selector", "reconcilePeriodSeconds" → "reconcilePeriod".
    const contains = Math.min(c.length, w.length) >= 4 && (w.includes(c) || c.includes(w));
    const distance = w === c ? 0 : contains ? 1 : editDistance(w, c);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

// ---------------------------------------------------------------------------------------------
// Problem reporting

interface ParseContext {
  readonly file: string;
  readonly doc: Document;
  readonly lines: LineCounter;
  readonly env: NodeJS.ProcessEnv;
  readonly problems: WatchesProblem[];
}

interface EntryContext {
  readonly pc: ParseContext;
  readonly index: number;
  readonly node: YAMLMap;
  readonly gvk?: string;
}

interface ProblemInput {
  /** The node the problem is about; falls back to the entry. */
  readonly node?: Node | null;
  readonly field?: string;
  /** False when the reason already names the field (unknown fields). */
  readonly showField?: boolean;
  readonly reason: string;
}

function formatProblem(p: Omit<WatchesProblem, 'message'>, showField: boolean): string {
  const parts = [p.line === undefined ? p.file : `${p.file}:${p.line}:${p.column ?? 1}`];
  if (p.entry !== undefined) parts.push(p.gvk === undefined ? `entry ${p.entry}` : `entry ${p.entry} (${p.gvk})`);
  if (showField && p.field !== undefined) parts.push(`field ${quote(p.field)}`);
  parts.push(p.reason);
  return parts.join(': ');
}

function addProblem(pc: ParseContext, entry: EntryContext | undefined, input: ProblemInput): void {
  const offset = (input.node ?? entry?.node)?.range?.[0];
  const pos = offset === undefined ? undefined : pc.lines.linePos(offset);
  const base = {
    file: pc.file,
    line: pos?.line,
    column: pos?.col,
    entry: entry?.index,
    gvk: entry?.gvk,
    field: input.field,
    reason: input.reason,
  };
  pc.problems.push({ ...base, message: formatProblem(base, input.showField ?? true) });
}

const fail = (ctx: EntryContext, node: Node | null | undefined, field: string, reason: string): void => {
  addProblem(ctx.pc, ctx, { node, field, reason });
};

// ---------------------------------------------------------------------------------------------
// Node helpers

/** Follows an alias to its anchor; undefined when the anchor does not exist. */
function deref(doc: Document, node: unknown): Node | undefined {
  if (isAlias(node)) return node.resolve(doc);
  return isScalar(node) || isMap(node) || isSeq(node) ? node : undefined;
}

/**
 * A pair's value node. A key with no value at all (`? key`) gets a null scalar at the key's
 * position, so it reads like `key:` (present but empty); undefined for a dangling alias.
 */
function valueNode(doc: Document, value: unknown, keyNode: Node | undefined): Node | undefined {
  if (value !== null && value !== undefined) return deref(doc, value);
  const empty = new Scalar(null);
  empty.range = keyNode?.range ?? null;
  return empty;
}

/** The scalar's value (`null` for an empty value), or undefined for collections. */
const scalarValue = (node: Node | undefined): unknown => (isScalar(node) ? node.value : undefined);

const isEmpty = (node: Node | undefined): boolean => node === undefined || (isScalar(node) && node.value === null);

function describe(node: Node | undefined): string {
  if (isMap(node)) return 'a map';
  if (isSeq(node)) return 'a list';
  if (!isScalar(node) || node.value === null || node.value === undefined) return 'null';
  const value: unknown = node.value;
  if (typeof value === 'string') return `string ${quote(value)}`;
  // As written, so `1.10` is not shown as 1.1.
  return `${typeof value} ${node.source ?? JSON.stringify(value)}`;
}

function posLine(pc: ParseContext, node: Node): number {
  return pc.lines.linePos(node.range?.[0] ?? 0).line;
}

function gvkString(group: string, version: string, kind: string): string {
  return `${group}/${version}, Kind=${kind}`;
}

// ---------------------------------------------------------------------------------------------
// Fields

type FieldNodes = Partial<Record<FieldName, Node>>;

function collectFields(ctx: EntryContext): FieldNodes {
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
function readString(ctx: EntryContext, fields: FieldNodes, field: FieldName, required: boolean): string | undefined {
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

function readGroup(ctx: EntryContext, fields: FieldNodes): string {
  const group = readString(ctx, fields, 'group', false) ?? '';
  if (group !== '' && (group.length > 253 || !DNS1123_SUBDOMAIN.test(group)))
    fail(ctx, fields.group, 'group', `group ${quote(group)} must be empty (the core group) or a DNS subdomain: lower-case letters, digits, '-' and '.', e.g. "example.com"`);
  return group;
}

function readVersion(ctx: EntryContext, fields: FieldNodes): string | undefined {
  const version = readString(ctx, fields, 'version', true);
  if (version === undefined || version === '') return undefined;
  if (version.length > 63 || !DNS1035_LABEL.test(version)) {
    fail(ctx, fields.version, 'version', `version ${quote(version)} must be a DNS label starting with a letter (lower-case letters, digits and '-'), e.g. "v1alpha1"`);
    return undefined;
  }
  return version;
}

function readKind(ctx: EntryContext, fields: FieldNodes): string | undefined {
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

function readBoolean(ctx: EntryContext, fields: FieldNodes, field: FieldName, fallback: boolean): boolean {
  const node = fields[field];
  if (isEmpty(node)) return fallback;
  const value = scalarValue(node);
  if (typeof value === 'boolean') return value;
  fail(ctx, node, field, `expected true or false, got ${describe(node)}`);
  return fallback;
}

function readReconcilePeriod(ctx: EntryContext, fields: FieldNodes): number | undefined {
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

function readMaxConcurrent(ctx: EntryContext, fields: FieldNodes): number | undefined {
  const node = fields.maxConcurrentReconciles;
  if (isEmpty(node)) return undefined;
  const value = scalarValue(node);
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) return value;
  fail(ctx, node, 'maxConcurrentReconciles', `expected a whole number of at least 1, got ${describe(node)}`);
  return undefined;
}

/**
 * operator-sdk's `dryRunOption` chooses how its upgrade-detection dry run renders. This operator
 * decides upgrades by a fingerprint of the chart and values and renders nothing for that; its only
 * render is the `confineToNamespace` pre-flight, which `server` makes a server-side dry run.
 * Anywhere else `server` would be parsed and do nothing, so it is refused; `confine` is false only
 * when the entry says false or nothing (a malformed value is reported on its own).
 */
function readDryRun(ctx: EntryContext, fields: FieldNodes, confine: boolean): 'client' | 'server' {
  const node = fields.dryRunOption;
  if (isEmpty(node)) return 'client';
  const value = scalarValue(node);
  if (value === 'server') {
    const confineNode = fields.confineToNamespace;
    if (!confine && (isEmpty(confineNode) || scalarValue(confineNode) === false)) {
      fail(
        ctx,
        node,
        'dryRunOption',
        'server has no effect without confineToNamespace: true: this operator decides upgrades by a fingerprint of the chart and values, not by a dry-run render, so the only dry run is the confineToNamespace pre-flight render; set confineToNamespace: true or remove dryRunOption',
      );
    }
    return 'server';
  }
  if (typeof value === 'string' && DRY_RUN_OPTIONS.includes(value)) return 'client';
  const hint = typeof value === 'string' ? DRY_RUN_OPTIONS.find((o) => o === value.toLowerCase()) : undefined;
  const suffix = hint === undefined ? '' : ` (did you mean ${quote(hint)}?)`;
  fail(ctx, node, 'dryRunOption', `expected one of "", "client", "none", "server", got ${describe(node)}${suffix}`);
  return 'client';
}

/** Whether `name` can name a ServiceAccount (a DNS-1123 subdomain). */
export const isServiceAccountName = (name: string): boolean => name.length <= 253 && DNS1123_SUBDOMAIN.test(name);

function readTenancy(ctx: EntryContext, fields: FieldNodes): Pick<Watch, 'serviceAccountName' | 'confineToNamespace' | 'allowClusterScoped' | 'allowKinds'> {
  const sa = readString(ctx, fields, 'serviceAccountName', false);
  if (sa !== undefined && sa !== '' && !isServiceAccountName(sa)) {
    fail(ctx, fields.serviceAccountName, 'serviceAccountName', `${quote(sa)} is not a ServiceAccount name: lower-case letters, digits, '-' and '.'`);
  }
  const confine = readBoolean(ctx, fields, 'confineToNamespace', false);
  const allowed = readKindList(ctx, fields, 'allowClusterScoped');
  if (allowed.length > 0 && !confine) {
    fail(ctx, fields.allowClusterScoped, 'allowClusterScoped', 'has no effect without confineToNamespace: true');
  }
  const kinds = isEmpty(fields.allowKinds) ? undefined : readKindList(ctx, fields, 'allowKinds');
  const allowKindsNode = fields.allowKinds;
  if (isSeq(allowKindsNode) && allowKindsNode.items.length === 0) fail(ctx, allowKindsNode, 'allowKinds', 'an empty list would refuse every object of every release; list the kinds the chart renders, or remove the key');
  return {
    ...(sa === undefined || sa === '' ? {} : { serviceAccountName: sa }),
    confineToNamespace: confine,
    allowClusterScoped: allowed,
    ...(kinds === undefined ? {} : { allowKinds: kinds }),
  };
}

/** `allowClusterScoped` or `allowKinds`: a list of `Kind` or `Kind.group`. */
function readKindList(ctx: EntryContext, fields: FieldNodes, field: 'allowClusterScoped' | 'allowKinds'): string[] {
  const node = fields[field];
  if (isEmpty(node)) return [];
  if (!isSeq(node)) {
    fail(ctx, node, field, `expected a list of kinds such as "ClusterRole.rbac.authorization.k8s.io", got ${describe(node)}`);
    return [];
  }
  const kinds: string[] = [];
  node.items.forEach((item, i) => {
    const itemNode = deref(ctx.pc.doc, item);
    const value = scalarValue(itemNode);
    const [kind = '', ...group] = typeof value === 'string' ? value.split('.') : [];
    if (typeof value !== 'string' || !KIND.test(kind) || (group.length > 0 && !DNS1123_SUBDOMAIN.test(group.join('.')))) {
      fail(ctx, itemNode, `${field}[${i}]`, `expected "Kind" (core group) or "Kind.group", got ${describe(itemNode)}`);
      return;
    }
    kinds.push(value);
  });
  return kinds;
}

/** `sensitiveValues`: a list of dotted value paths, each segment non-empty. */
function readValuePaths(ctx: EntryContext, fields: FieldNodes): string[] {
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
      fail(ctx, itemNode, `sensitiveValues[${i}]`, `expected a value path such as "auth.password" (keys joined by "."), got ${describe(itemNode)}`);
      return;
    }
    paths.push(value);
  });
  return paths;
}

function readSelector(ctx: EntryContext, fields: FieldNodes): LabelSelector | undefined {
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

const pathText = (path: readonly (string | number)[]): string =>
  path.map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`)).join('');

/** The deepest node along `path` (so a problem about a missing key points at its parent). */
function nodeAt(doc: Document, root: Node, path: readonly (string | number)[]): Node {
  let current = root;
  for (const segment of path) {
    const next = isMap(current) || isSeq(current) ? deref(doc, current.get(segment, true)) : undefined;
    if (next === undefined) break;
    current = next;
  }
  return current;
}

// ---------------------------------------------------------------------------------------------
// overrideValues

function overrideValueProblem(doc: Document, node: Node | undefined, key: string): string | undefined {
  if (isMap(node)) {
    const first = scalarValue(deref(doc, node.items[0]?.key));
    const example = typeof first === 'string' ? `${key}.${first}` : `${key}.<name>`;
    return `nested maps are not supported; flatten them into dotted keys such as ${quote(example)}`;
  }
  if (isSeq(node)) return `lists are not supported; use indexed keys such as ${quote(`${key}[0]`)}`;
  if (isEmpty(node)) return `value is empty (null); write '' for an empty string`;
  return undefined;
}

/** The value as a string: scalars as written (`1.10` stays "1.10", as Go's YAML decoding keeps it). */
function overrideValueText(node: Node | undefined): string | undefined {
  const value = scalarValue(node);
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return isScalar(node) && node.source !== undefined && node.source !== '' ? node.source : String(value);
  return undefined;
}

function readOverrideValue(ctx: EntryContext, key: string, node: Node | undefined): string | undefined {
  const field = `overrideValues.${key}`;
  const problem = overrideValueProblem(ctx.pc.doc, node, key);
  const raw = problem === undefined ? overrideValueText(node) : undefined;
  if (raw === undefined) {
    fail(ctx, node, field, problem ?? `expected a string, number or boolean, got ${describe(node)}`);
    return undefined;
  }
  if (raw.includes('{{')) {
    fail(ctx, node, field, 'Go templates in overrideValues are not supported; use $VAR expansion (e.g. "$IMAGE") instead');
    return undefined;
  }
  return expandEnv(raw, ctx.pc.env);
}

function readOverrideValues(ctx: EntryContext, fields: FieldNodes): Record<string, string> {
  const node = fields.overrideValues;
  const out: Record<string, string> = {};
  if (isEmpty(node)) return out;
  if (!isMap(node)) {
    fail(ctx, node, 'overrideValues', `expected a map of value paths to strings, got ${describe(node)}`);
    return out;
  }
  for (const pair of node.items) {
    const keyNode = deref(ctx.pc.doc, pair.key);
    const key = scalarValue(keyNode);
    const problem = typeof key === 'string' ? valuePathProblem(key) : describe(keyNode);
    if (typeof key !== 'string' || problem !== undefined) {
      const shown = typeof key === 'string' ? quote(key) : describe(keyNode);
      fail(ctx, keyNode, 'overrideValues', `key ${shown} is not a value path (${problem}): use dotted names with optional [index], e.g. "image.tag" or "args[0]"`);
      continue;
    }
    const value = readOverrideValue(ctx, key, valueNode(ctx.pc.doc, pair.value, keyNode));
    if (value !== undefined) out[key] = value;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Entries

interface Draft {
  readonly index: number;
  readonly line: number;
  readonly node: YAMLMap;
  readonly ctx: EntryContext;
  readonly group: string;
  readonly version?: string;
  readonly kind?: string;
  readonly chartPath?: string;
  readonly rest: Omit<Watch, 'group' | 'version' | 'kind' | 'chart' | 'source'>;
}

function entryGvk(doc: Document, node: YAMLMap): string | undefined {
  const text = (key: string): unknown => scalarValue(deref(doc, node.get(key, true)));
  const group = text('group') ?? '';
  const version = text('version');
  const kind = text('kind');
  if (typeof kind !== 'string' || kind === '') return undefined;
  if (typeof version !== 'string' || typeof group !== 'string') return `Kind=${kind}`;
  return gvkString(group, version, kind);
}

function readEntry(pc: ParseContext, index: number, node: YAMLMap): Draft {
  const ctx: EntryContext = { pc, index, node, gvk: entryGvk(pc.doc, node) };
  const fields = collectFields(ctx);
  const group = readGroup(ctx, fields);
  const version = readVersion(ctx, fields);
  const kind = readKind(ctx, fields);
  const chartPath = readString(ctx, fields, 'chart', true);
  const selector = readSelector(ctx, fields);
  const reconcilePeriodMs = readReconcilePeriod(ctx, fields);
  const maxConcurrentReconciles = readMaxConcurrent(ctx, fields);
  const tenancy = readTenancy(ctx, fields);
  // Optional fields are left out rather than set to undefined, so `'selector' in watch` means something.
  const rest = {
    watchDependentResources: readBoolean(ctx, fields, 'watchDependentResources', true),
    ...(readBoolean(ctx, fields, 'adoptReleases', false) ? { adoptReleases: true } : {}),
    overrideValues: readOverrideValues(ctx, fields),
    sensitiveValues: readValuePaths(ctx, fields),
    ...(selector === undefined ? {} : { selector }),
    labelSelector: selector === undefined ? '' : labelSelectorToString(selector),
    ...(reconcilePeriodMs === undefined ? {} : { reconcilePeriodMs }),
    ...(maxConcurrentReconciles === undefined ? {} : { maxConcurrentReconciles }),
    dryRunOption: readDryRun(ctx, fields, tenancy.confineToNamespace),
    ...tenancy,
    allowSchemaRefs: readBoolean(ctx, fields, 'allowSchemaRefs', false),
  };
  return { index, line: posLine(pc, node), node, ctx, group, version, kind, chartPath: chartPath === '' ? undefined : chartPath, rest };
}

/**
 * One controller per GroupKind: a repeated GVK is an error, and so is the same group and kind at
 * another version, because the API server serves the same objects under every version of a CRD
 * and two controllers would fight over one release.
 */
function checkDuplicates(drafts: readonly Draft[]): void {
  const seen = new Map<string, Draft>();
  for (const d of drafts) {
    if (d.version === undefined || d.kind === undefined) continue;
    const key = `${d.group}/${d.kind}`;
    const first = seen.get(key);
    if (first === undefined) {
      seen.set(key, d);
      continue;
    }
    const gvk = gvkString(d.group, d.version, d.kind);
    const where = `entry ${first.index} (line ${first.line})`;
    const kindNode = deref(d.ctx.pc.doc, d.node.get('kind', true));
    const reason =
      first.version === d.version
        ? `duplicate GVK ${gvk}: also defined by ${where}`
        : `kind ${d.kind} of group ${quote(d.group)} is already watched at version ${first.version} by ${where}; a kind may be watched once, since every version serves the same objects`;
    addProblem(d.ctx.pc, d.ctx, { node: kindNode, field: 'kind', reason });
  }
}

/**
 * Why a loaded chart may not run under a watch, or undefined. The chart's `values.schema.json`
 * references that point outside it are fetched by helm (http, https, file) at every install and
 * upgrade: a network call to wherever the chart's author chose, or a file of the operator's host.
 */
export function chartRefusal(chart: ChartInfo, allowSchemaRefs: boolean): string | undefined {
  const refs = chart.schemaRefs ?? [];
  if (refs.length === 0 || allowSchemaRefs) return undefined;
  const shown = refs.slice(0, 3).map((r) => `${r.keyword} ${quote(r.ref)} in ${r.file}`);
  const more = refs.length > shown.length ? ` and ${refs.length - shown.length} more` : '';
  return `chart ${quote(chart.path)}: helm would fetch, at every install and upgrade, what its values schema references outside itself: ${shown.join(', ')}${more}; inline those definitions into the schema, or set allowSchemaRefs: true to let helm fetch them`;
}

async function loadCharts(drafts: readonly Draft[], baseDir: string): Promise<Map<Draft, ChartInfo>> {
  const cache = new Map<string, Promise<ChartInfo>>();
  const charts = new Map<Draft, ChartInfo>();
  await Promise.all(
    drafts.map(async (d) => {
      if (d.chartPath === undefined) return;
      const abs = resolve(baseDir, d.chartPath);
      const pending = cache.get(abs) ?? loadChartInfo(abs);
      cache.set(abs, pending);
      try {
        const chart = await pending;
        const refused = chartRefusal(chart, d.rest.allowSchemaRefs);
        if (refused === undefined) charts.set(d, chart);
        else fail(d.ctx, deref(d.ctx.pc.doc, d.node.get('chart', true)), 'chart', refused);
      } catch (err) {
        const reason = err instanceof ChartError ? err.message : `cannot load chart ${quote(abs)}: ${(err as Error).message}`;
        fail(d.ctx, deref(d.ctx.pc.doc, d.node.get('chart', true)), 'chart', reason);
      }
    }),
  );
  return charts;
}

// ---------------------------------------------------------------------------------------------
// Document

/** Parse errors, first line only: the location moves into our own `file:line:col:` prefix. */
function yamlProblems(pc: ParseContext): void {
  for (const err of pc.doc.errors) {
    const pos = err.linePos?.[0];
    const reason = (err.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    const base = { file: pc.file, line: pos?.line, column: pos?.col, reason };
    pc.problems.push({ ...base, message: formatProblem(base, false) });
  }
}

/** The list's items, or undefined after reporting why there is no usable list. */
function entryNodes(pc: ParseContext): readonly unknown[] | undefined {
  const root = pc.doc.contents;
  if (root === null || (isScalar(root) && root.value === null) || (isSeq(root) && root.items.length === 0)) {
    addProblem(pc, undefined, { node: root, reason: 'no watches defined: expected a list of entries with group, version, kind and chart' });
    return undefined;
  }
  if (!isSeq(root)) {
    addProblem(pc, undefined, { node: root, reason: `expected a list of watches (each entry starting with "- "), got ${describe(root)}` });
    return undefined;
  }
  return root.items;
}

function readEntries(pc: ParseContext, items: readonly unknown[]): Draft[] {
  const drafts: Draft[] = [];
  items.forEach((item, index) => {
    const node = deref(pc.doc, item);
    if (isMap(node)) drafts.push(readEntry(pc, index, node));
    else {
      const dangling = node === undefined && isAlias(item);
      const at = node ?? (isAlias(item) ? item : undefined);
      const problem = dangling ? 'alias refers to an unknown anchor' : `expected a map, got ${describe(node)}`;
      pc.problems.push(entryProblem(pc, index, at, `entry must be a map with group, version, kind and chart; ${problem}`));
    }
  });
  return drafts;
}

function entryProblem(pc: ParseContext, index: number, node: Node | undefined, reason: string): WatchesProblem {
  const pos = node?.range === undefined || node.range === null ? undefined : pc.lines.linePos(node.range[0]);
  const base = { file: pc.file, line: pos?.line, column: pos?.col, entry: index, reason };
  return { ...base, message: formatProblem(base, false) };
}

function byPosition(a: WatchesProblem, b: WatchesProblem): number {
  return (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0);
}

function toWatch(d: Draft, chart: ChartInfo, file: string): Watch {
  return {
    group: d.group,
    version: d.version ?? '',
    kind: d.kind ?? '',
    chart,
    ...d.rest,
    source: { file, index: d.index, line: d.line },
  };
}

/**
 * Parses and validates watches.yaml text, loading every chart it names.
 *
 * @throws {WatchesError} listing every problem found (YAML syntax, unknown fields with
 * suggestions, types, values, duplicates, charts), each with file, line and column.
 */
export async function parseWatches(text: string, options: ParseWatchesOptions): Promise<Watch[]> {
  const lines = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: true, lineCounter: lines, uniqueKeys: true });
  const pc: ParseContext = { file: options.file, doc, lines, env: options.env ?? process.env, problems: [] };
  yamlProblems(pc);
  const items = pc.problems.length === 0 ? entryNodes(pc) : undefined;
  if (items === undefined) throw new WatchesError(options.file, pc.problems);
  const drafts = readEntries(pc, items);
  checkDuplicates(drafts);
  // Relative chart paths resolve from the watches file's directory, not the process's working
  // directory. In operator-sdk layouts the two coincide (the image runs in /opt/helm next to
  // watches.yaml and helm-charts/), so nothing changes there, and `--watches-file` works from anywhere.
  const charts = await loadCharts(drafts, options.baseDir ?? dirname(resolve(options.file)));
  if (pc.problems.length > 0) throw new WatchesError(options.file, [...pc.problems].sort(byPosition));
  return drafts.map((d) => {
    const chart = charts.get(d);
    if (chart === undefined) throw new Error(`internal error: no chart for entry ${d.index}`);
    return toWatch(d, chart, options.file);
  });
}

/**
 * Reads and parses a watches file; relative chart paths resolve from its directory.
 *
 * @throws {WatchesError} when the file cannot be read or is invalid.
 */
export async function loadWatches(file: string, env?: NodeJS.ProcessEnv): Promise<Watch[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const reason = `cannot read watches file: ${(err as Error).message}`;
    throw new WatchesError(file, [{ file, reason, message: `${file}: ${reason}` }], { cause: err });
  }
  return parseWatches(text, { file, env, baseDir: dirname(resolve(file)) });
}
