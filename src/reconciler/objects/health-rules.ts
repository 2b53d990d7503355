/**
 * The watch's `healthChecks` (docs/adr/0082) as readiness rules: the object's CEL expressions are
 * evaluated as Flux evaluates them, `inProgress` first, then `failed`, then `current`; none true
 * means not ready yet. An expression that fails to evaluate (a field of the wrong type, an object
 * too large for the budget) makes its object not ready, with the error in the message: it never
 * throws, so a reconcile reports it and goes on.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { compileCel, evaluateCel, type CelExpression } from '../../config/cel-expression.js';
import type { HealthCheck } from '../../config/health-checks.js';
import type { InventoryEntry } from './inventory.js';
import type { CustomReadiness, ObjectReadiness } from './readiness.js';

interface Rule {
  readonly inProgress?: CelExpression;
  readonly failed?: CelExpression;
  readonly current: CelExpression;
}

/** How much of an evaluation error a message quotes. */
const MAX_ERROR_LENGTH = 200;

/** The rules of `checks`, validated at load (health-checks.ts): one that does not compile here is a bug. */
export function healthRules(checks: readonly HealthCheck[]): CustomReadiness | undefined {
  if (checks.length === 0) return undefined;
  const rules = new Map<string, Rule>();
  for (const c of checks) {
    const inProgress = c.inProgress === undefined ? undefined : compiled(c.inProgress);
    const failed = c.failed === undefined ? undefined : compiled(c.failed);
    rules.set(`${c.apiVersion} ${c.kind}`, {
      current: compiled(c.current),
      ...(inProgress === undefined ? {} : { inProgress }),
      ...(failed === undefined ? {} : { failed }),
    });
  }
  return (entry, live) => {
    const rule = rules.get(`${entry.apiVersion} ${entry.kind}`);
    return rule === undefined ? undefined : judge(entry, live, rule);
  };
}

function compiled(source: string): CelExpression {
  const c = compileCel(source);
  if (!c.ok) throw new Error(`healthChecks expression ${JSON.stringify(source)} passed validation but does not compile: ${c.message}`);
  return c.expression;
}

/** Pure: what `rule` says of `live`. */
export function judge(entry: InventoryEntry, live: KubernetesObject, rule: Rule): ObjectReadiness {
  const label = `${entry.kind} ${entry.name}`;
  const steps: readonly [keyof Rule, CelExpression | undefined][] = [
    ['inProgress', rule.inProgress],
    ['failed', rule.failed],
    ['current', rule.current],
  ];
  for (const [name, expression] of steps) {
    if (expression === undefined) continue;
    const r = evaluateCel(expression, live);
    if (!r.ok) {
      const why = r.message.length > MAX_ERROR_LENGTH ? `${r.message.slice(0, MAX_ERROR_LENGTH)}…` : r.message;
      return { ready: false, message: `${label} health check ${name} could not be evaluated: ${why}` };
    }
    if (!r.value) continue;
    if (name === 'current') return { ready: true, message: `${label} current` };
    return { ready: false, message: `${label} ${name === 'failed' ? 'failed' : 'in progress'} (health check ${name})` };
  }
  return { ready: false, message: `${label} in progress (health check current is false)` };
}
