/**
 * A nested map of watches.yaml whose keys are a fixed set (`rollout:`, `test:`): its value nodes by
 * key, and each unknown key reported at its line with the closest known one.
 */
import type { Node, YAMLMap } from 'yaml';
import { closestName } from './closest-name.js';
import { fail, quote, type EntryContext } from './watches-problems.js';
import { deref, scalarValue } from './yaml-nodes.js';

/** `field`: the map's own key, prefixed to each reported key (`rollout.waveSiez`). */
export function knownKeys<K extends string>(
  ctx: EntryContext,
  node: YAMLMap,
  field: string,
  keys: readonly K[],
): { fields: Partial<Record<K, Node>>; ok: boolean } {
  const fields: Partial<Record<K, Node>> = {};
  let ok = true;
  for (const pair of node.items) {
    const keyNode = deref(ctx.pc.doc, pair.key);
    const key = scalarValue(keyNode);
    if (typeof key !== 'string' || !(keys as readonly string[]).includes(key)) {
      const hint = typeof key === 'string' ? closestName(key, keys) : undefined;
      fail(
        ctx,
        keyNode,
        `${field}.${String(key)}`,
        `unknown key${hint === undefined ? `; known keys: ${keys.join(', ')}` : ` (did you mean ${quote(hint)}?)`}`,
      );
      ok = false;
      continue;
    }
    const value = deref(ctx.pc.doc, pair.value);
    if (value !== undefined) fields[key as K] = value;
  }
  return { fields, ok };
}
