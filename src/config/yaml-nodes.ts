/** Reading the nodes of a parsed watches.yaml: aliases followed, values as written. */
import { isAlias, isMap, isScalar, isSeq, Scalar, type Document, type Node } from 'yaml';
import { quote } from './watches-problems.js';

/** Follows an alias to its anchor; undefined when the anchor does not exist. */
export function deref(doc: Document, node: unknown): Node | undefined {
  if (isAlias(node)) return node.resolve(doc);
  return isScalar(node) || isMap(node) || isSeq(node) ? node : undefined;
}

/**
 * A pair's value node. A key with no value at all (`? key`) gets a null scalar at the key's
 * position, so it reads like `key:` (present but empty); undefined for a dangling alias.
 */
export function valueNode(doc: Document, value: unknown, keyNode: Node | undefined): Node | undefined {
  if (value !== null && value !== undefined) return deref(doc, value);
  const empty = new Scalar(null);
  empty.range = keyNode?.range ?? null;
  return empty;
}

/** The scalar's value (`null` for an empty value), or undefined for collections. */
export const scalarValue = (node: Node | undefined): unknown => (isScalar(node) ? node.value : undefined);

export const isEmpty = (node: Node | undefined): boolean => node === undefined || (isScalar(node) && node.value === null);

export function describe(node: Node | undefined): string {
  if (isMap(node)) return 'a map';
  if (isSeq(node)) return 'a list';
  if (!isScalar(node) || node.value === null || node.value === undefined) return 'null';
  const value: unknown = node.value;
  if (typeof value === 'string') return `string ${quote(value)}`;
  // As written, so `1.10` is not shown as 1.1.
  return `${typeof value} ${node.source ?? JSON.stringify(value)}`;
}

/** The deepest node along `path` (so a problem about a missing key points at its parent). */
export function nodeAt(doc: Document, root: Node, path: readonly (string | number)[]): Node {
  let current = root;
  for (const segment of path) {
    const next = isMap(current) || isSeq(current) ? deref(doc, current.get(segment, true)) : undefined;
    if (next === undefined) break;
    current = next;
  }
  return current;
}
