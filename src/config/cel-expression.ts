/**
 * CEL expressions over one Kubernetes object, as Flux's `healthCheckExprs` write them: the
 * object's top-level fields (`apiVersion`, `kind`, `metadata`, `spec`, `status`) are the
 * variables, and an expression yields a bool. Compiled with @bufbuild/cel (docs/adr/0082).
 *
 * The library has no cost limit, and an evaluation cannot be interrupted, so cost is bounded
 * before it runs: at load, by the expression's size and how deep its macros (`all`, `exists`,
 * `filter`, `map`) nest; at evaluation, by the largest list or map of the object, since each
 * nesting level can iterate it once per outer element. An object that could make the rule run
 * longer than the budget is not evaluated, and says so.
 */
import { celEnv, CelScalar, isCelError, parse, plan } from '@bufbuild/cel';
import { isPlainObject } from '../util/plain-object.js';

/** Characters an expression may have: the longest of Flux's cheatsheet is under 300. */
export const MAX_EXPRESSION_LENGTH = 2_048;
/** How deep macros may nest (a macro in another's predicate); chaining (`filter(...).all(...)`) does not nest. */
export const MAX_MACRO_NESTING = 2;
/** The estimated steps an evaluation may take: nodes of the expression × (largest collection)^nesting. */
export const EVALUATION_BUDGET = 1_000_000;

/** The variables an expression sees: the object's top-level fields (absent ones are empty maps). */
export const CEL_VARIABLES = ['apiVersion', 'kind', 'metadata', 'spec', 'status'] as const;

const ENV = celEnv({ variables: Object.fromEntries(CEL_VARIABLES.map((v) => [v, CelScalar.DYN])) });

/** An expression planned for evaluation: bindings of the variables in, a CEL value or error out. */
type Program = (bindings: Record<string, unknown>) => unknown;
type Expr = NonNullable<ReturnType<typeof parse>['expr']>;

export interface CelExpression {
  readonly source: string;
  /** Nodes of the parsed expression. */
  readonly nodes: number;
  /** How deep its macros nest. */
  readonly nesting: number;
  readonly program: Program;
}

export type Compiled = { readonly ok: true; readonly expression: CelExpression } | { readonly ok: false; readonly message: string };

/** Pure: `source` compiled, or why it is refused (a syntax error with its column, an unknown variable, a bound). */
export function compileCel(source: string): Compiled {
  if (source.trim() === '') return { ok: false, message: 'must not be empty' };
  if (source.length > MAX_EXPRESSION_LENGTH)
    return { ok: false, message: `expression is ${source.length} characters long, more than ${MAX_EXPRESSION_LENGTH}` };
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (err) {
    return {
      ok: false,
      message: `not a CEL expression: ${(err instanceof Error ? err.message : String(err)).replace(/^<input>:/, 'at ')}`,
    };
  }
  const shape = walk(parsed.expr, new Set(), 0);
  if (shape.unknown !== undefined)
    return {
      ok: false,
      message: `unknown variable ${JSON.stringify(shape.unknown)}: an expression sees ${CEL_VARIABLES.join(', ')} (the object's fields) and its macros' own variables`,
    };
  if (shape.nesting > MAX_MACRO_NESTING)
    return {
      ok: false,
      message: `macros nest ${shape.nesting} deep, more than ${MAX_MACRO_NESTING}: each level multiplies the work by the size of a list`,
    };
  let program: Program;
  try {
    const planned = plan(ENV, parsed);
    program = (bindings) => planned(bindings as Parameters<typeof planned>[0]);
  } catch (err) {
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  return { ok: true, expression: { source, nodes: shape.nodes, nesting: shape.nesting, program } };
}

interface Shape {
  nodes: number;
  nesting: number;
  unknown?: string;
}

/** The expression's size, macro nesting and the first identifier that is neither a variable nor a macro's. */
function walk(expr: Expr | undefined, scope: ReadonlySet<string>, depth: number): Shape {
  if (expr === undefined) return { nodes: 0, nesting: depth };
  const kind = expr.exprKind;
  switch (kind.case) {
    case 'identExpr':
      return {
        nodes: 1,
        nesting: depth,
        ...(scope.has(kind.value.name) || (CEL_VARIABLES as readonly string[]).includes(kind.value.name)
          ? {}
          : { unknown: kind.value.name }),
      };
    case 'selectExpr':
      return walkAll([kind.value.operand], scope, depth);
    case 'callExpr':
      return walkAll([kind.value.target, ...kind.value.args], scope, depth);
    case 'listExpr':
      return walkAll(kind.value.elements, scope, depth);
    case 'structExpr':
      return walkAll(
        kind.value.entries.flatMap((e) => [e.value, ...(e.keyKind.case === 'mapKey' ? [e.keyKind.value] : [])]),
        scope,
        depth,
      );
    case 'comprehensionExpr':
      return walkMacro(kind.value, scope, depth);
    default:
      return { nodes: 1, nesting: depth };
  }
}

/** One node and its children, all in `scope` at `depth`. */
function walkAll(children: readonly (Expr | undefined)[], scope: ReadonlySet<string>, depth: number): Shape {
  const shape: Shape = { nodes: 1, nesting: depth };
  for (const c of children) {
    const s = walk(c, scope, depth);
    shape.nodes += s.nodes;
    shape.nesting = Math.max(shape.nesting, s.nesting);
    shape.unknown ??= s.unknown;
  }
  return shape;
}

/** A macro (a comprehension): its range at `depth`, its body one deeper with its own variables in scope. */
function walkMacro(c: Extract<Expr['exprKind'], { case: 'comprehensionExpr' }>['value'], scope: ReadonlySet<string>, depth: number): Shape {
  const range = walk(c.iterRange, scope, depth);
  const inner = new Set([...scope, c.iterVar, c.accuVar, ...(c.iterVar2 === '' ? [] : [c.iterVar2])]);
  const body = walkAll([c.accuInit, c.loopCondition, c.loopStep, c.result], inner, depth + 1);
  const unknown = range.unknown ?? body.unknown;
  return { nodes: range.nodes + body.nodes, nesting: Math.max(range.nesting, body.nesting), ...(unknown === undefined ? {} : { unknown }) };
}

/** The largest list or map anywhere in `value`: what one macro may iterate. */
export function largestCollection(value: unknown, limit = Number.MAX_SAFE_INTEGER): number {
  let largest = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && largest < limit) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      largest = Math.max(largest, v.length);
      stack.push(...(v as unknown[]));
    } else if (isPlainObject(v)) {
      const values = Object.values(v);
      largest = Math.max(largest, values.length);
      stack.push(...values);
    }
  }
  return largest;
}

export type Evaluation = { readonly ok: true; readonly value: boolean } | { readonly ok: false; readonly message: string };

/**
 * Pure: `expression` evaluated over `object`, or why it could not be: an error of the expression
 * (a missing field, a wrong type), a result that is not a bool, or an object too large for the budget.
 */
export function evaluateCel(expression: CelExpression, object: unknown): Evaluation {
  const root = isPlainObject(object) ? object : {};
  if (expression.nesting > 0) {
    const n = Math.max(1, largestCollection(root, EVALUATION_BUDGET));
    const estimate = expression.nodes * n ** expression.nesting;
    if (estimate > EVALUATION_BUDGET)
      return {
        ok: false,
        message: `not evaluated: a list or map of ${n} entries would take about ${estimate.toExponential(1)} steps, more than the budget of ${EVALUATION_BUDGET.toExponential(0)}`,
      };
  }
  const bindings = Object.fromEntries(CEL_VARIABLES.map((v) => [v, toInput(root[v])]));
  let result: unknown;
  try {
    result = expression.program(bindings);
  } catch (err) {
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  if (isCelError(result)) return { ok: false, message: result.message };
  if (typeof result !== 'boolean')
    return { ok: false, message: `yields ${typeof result === 'object' ? 'a value' : typeof result} ${shortText(result)}, not a bool` };
  return { ok: true, value: result };
}

/** A field the object lacks reads as an empty map, so `has(status.x)` works before a controller wrote status. */
const toInput = (v: unknown): unknown => (v === undefined || v === null ? {} : v);

function shortText(v: unknown): string {
  let text: string;
  try {
    const json = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x)) as string | undefined;
    text = json ?? String(v);
  } catch {
    text = String(v);
  }
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}
