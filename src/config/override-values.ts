/** `overrideValues`: value paths to strings, `$VAR`-expanded, with `--set-string` semantics. */
import { isMap, isScalar, isSeq, type Document, type Node } from 'yaml';
import { expandEnv } from './env-expansion.js';
import type { FieldNodes } from './watch-fields.js';
import { fail, quote, type EntryContext } from './watches-problems.js';
import { deref, describe, isEmpty, scalarValue, valueNode } from './yaml-nodes.js';
import { valuePathProblem } from './value-path.js';

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

export function readOverrideValues(ctx: EntryContext, fields: FieldNodes): Record<string, string> {
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
      fail(
        ctx,
        keyNode,
        'overrideValues',
        `key ${shown} is not a value path (${problem}): use dotted names with optional [index], e.g. "image.tag" or "args[0]"`,
      );
      continue;
    }
    const value = readOverrideValue(ctx, key, valueNode(ctx.pc.doc, pair.value, keyNode));
    if (value !== undefined) out[key] = value;
  }
  return out;
}
