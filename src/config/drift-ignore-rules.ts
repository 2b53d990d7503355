/**
 * Drift ignore rules: fields of a release's objects that drift repair leaves to someone else,
 * as RFC 6901 JSON pointers, optionally scoped to objects of one kind, name or label selector
 * (in the spirit of Flux's `driftDetection.ignore`, docs/adr/0055). The same shape is read from
 * watches.yaml (`driftIgnore`, the platform's) and from a CR's annotation (its own release only),
 * each with its own bounds; this module only checks the shape, the reconciler applies it.
 */
import { isPlainObject } from '../util/plain-object.js';
import { validateLabelSelector, type LabelSelector, type SelectorProblem } from './selector.js';
import { KIND } from './watches-schema.js';

export interface DriftIgnoreTarget {
  readonly kind?: string;
  readonly name?: string;
  readonly labelSelector?: LabelSelector;
}

export interface DriftIgnoreRule {
  /** RFC 6901 pointers, as written (`/webhooks/0/clientConfig/caBundle`). */
  readonly paths: readonly string[];
  /** Which objects of the release the paths apply to; absent: all of them. */
  readonly target?: DriftIgnoreTarget;
}

/** How many rules, and pointers over all rules, a list may hold. */
export interface DriftIgnoreLimits {
  readonly rules: number;
  readonly paths: number;
}

/** watches.yaml is the platform team's: generous bounds that only stop a runaway file. */
export const WATCH_DRIFT_IGNORE_LIMITS: DriftIgnoreLimits = { rules: 64, paths: 256 };
/** A pointer longer than this names no field a chart renders. */
export const MAX_POINTER_LENGTH = 512;

export type DriftIgnoreValidation =
  { readonly ok: true; readonly rules: readonly DriftIgnoreRule[] } | { readonly ok: false; readonly problems: readonly SelectorProblem[] };

/**
 * Fields that say which object it is: ignoring them would make repair act on something else
 * (`/metadata/name`) or is meaningless (`/kind`), so such a pointer is refused, not obeyed.
 */
const IDENTITY = new Set(['/apiVersion', '/kind', '/metadata/name', '/metadata/namespace', '/metadata']);

/** Pure: a pointer's reference tokens, or why it is not an RFC 6901 pointer this module accepts. */
export function parsePointer(
  text: string,
): { readonly ok: true; readonly tokens: readonly string[] } | { readonly ok: false; readonly message: string } {
  if (text === '')
    return {
      ok: false,
      message: 'the empty pointer names the whole object; to leave an object alone, turn drift repair off for the CR instead',
    };
  if (!text.startsWith('/'))
    return { ok: false, message: `${JSON.stringify(text)} is not a JSON pointer: it must start with "/", e.g. "/spec/replicas"` };
  if (text.length > MAX_POINTER_LENGTH)
    return { ok: false, message: `pointer is ${text.length} characters long, more than ${MAX_POINTER_LENGTH}` };
  if (/~[^01]|~$/.test(text))
    return { ok: false, message: `${JSON.stringify(text)}: "~" must be followed by 0 ("~") or 1 ("/") (RFC 6901)` };
  const tokens = text
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (tokens.includes('-'))
    return { ok: false, message: `${JSON.stringify(text)}: "-" names no existing list entry; use the entry's index` };
  if (tokens.includes('')) return { ok: false, message: `${JSON.stringify(text)} has an empty segment ("//" or a trailing "/")` };
  if (IDENTITY.has(text)) return { ok: false, message: `${JSON.stringify(text)} identifies the object and cannot be ignored` };
  return { ok: true, tokens };
}

/** Pure: the RFC 6901 pointer of `tokens`. */
export function formatPointer(tokens: readonly (string | number)[]): string {
  return tokens.map((t) => `/${String(t).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

const describe = (v: unknown): string =>
  v === null || v === undefined
    ? 'null'
    : Array.isArray(v)
      ? 'a list'
      : typeof v === 'object'
        ? 'a map'
        : `${typeof v} ${JSON.stringify(v)}`;

/**
 * Pure: checks an untyped value (parsed YAML or JSON) against the rule list's shape and `limits`;
 * every problem is reported with the path to it, so watches.yaml can name its line.
 */
export function validateDriftIgnoreRules(value: unknown, limits: DriftIgnoreLimits): DriftIgnoreValidation {
  const problems: SelectorProblem[] = [];
  const report = (path: readonly (string | number)[], message: string): void => void problems.push({ path, message });
  if (!Array.isArray(value)) {
    report([], `expected a list of rules such as {paths: [/spec/replicas], target: {kind: Deployment}}, got ${describe(value)}`);
    return { ok: false, problems };
  }
  if (value.length > limits.rules) report([], `${value.length} rules, more than the ${limits.rules} allowed`);
  const rules: DriftIgnoreRule[] = [];
  let pointers = 0;
  value.forEach((item: unknown, i) => {
    const rule = checkRule(item, [i], report);
    if (rule === undefined) return;
    pointers += rule.paths.length;
    rules.push(rule);
  });
  if (pointers > limits.paths) report([], `${pointers} paths over all rules, more than the ${limits.paths} allowed`);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, rules };
}

type Report = (path: readonly (string | number)[], message: string) => void;

function checkRule(item: unknown, at: readonly (string | number)[], report: Report): DriftIgnoreRule | undefined {
  if (!isPlainObject(item)) {
    report(at, `expected a rule with paths (and optionally target), got ${describe(item)}`);
    return undefined;
  }
  for (const key of Object.keys(item))
    if (key !== 'paths' && key !== 'target') report([...at, key], `unknown field ${JSON.stringify(key)}; a rule has paths and target`);
  const paths = checkPaths(item.paths, [...at, 'paths'], report);
  const target = item.target === undefined || item.target === null ? undefined : checkTarget(item.target, [...at, 'target'], report);
  if (paths === undefined) return undefined;
  return target === undefined ? { paths } : { paths, target };
}

function checkPaths(value: unknown, at: readonly (string | number)[], report: Report): string[] | undefined {
  if (!Array.isArray(value) || value.length === 0) {
    report(at, `expected a non-empty list of JSON pointers such as "/spec/replicas", got ${describe(value)}`);
    return undefined;
  }
  const paths: string[] = [];
  value.forEach((p: unknown, i) => {
    const parsed =
      typeof p === 'string' ? parsePointer(p) : { ok: false as const, message: `expected a JSON pointer string, got ${describe(p)}` };
    if (parsed.ok) paths.push(p as string);
    else report([...at, i], parsed.message);
  });
  return paths.length === value.length ? paths : undefined;
}

function checkTarget(value: unknown, at: readonly (string | number)[], report: Report): DriftIgnoreTarget | undefined {
  if (!isPlainObject(value)) {
    report(at, `expected a map with kind, name and/or labelSelector, got ${describe(value)}`);
    return undefined;
  }
  const target: { kind?: string; name?: string; labelSelector?: LabelSelector } = {};
  for (const [key, v] of Object.entries(value)) {
    const here = [...at, key];
    if (key === 'kind') {
      if (typeof v === 'string' && KIND.test(v)) target.kind = v;
      else report(here, `expected a kind such as "Deployment", got ${describe(v)}`);
    } else if (key === 'name') {
      if (typeof v === 'string' && v !== '' && v.length <= 253) target.name = v;
      else report(here, `expected an object name, got ${describe(v)}`);
    } else if (key === 'labelSelector') {
      const selector = checkSelector(v, here, report);
      if (selector !== undefined) target.labelSelector = selector;
    } else report(here, `unknown field ${JSON.stringify(key)}; a target has kind, name and labelSelector`);
  }
  return target;
}

function checkSelector(value: unknown, at: readonly (string | number)[], report: Report): LabelSelector | undefined {
  const result = validateLabelSelector(value);
  if (result.ok) return result.selector;
  for (const p of result.problems) report([...at, ...p.path], p.message);
  return undefined;
}
