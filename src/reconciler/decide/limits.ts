/**
 * Bounds on what a CR author hands the operator, checked by walks that are neither recursive nor
 * unbounded, before anything recursive (the merges, canonical JSON, redaction's leaf walk) or any
 * read of the cluster runs. Whoever may create a CR must not be able to exhaust the operator's
 * stack, heap or time, which every other CR shares (docs/adr/0043-bounded-parsers.md).
 */

export const VALUES_LIMITS = {
  /**
   * Maps and lists inside each other. The deepest values real charts take are Kubernetes objects
   * pasted into them (`extraDeploy`, `affinity`, a CRD's schema): 15 to 40 levels. 100 leaves room
   * for those and stays a twentieth of where recursion overflows the stack (about 2000).
   */
  maxDepth: 100,
  /**
   * The values as JSON, estimated (strings counted in UTF-16 units, escapes not counted). A CR is
   * at most 1.5 MiB in etcd, and helm stores the values in a release Secret of at most 1 MiB
   * (compressed): 4 MiB is more than either, and bounds what values-from references add.
   */
  maxBytes: 4 * 1024 * 1024,
} as const;

/** The values-from annotation holds a short list of flat references, never documents. */
export const VALUES_FROM_LIMITS = {
  maxLength: 16 * 1024,
  maxReferences: 32,
  /**
   * Brackets and braces open at once, counted before the YAML is parsed: a list of flow maps with
   * an indexed targetPath opens 3. The YAML reader takes about a second to give up on 16 KiB of `[`.
   */
  maxBrackets: 16,
} as const;

type Limits = { readonly maxDepth: number; readonly maxBytes: number };

/** A map or list being walked: its keys (a list's are its indexes) and the next one to visit. */
interface Frame {
  readonly node: Record<string | number, unknown>;
  readonly keys: readonly string[] | undefined;
  readonly size: number;
  next: number;
}

const frameOf = (node: object): Frame => {
  if (Array.isArray(node)) return { node: node as unknown as Frame['node'], keys: undefined, size: node.length, next: 0 };
  const keys = Object.keys(node);
  return { node: node as Frame['node'], keys, size: keys.length, next: 0 };
};

/** The JSON length of a scalar, about (a hole in a list is written `null`). */
function scalarBytes(v: unknown): number {
  if (typeof v === 'string') return v.length + 2;
  if (typeof v === 'number' || typeof v === 'bigint') return String(v).length;
  return typeof v === 'boolean' ? 5 : 4;
}

const sizeText = (bytes: number): string => (bytes % 1048576 === 0 ? `${bytes / 1048576} MiB` : `${bytes} bytes`);

/** `a.b[2].c`, from the frames being walked, cut after 6 segments. */
function pathOf(stack: readonly Frame[]): string {
  const segments = stack.slice(0, 6).map((f) => (f.keys === undefined ? `[${f.next - 1}]` : `.${f.keys[f.next - 1] ?? ''}`));
  const text = segments.join('').replace(/^\./, '');
  return stack.length > 6 ? `${text}…` : text;
}

/**
 * Pure: why `value` (a CR's spec, values from a reference) is beyond `limits`, or undefined. Walks
 * iteratively with one frame per level it is inside, and stops at the first limit passed, so its
 * time is bounded by maxBytes and its memory by maxDepth whatever the input.
 */
export function valuesProblem(value: unknown, limits: Limits = VALUES_LIMITS): string | undefined {
  const stack: Frame[] = [];
  let bytes = 0;
  const enter = (v: unknown): string | undefined => {
    if (typeof v !== 'object' || v === null) {
      bytes += scalarBytes(v);
      return undefined;
    }
    if (stack.length === limits.maxDepth)
      return `nests maps and lists more than ${limits.maxDepth} deep (at ${pathOf(stack)}); real chart values stay far below that`;
    bytes += 2;
    stack.push(frameOf(v));
    return undefined;
  };
  const tooLarge = (): string => `is larger than ${sizeText(limits.maxBytes)} as JSON`;
  let problem = enter(value);
  for (let top = stack.at(-1); problem === undefined && top !== undefined; top = stack.at(-1)) {
    if (bytes > limits.maxBytes) return tooLarge();
    if (top.next === top.size) {
      stack.pop();
      continue;
    }
    const key = top.keys === undefined ? top.next : (top.keys[top.next] as string);
    top.next++;
    bytes += top.keys === undefined ? 1 : key.toString().length + 4;
    problem = enter(top.node[key]);
  }
  return problem ?? (bytes > limits.maxBytes ? tooLarge() : undefined);
}

/**
 * Pure: the most brackets and braces open at once in `text`, counting no further than `limit + 1`.
 * Quotes are not followed: a bracket in a quoted string counts too, which only errs on the safe side.
 */
export function bracketDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length && deepest <= limit; i++) {
    const ch = text.charAt(i);
    if (ch === '[' || ch === '{') deepest = Math.max(deepest, ++depth);
    else if ((ch === ']' || ch === '}') && depth > 0) depth--;
  }
  return deepest;
}
