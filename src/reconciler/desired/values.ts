/**
 * Chart values for a CR: its `spec`, with the watch's `overrideValues` deep-merged on top (override
 * wins), and the fingerprint that decides whether helm has anything to do.
 */
import { createHash } from 'node:crypto';
import { hmacSha256 } from '../../util/hmac.js';
import { canonicalJson } from '../../util/canonical-json.js';
import { isPlainObject } from '../../util/plain-object.js';
import { isValueIndex, parseValuePath, VALUE_PATH_LIMITS, ValuePathError, type ValuePath } from '../../config/value-path.js';

export type Values = Record<string, unknown>;

/** An own, plain data property even for `__proto__`: like helm's Go maps, never the prototype. */
const setOwn = (node: object, key: string | number, value: unknown): void => {
  Object.defineProperty(node, key, { value, writable: true, enumerable: true, configurable: true });
};

/**
 * Sets `value` at `path`, creating maps and lists on the way (helm's `--set-string`). A path
 * parseValuePath would not return (an index past helm's MaxIndex, too many segments) throws
 * ValuePathError before anything is set: a list is never grown to a length a CR author chose.
 */
export function setValueAt(target: Values, path: Readonly<ValuePath>, value: string): void {
  if (path.length > VALUE_PATH_LIMITS.maxSegments)
    throw new ValuePathError(`the path has more than ${VALUE_PATH_LIMITS.maxSegments} names and indexes`);
  const bad = path.find((s) => typeof s === 'number' && !isValueIndex(s));
  if (bad !== undefined) throw new ValuePathError(`index ${String(bad)} is not a number from 0 to ${VALUE_PATH_LIMITS.maxIndex}`);
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
  // The keys were checked when watches.yaml was loaded: a bad one here is a bug, and throws.
  for (const [key, value] of Object.entries(overrides)) setValueAt(merged, parseValuePath(key), value);
  return merged;
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
  return hmacSha256(key).update(fingerprint).digest('hex').slice(0, 40);
}
