/**
 * Which fields of a release's objects drift repair leaves alone, and how: the watch's rules (the
 * platform team's), the CR's annotation (its own release only, when the watch allows it), and the
 * fields a fight took out of repair (drift-fight.ts). An ignored field is neither drift nor
 * restored: the object is compared and applied with the live value in its place, so the apply
 * neither changes nor drops it. A deleted object is recreated whole (docs/adr/0055).
 */
import { createHash } from 'node:crypto';
import { parsePointer, validateDriftIgnoreRules, type DriftIgnoreLimits, type DriftIgnoreRule } from '../../config/drift-ignore-rules.js';
import { readHelmYaml } from '../../config/helm-yaml.js';
import { selectorMatches } from '../../config/selector.js';
import { isPlainObject } from '../../util/plain-object.js';
import { ANNOTATIONS } from '../decide/annotations.js';
import type { FieldPath } from './drift.js';
import { bracketDepth } from '../decide/limits.js';

/** A tenant writes the annotation: a few rules for one release, parsed under tight bounds. */
export const ANNOTATION_LIMITS: DriftIgnoreLimits & { readonly maxLength: number; readonly maxBrackets: number } = {
  rules: 8,
  paths: 32,
  maxLength: 4096,
  maxBrackets: 8,
};

/** What a rule's target is matched against: the object as the chart rendered it. */
export interface RuleSubject {
  readonly kind: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** Pure: whether `rule` applies to `object` (a rule without a target applies to all of them). */
export function ruleApplies(rule: DriftIgnoreRule, object: RuleSubject): boolean {
  const t = rule.target;
  if (t === undefined) return true;
  return (
    (t.kind === undefined || t.kind === object.kind) &&
    (t.name === undefined || t.name === object.name) &&
    (t.labelSelector === undefined || selectorMatches(t.labelSelector, object.labels))
  );
}

/** Pure: the fields `rules` ignore on `object`, as pointer tokens; empty when no rule targets it. */
export function ignoredFields(rules: readonly DriftIgnoreRule[], object: RuleSubject): FieldPath[] {
  return rules
    .filter((r) => ruleApplies(r, object))
    .flatMap((r) =>
      r.paths.flatMap((p) => {
        const parsed = parsePointer(p);
        return parsed.ok ? [parsed.tokens] : [];
      }),
    );
}

/** Pure: whether `path` is the field at `ignored` or inside it (tokens compare as text: `0` is `[0]`). */
export function isWithin(path: FieldPath, ignored: FieldPath): boolean {
  return ignored.length <= path.length && ignored.every((t, i) => String(t) === String(path[i]));
}

/**
 * Pure: `desired` with each field at `paths` as `live` has it, or left out when live has none and
 * it is an object's key (a list entry the chart renders stays). A path the chart does not set is
 * nothing to ignore. `desired` is not changed.
 */
export function withLiveFields<T>(desired: T, live: unknown, paths: readonly FieldPath[]): T {
  if (paths.length === 0) return desired;
  const out = structuredClone(desired);
  for (const path of paths) {
    const parent = at(out, path.slice(0, -1));
    const last = path[path.length - 1];
    if (last === undefined) continue;
    const liveValue = at(live, path);
    if (isPlainObject(parent) && Object.hasOwn(parent, String(last))) {
      if (liveValue === undefined) Reflect.deleteProperty(parent, String(last));
      else parent[String(last)] = structuredClone(liveValue);
    } else if (Array.isArray(parent)) {
      const i = index(last);
      if (i !== undefined && i < parent.length && liveValue !== undefined) parent[i] = structuredClone(liveValue);
    }
  }
  return out;
}

/** Pure: whether the field at `path` of `value` is a key of a map (not an entry of a list). */
export function isMapKey(value: unknown, path: FieldPath): boolean {
  return path.length > 0 && isPlainObject(at(value, path.slice(0, -1)));
}

function index(token: string | number): number | undefined {
  if (typeof token === 'number') return token;
  return /^(0|[1-9]\d*)$/.test(token) ? Number(token) : undefined;
}

/** Pure: the value at `path` of `value`; undefined when there is none. */
export function at(value: unknown, path: FieldPath): unknown {
  let current = value;
  for (const token of path) {
    if (isPlainObject(current)) current = current[String(token)];
    else if (Array.isArray(current)) {
      const i = index(token);
      current = i === undefined ? undefined : current[i];
    } else return undefined;
  }
  return current;
}

/** The CR's rules when the watch obeys them; `problem` when the annotation is refused (nothing of it is used). */
export type AnnotationRules =
  { readonly rules: readonly DriftIgnoreRule[]; readonly problem?: undefined } | { readonly rules: readonly []; readonly problem: string };

/**
 * Pure: the CR's drift-ignore annotation (never throws). Its length and nesting are checked before
 * it is parsed; a watch without `allowDriftIgnoreAnnotation: true` refuses it whatever it holds,
 * so a tenant cannot narrow what the platform team left to repair.
 */
export function annotationRules(raw: string | undefined, allowed: boolean): AnnotationRules {
  if (raw === undefined || raw.trim() === '') return { rules: [] };
  const name = ANNOTATIONS.driftIgnore;
  if (!allowed)
    return {
      rules: [],
      problem: `annotation ${name} is not obeyed: the watch does not set allowDriftIgnoreAnnotation: true; every field the chart sets is repaired`,
    };
  const doc = readAnnotation(raw);
  if (typeof doc === 'string') return { rules: [], problem: `annotation ${name} ${doc}; nothing of it is obeyed until it is fixed` };
  const result = validateDriftIgnoreRules(doc.value, ANNOTATION_LIMITS);
  if (result.ok) return { rules: result.rules };
  const first = result.problems[0];
  const where = first === undefined || first.path.length === 0 ? '' : ` at ${first.path.join('.')}`;
  return { rules: [], problem: `annotation ${name}${where}: ${first?.message ?? 'invalid'}; nothing of it is obeyed until it is fixed` };
}

/** The annotation's YAML, its length and nesting checked first; a string says what is wrong. */
function readAnnotation(raw: string): { value: unknown } | string {
  const { maxLength, maxBrackets } = ANNOTATION_LIMITS;
  if (raw.length > maxLength) return `is ${raw.length} characters long, more than ${maxLength}`;
  if (bracketDepth(raw, maxBrackets) > maxBrackets) return `nests more than ${maxBrackets} brackets`;
  try {
    return { value: readHelmYaml(raw, { maxAliasCount: 0 }) };
  } catch (err) {
    return `is not valid YAML: ${(err as Error).message.split('\n')[0] ?? ''}`;
  }
}

/** Pure: a short fingerprint of the rules in force, so a change of them starts fight detection over. */
export function rulesFingerprint(rules: readonly DriftIgnoreRule[]): string {
  return createHash('sha256').update(JSON.stringify(rules)).digest('hex').slice(0, 12);
}
