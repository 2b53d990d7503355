/**
 * Chart values for a CR: its `spec`, with the watch's `overrideValues` deep-merged on top (override
 * wins), and the fingerprint that decides whether helm has anything to do.
 */
import { createHash, createHmac } from 'node:crypto';

export type Values = Record<string, unknown>;

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Splits an overrideValues key the way helm's `--set-string` does for paths: `a.b` nests maps,
 * `a[0]` indexes lists, and a backslash makes the next character literal, as in helm's strvals:
 * `\.` keeps a dot (for keys like `example\.com/x`), `\\` a backslash, `\[` a bracket.
 */
export function parseValuePath(key: string): (string | number)[] {
  const path: (string | number)[] = [];
  let current = '';
  for (let i = 0; i < key.length; i++) {
    const ch = key.charAt(i);
    if (ch === '\\' && i + 1 < key.length) {
      current += key.charAt(i + 1);
      i++;
    } else if (ch === '.') {
      if (current !== '') path.push(current);
      current = '';
    } else if (ch === '[') {
      const close = key.indexOf(']', i);
      if (current !== '') path.push(current);
      current = '';
      path.push(Number(key.slice(i + 1, close)));
      i = close;
    } else {
      current += ch;
    }
  }
  if (current !== '') path.push(current);
  return path;
}

/** An own, plain data property even for `__proto__`: like helm's Go maps, never the prototype. */
const setOwn = (node: object, key: string | number, value: unknown): void => {
  Object.defineProperty(node, key, { value, writable: true, enumerable: true, configurable: true });
};

/** Sets `value` at `path`, creating maps and lists on the way (helm's `--set-string`). */
export function setValueAt(target: Values, path: readonly (string | number)[], value: string): void {
  let node: Record<string | number, unknown> = target;
  path.forEach((segment, i) => {
    if (i === path.length - 1) {
      setOwn(node, segment, value);
      return;
    }
    const nextIsIndex = typeof path[i + 1] === 'number';
    const child = Object.hasOwn(node, segment) ? node[segment] : undefined;
    const fits = nextIsIndex ? Array.isArray(child) : isPlainObject(child);
    if (!fits) setOwn(node, segment, nextIsIndex ? [] : {});
    node = node[segment] as Record<string | number, unknown>;
  });
}

/** A copy of `spec` with every override applied; `spec` itself is not changed. */
export function mergeValues(spec: Values, overrides: Readonly<Record<string, string>>): Values {
  const merged = structuredClone(spec);
  for (const [key, value] of Object.entries(overrides)) {
    const path = parseValuePath(key);
    if (path.length > 0) setValueAt(merged, path, value);
  }
  return merged;
}

/**
 * JSON with object keys sorted at every level, so equal values always serialise alike.
 * Numbers are already normalised by JSON (1 and 1.0 are one number), which is the lesson of
 * operator-sdk#5041, where int-vs-float comparisons caused endless upgrades.
 */
export function canonicalJson(value: unknown): string {
  // Array.from visits the holes an index past the end leaves (`a[2]`): null, as JSON.stringify writes them.
  if (Array.isArray(value)) return `[${Array.from(value, canonicalJson).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  // Values come from JSON, so everything left is a string, number, boolean or null.
  return value === undefined ? 'null' : JSON.stringify(value);
}

export interface FingerprintInput {
  readonly chartDigest: string;
  readonly values: Values;
  readonly helmMajor: number;
}

/**
 * Bumped whenever the way we call helm changes what a release would contain, so existing releases
 * are upgraded once to the new behaviour.
 */
export const RENDER_PROTOCOL = 1;

/**
 * The desired state of a release in 40 hex characters (160 bits: collisions are not a concern, and
 * it fits a label value, which is capped at 63 characters).
 */
export function fingerprint(input: FingerprintInput): string {
  return createHash('sha256')
    .update(`protocol=${RENDER_PROTOCOL}\nhelm=${input.helmMajor}\nchart=${input.chartDigest}\nvalues=`)
    .update(canonicalJson(input.values))
    .digest('hex')
    .slice(0, 40);
}

/**
 * The fingerprint as CR status shows it (`failedAttempts`): an HMAC under the operator's key, so
 * that a tenant who reads the status cannot test guesses of the values (a low-entropy Secret
 * among them) against it offline. The release label keeps the plain fingerprint: only who may read
 * the release Secret sees it, and that Secret holds the values themselves (ADR 0044).
 */
export function keyedFingerprint(key: Uint8Array, fingerprint: string): string {
  return createHmac('sha256', key).update(fingerprint).digest('hex').slice(0, 40);
}
