/**
 * Which values of a revision were secret (taken from a Secret, or under a watch's
 * `sensitiveValues`), recorded on the revision itself as release labels. A later plan reads them
 * from the deployed revision's record: a field whose value came from a Secret then, and no longer
 * does (the reference now names a ConfigMap, or the spec sets it), still holds the old secret in
 * the live object, and only this record says it is one. On the release, not in this process's
 * memory: a restarted operator and `plan diff` plan alike. Only paths are recorded, never values;
 * the values stay in helm's storage, beside these labels, where only who may read them does.
 * Pure.
 */
import { isPlainObject } from '../../util/plain-object.js';
import type { ValuePath } from '../../config/value-path.js';

/** The label of the first chunk; the next are `-1`, `-2`, ... */
export const SECRET_PATHS_LABEL = 'helm.sdk.operatorframework.io/secret-paths';
/** Label values are at most 63 characters. */
const CHUNK = 63;
/** Beyond this many labels the record says "every value": the next plan hides every old value it finds. */
const MAX_CHUNKS = 16;
/** The root path: every value of the revision. */
const EVERYTHING: ValuePath[] = [[]];
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** Pure: the leaf paths of a values map (a list's items by index). */
export function leafPaths(values: unknown, at: ValuePath = []): ValuePath[] {
  if (Array.isArray(values)) return values.flatMap((v, i) => leafPaths(v, [...at, i]));
  if (isPlainObject(values)) return Object.entries(values).flatMap(([k, v]) => leafPaths(v, [...at, k]));
  return [at];
}

/** Pure: the paths the references' Secrets set (values-from.ts secretValuePaths) with the watch's sensitive paths, each once. */
export function secretPaths(fromSecrets: readonly ValuePath[], sensitiveValues: readonly string[]): ValuePath[] {
  const seen = new Set<string>();
  return [...fromSecrets, ...sensitiveValues.map((p) => p.split('.'))].filter((p) => {
    const key = JSON.stringify(p);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let acc = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32.charAt((acc >>> (bits - 5)) & 31);
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
  }
  return bits > 0 ? out + BASE32.charAt((acc << (5 - bits)) & 31) : out;
}

function unbase32(text: string): Buffer | undefined {
  const out: number[] = [];
  let bits = 0;
  let acc = 0;
  for (const c of text) {
    const v = BASE32.indexOf(c);
    if (v < 0) return undefined;
    acc = (acc << 5) | v;
    bits += 5;
    if (bits >= 8) {
      out.push((acc >>> (bits - 8)) & 255);
      bits -= 8;
    }
    acc &= (1 << bits) - 1;
  }
  return Buffer.from(out);
}

const labelKey = (i: number): string => (i === 0 ? SECRET_PATHS_LABEL : `${SECRET_PATHS_LABEL}-${i}`);

/** Pure: the release labels recording `paths` (none when there are none); too many to record are recorded as every value. */
export function secretPathsLabels(paths: readonly ValuePath[]): Record<string, string> {
  if (paths.length === 0) return {};
  const encode = (p: readonly ValuePath[]): string => base32(Buffer.from(JSON.stringify(p), 'utf8'));
  let text = encode(paths);
  if (text.length > CHUNK * MAX_CHUNKS) text = encode(EVERYTHING);
  const labels: Record<string, string> = {};
  for (let i = 0; i * CHUNK < text.length; i++) labels[labelKey(i)] = text.slice(i * CHUNK, (i + 1) * CHUNK);
  return labels;
}

const isPaths = (v: unknown): v is ValuePath[] =>
  Array.isArray(v) && v.every((p) => Array.isArray(p) && p.every((s) => typeof s === 'string' || typeof s === 'number'));

/**
 * Pure: the paths a revision's labels record; none for a revision without the labels (made
 * before they were, or with no secret values); every value for labels that do not read back.
 */
export function readSecretPaths(labels: Readonly<Record<string, string>>): ValuePath[] {
  let text = '';
  for (let i = 0, chunk = labels[labelKey(0)]; chunk !== undefined; chunk = labels[labelKey(++i)]) text += chunk;
  if (text === '') return [];
  try {
    const parsed: unknown = JSON.parse(unbase32(text)?.toString('utf8') ?? '');
    if (isPaths(parsed)) return parsed;
  } catch {
    // Read as every value, below.
  }
  return EVERYTHING;
}
