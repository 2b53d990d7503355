/**
 * The scalars of a values tree as text, whole or at given paths: what redaction looks for
 * (`password: 1234` leaks as "1234" too). Booleans are left out: `true` is no secret, and masking
 * it would mangle every text. Pure; imports nothing (src/util is a leaf).
 */
/** A path into a values tree: map keys and list indexes; the empty path is the whole tree. */
export type ValueLeafPath = readonly (string | number)[];

export function leafStrings(values: unknown): string[] {
  if (typeof values === 'string') return [values];
  if (typeof values === 'number' || typeof values === 'bigint') return [String(values)];
  if (Array.isArray(values)) return values.flatMap(leafStrings);
  if (typeof values === 'object' && values !== null) return Object.values(values).flatMap(leafStrings);
  return [];
}

/** The scalars, as text, below each path (a map's or list's path takes all below it; a missing one, none). */
export function leafStringsAt(values: unknown, paths: readonly ValueLeafPath[]): string[] {
  return paths.flatMap((path) => {
    let node: unknown = values;
    for (const key of path) {
      if (typeof key === 'number' && Array.isArray(node)) node = node[key];
      else if (typeof node === 'object' && node !== null && !Array.isArray(node) && Object.hasOwn(node, String(key)))
        node = (node as Record<string, unknown>)[String(key)];
      else return [];
    }
    return leafStrings(node);
  });
}
