/**
 * `healthChecks`: readiness rules for the kinds the built-in rules do not know (a chart's own
 * custom resources), as Flux's `healthCheckExprs`: per `apiVersion` and `kind`, CEL expressions
 * `current` (required), `failed` and `inProgress` over the object (cel-expression.ts,
 * docs/adr/0082). Every expression is compiled at load, so a malformed one is refused with its
 * file:line before any controller starts.
 */
import { isPlainObject } from '../util/plain-object.js';
import { compileCel } from './cel-expression.js';
import { closestName } from './closest-name.js';
import { fail, quote, type EntryContext } from './watches-problems.js';
import { DNS1035_LABEL, DNS1123_SUBDOMAIN, KIND } from './watches-schema.js';
import { isEmpty, nodeAt } from './yaml-nodes.js';
import type { Node } from 'yaml';

export interface HealthCheck {
  /** `group/version`, or `version` for the core group; as the object's own `apiVersion`. */
  readonly apiVersion: string;
  readonly kind: string;
  /** The object is ready when this is true (and neither of the others is). */
  readonly current: string;
  /** The object has failed: not ready, with this reported. */
  readonly failed?: string;
  /** The object is still changing: not ready yet, evaluated first. */
  readonly inProgress?: string;
}

/** A list longer than this is a runaway file, not a set of kinds a chart creates. */
export const MAX_HEALTH_CHECKS = 64;

const KEYS = ['apiVersion', 'kind', 'current', 'failed', 'inProgress'] as const;
const EXPRESSIONS = ['current', 'failed', 'inProgress'] as const;

interface Problem {
  readonly path: readonly (string | number)[];
  readonly message: string;
}

/** Pure: the rules in `value` (from YAML), or every problem with the path of the value it is about. */
export function validateHealthChecks(
  value: unknown,
): { readonly ok: true; readonly checks: readonly HealthCheck[] } | { readonly ok: false; readonly problems: readonly Problem[] } {
  if (!Array.isArray(value))
    return { ok: false, problems: [{ path: [], message: 'expected a list of {apiVersion, kind, current, failed, inProgress}' }] };
  if (value.length > MAX_HEALTH_CHECKS)
    return { ok: false, problems: [{ path: [], message: `${value.length} rules, more than ${MAX_HEALTH_CHECKS}` }] };
  const problems: Problem[] = [];
  const checks: HealthCheck[] = [];
  const seen = new Map<string, number>();
  value.forEach((item: unknown, i) => {
    const before = problems.length;
    const check = validateOne(item, i, problems);
    if (check === undefined || problems.length > before) return;
    const key = `${check.apiVersion} ${check.kind}`;
    const first = seen.get(key);
    if (first !== undefined)
      problems.push({ path: [i, 'kind'], message: `${check.kind} of ${check.apiVersion} already has a rule at healthChecks[${first}]` });
    else seen.set(key, i);
    checks.push(check);
  });
  return problems.length === 0 ? { ok: true, checks } : { ok: false, problems };
}

function validateOne(item: unknown, i: number, problems: Problem[]): HealthCheck | undefined {
  if (!isPlainObject(item)) {
    problems.push({ path: [i], message: 'expected a map of apiVersion, kind, current, failed, inProgress' });
    return undefined;
  }
  checkKeys(item, i, problems);
  const { apiVersion, kind } = item;
  if (typeof apiVersion !== 'string' || !isApiVersion(apiVersion))
    problems.push({ path: [i, 'apiVersion'], message: 'expected an apiVersion such as "cert-manager.io/v1" (group/version) or "v1"' });
  if (typeof kind !== 'string' || !KIND.test(kind))
    problems.push({ path: [i, 'kind'], message: 'expected a kind such as "Certificate" (an upper-case letter, then letters and digits)' });
  if (item.current === undefined)
    problems.push({ path: [i], message: 'current is required: the expression that is true when the object is ready' });
  const texts = compiledTexts(item, i, problems);
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || texts.current === undefined) return undefined;
  return {
    apiVersion,
    kind,
    current: texts.current,
    ...(texts.failed === undefined ? {} : { failed: texts.failed }),
    ...(texts.inProgress === undefined ? {} : { inProgress: texts.inProgress }),
  };
}

function checkKeys(item: Readonly<Record<string, unknown>>, i: number, problems: Problem[]): void {
  for (const key of Object.keys(item)) {
    if ((KEYS as readonly string[]).includes(key)) continue;
    const hint = closestName(key, KEYS);
    problems.push({
      path: [i, key],
      message: `unknown key ${quote(key)}${hint === undefined ? `; known keys: ${KEYS.join(', ')}` : ` (did you mean ${quote(hint)}?)`}`,
    });
  }
}

/** The expressions of one rule that compile; each one that does not is a problem at its path. */
function compiledTexts(
  item: Readonly<Record<string, unknown>>,
  i: number,
  problems: Problem[],
): Partial<Record<(typeof EXPRESSIONS)[number], string>> {
  const texts: Partial<Record<(typeof EXPRESSIONS)[number], string>> = {};
  for (const key of EXPRESSIONS) {
    const text = item[key];
    if (text === undefined) continue;
    if (typeof text !== 'string') {
      problems.push({ path: [i, key], message: 'expected a CEL expression (a string)' });
      continue;
    }
    const compiled = compileCel(text);
    if (compiled.ok) texts[key] = text;
    else problems.push({ path: [i, key], message: compiled.message });
  }
  return texts;
}

function isApiVersion(text: string): boolean {
  const parts = text.split('/');
  if (parts.length === 1) return DNS1035_LABEL.test(text);
  const [group = '', version = ''] = parts;
  return parts.length === 2 && group.length <= 253 && DNS1123_SUBDOMAIN.test(group) && DNS1035_LABEL.test(version);
}

/** `healthChecks` of one entry: each problem reported at the line of the value it is about. */
export function readHealthChecks(ctx: EntryContext, node: Node | undefined): readonly HealthCheck[] {
  if (isEmpty(node) || node === undefined) return [];
  let value: unknown;
  try {
    value = node.toJS(ctx.pc.doc);
  } catch (err) {
    fail(ctx, node, 'healthChecks', (err as Error).message);
    return [];
  }
  const result = validateHealthChecks(value);
  if (result.ok) return result.checks;
  for (const p of result.problems)
    fail(
      ctx,
      nodeAt(ctx.pc.doc, node, p.path),
      `healthChecks${p.path.map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`)).join('')}`,
      p.message,
    );
  return [];
}
