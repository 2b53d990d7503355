/**
 * YAML as helm reads it. Helm turns every values file and every rendered manifest into JSON with
 * sigs.k8s.io/yaml, which decodes with go-yaml v2: YAML 1.1 scalars (`0400` is 256, `yes`/`on`/`y`
 * are true), merge keys that overwrite what precedes them, and duplicate keys where the last one
 * wins. The `yaml` package's default is YAML 1.2 (`0400` is 400, `yes` a string), so reading a chart's
 * manifest or values with it disagrees with what helm sent to the API server. This module is the
 * one reader for those texts; docs/adr/0028-yaml-as-helm-reads-it.md lists where go-yaml v2
 * departs from the `yaml` package's own YAML 1.1 schema and why each tag below exists.
 *
 * Not mirrored: integers beyond 2^53 (JavaScript numbers; helm's values are float64 anyway), the
 * 32-bit formatting of float map keys, and helm's refusal of a null map key.
 */
import {
  Document,
  isAlias,
  isMap,
  isSeq,
  parseAllDocuments,
  parseDocument,
  Scalar,
  type DocumentOptions,
  type ParseOptions,
  type SchemaOptions,
  type ScalarTag,
  type Tags,
} from 'yaml';
import { stringifyNumber, type ToJSContext } from 'yaml/util';

/** A values file or manifest document helm would refuse too, with the first problem and its line. */
export class HelmYamlError extends Error {
  override readonly name = 'HelmYamlError';
}

const TAG = 'tag:yaml.org,2002:';

// go-yaml v2 resolves a plain scalar by a lookup table of exact spellings (resolve.go), so the
// mixed-case forms YAML 1.1 lists (`yEs`) stay strings.
const TRUE = ['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'];
const FALSE = ['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'];
const NULL = ['', '~', 'null', 'Null', 'NULL'];
const exactly = (words: readonly string[]): RegExp => new RegExp(`^(?:${words.join('|')})$`);

/**
 * Integers as go-yaml v2 reads them: every `_` removed, then Go's `strconv.ParseInt(s, 0, 64)`:
 * `0x`/`0X` hex, `0o`/`0O` and a leading `0` octal, `0b`/`0B` binary (YAML 1.1 has no `0o`, Go
 * does). The first character is a digit or a sign (go-yaml's hint table), so `_1` is a string.
 */
const SIGN = '(?:[-+]_*)?';
const INT_FORMS = {
  HEX: { test: new RegExp(`^${SIGN}0_*[xX][_0-9a-fA-F]*[0-9a-fA-F][_0-9a-fA-F]*$`), radix: 16, prefix: '0x' },
  OCT: { test: new RegExp(`^${SIGN}(?:0_*[oO][_0-7]*[0-7][_0-7]*|0[_0-7]*)$`), radix: 8, prefix: '0o' },
  BIN: { test: new RegExp(`^${SIGN}0_*[bB][_01]*[01][_01]*$`), radix: 2, prefix: '' },
  DEC: { test: new RegExp(`^${SIGN}[1-9][_0-9]*$`), radix: 10, prefix: '' },
} as const;

/**
 * Floats: `_` removed, then go-yaml's `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`. A
 * scalar starting with `.` goes to Go's `ParseFloat` as written, which takes a `_` only between
 * two digits. No sexagesimal (`1:20` stays a string: go-yaml dropped base 60), unlike the `yaml`
 * package's YAML 1.1 schema.
 */
const FLOAT =
  /^(?:(?:[-+]_*(?:\._*[0-9][_0-9]*|[0-9][_0-9]*(?:\.[_0-9]*)?)|[0-9][_0-9]*(?:\.[_0-9]*)?)(?:[eE]_*(?:[-+]_*)?[0-9][_0-9]*)?|\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?)$/;
const PLAIN_FLOAT = /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/;
const NOT_FINITE = /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/;

const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n, umax: 2n ** 64n - 1n };

/**
 * Pure: the value of an integer scalar. Out of int64 (and, unsigned, of uint64) Go's parsers give
 * up and go-yaml falls through to its float pattern, else keeps the text.
 */
function resolveInt(text: string, radix: 2 | 8 | 10 | 16): number | string {
  const plain = text.replace(/_/g, '');
  const negative = plain.startsWith('-');
  const unsigned = plain.replace(/^[-+]/, '');
  const digits = radix === 10 ? unsigned : unsigned.replace(/^0[xXoObB]?/, '');
  const magnitude = digits === '' ? 0n : BigInt(`${{ 2: '0b', 8: '0o', 10: '', 16: '0x' }[radix]}${digits}`);
  const value = negative ? -magnitude : magnitude;
  const inRange = (value >= INT64.min && value <= INT64.max) || (!/^[-+]/.test(plain) && value <= INT64.umax);
  if (inRange) return value === 0n ? 0 : Number(value);
  return PLAIN_FLOAT.test(plain) ? Number.parseFloat(plain) : text;
}

function intTag(format: keyof typeof INT_FORMS): ScalarTag {
  const { test, radix, prefix } = INT_FORMS[format];
  return {
    identify: (v) => Number.isInteger(v),
    default: true,
    tag: `${TAG}int`,
    ...(format === 'DEC' ? {} : { format }),
    test,
    resolve: (text) => resolveInt(text, radix),
    // Written back (a scaffolded sample) in a form YAML 1.1 and 1.2 readers agree on: `0o400`
    // rather than `0400`, decimal for binary, which YAML 1.2 lacks.
    stringify: (node) => {
      const { value } = node;
      if (prefix === '' || typeof value !== 'number' || !Number.isInteger(value)) return stringifyNumber(node);
      return `${value < 0 ? '-' : ''}${prefix}${Math.abs(value).toString(radix)}`;
    },
  };
}

const boolTag = (value: boolean, words: readonly string[]): ScalarTag => ({
  identify: (v) => v === value,
  default: true,
  tag: `${TAG}bool`,
  test: exactly(words),
  resolve: () => value,
  // `true`/`false`, never the source's `yes`/`on`, which a YAML 1.2 reader takes for a string.
  stringify: () => String(value),
});

const nullTag: ScalarTag = {
  identify: (v) => v === null || v === undefined,
  default: true,
  tag: `${TAG}null`,
  test: exactly(NULL),
  resolve: () => null,
  // Every spelling go-yaml reads as null is null in YAML 1.2 too.
  stringify: ({ source }) => (typeof source === 'string' && NULL.includes(source) ? source : 'null'),
};

const floatTag: ScalarTag = {
  identify: (v) => typeof v === 'number',
  default: true,
  tag: `${TAG}float`,
  test: FLOAT,
  // Beyond float64 Go's ParseFloat fails and go-yaml keeps the text. A written `1.50` stays so.
  resolve: (text) => {
    const plain = text.replace(/_/g, '');
    const value = Number.parseFloat(plain);
    if (!Number.isFinite(value)) return text;
    const fraction = /\.([0-9]*0)(?:[eE]|$)/.exec(plain)?.[1];
    return fraction === undefined ? value : Object.assign(new Scalar(value), { minFractionDigits: fraction.length });
  },
  stringify: stringifyNumber,
};

/** helm turns the decoded value into JSON, which has no infinity or NaN: it refuses the file. */
const notFiniteTag: ScalarTag = {
  identify: (v) => typeof v === 'number' && !Number.isFinite(v),
  default: true,
  tag: `${TAG}float`,
  format: 'NOT_FINITE',
  test: NOT_FINITE,
  resolve: (text, onError) => {
    onError(`${text} is not a number JSON can hold (helm refuses it: "json: unsupported value")`);
    return text.toLowerCase().endsWith('nan') ? Number.NaN : text.startsWith('-') ? -Infinity : Infinity;
  },
  stringify: stringifyNumber,
};

// go-yaml v2 decodes a timestamp into an interface{} as its text, and `!!binary` as the decoded
// bytes in a string; neither resolves implicitly to anything but a string.
const explicitOnly: ScalarTag[] = [
  { identify: () => false, tag: `${TAG}timestamp`, resolve: (text) => text },
  { identify: () => false, tag: `${TAG}binary`, resolve: (text) => Buffer.from(text.replace(/\s/g, ''), 'base64').toString('utf8') },
];

/**
 * `<<` as go-yaml v2 applies it: the merged map's keys are set in place when the key is met, so
 * they overwrite keys written before it and are overwritten by keys after it; in a list of maps
 * the earlier map wins. (The YAML 1.1 merge spec, which the `yaml` package follows, never lets a
 * merged key overwrite an explicit one.)
 */
const MERGE = '<<';
const mergeTag: ScalarTag = {
  identify: (v) => v === MERGE || (typeof v === 'symbol' && v.description === MERGE),
  default: 'key',
  tag: `${TAG}merge`,
  test: /^<<$/,
  resolve: () => Object.assign(new Scalar(Symbol(MERGE)), { addToJSMap: mergeInto }),
  stringify: () => MERGE,
};

type MapLike = Map<unknown, unknown> | Set<unknown> | Record<string | number | symbol, unknown>;

function mergeInto(ctx: ToJSContext | undefined, target: MapLike, value: unknown): void {
  const source = resolveAlias(ctx, value);
  const maps = isSeq(source) ? [...source.items].reverse() : [source];
  for (const m of maps) mergeMap(ctx, target, resolveAlias(ctx, m));
}

function mergeMap(ctx: ToJSContext | undefined, target: MapLike, source: unknown): void {
  if (!isMap(source)) throw new HelmYamlError('map merge requires map or sequence of maps as the value');
  const entries = source.toJSON(null, ctx, Map) as Map<unknown, unknown>;
  for (const [key, v] of entries) {
    if (target instanceof Map) target.set(key, v);
    else if (target instanceof Set) target.add(key);
    else Object.defineProperty(target, jsonKey(key), { value: v, writable: true, enumerable: true, configurable: true });
  }
}

/** A key as the `yaml` package writes one into a plain object. */
const jsonKey = (key: unknown): string => {
  if (key === null) return '';
  if (typeof key === 'string') return key;
  if (typeof key === 'number' || typeof key === 'boolean' || typeof key === 'bigint') return String(key);
  // The rest are collections used as keys.
  return typeof key === 'symbol' ? String(key) : JSON.stringify(key);
};

const resolveAlias = (ctx: ToJSContext | undefined, value: unknown): unknown =>
  ctx !== undefined && isAlias(value) ? value.resolve(ctx.doc, ctx) : value;

const SCALAR_TAGS: ScalarTag[] = [
  nullTag,
  boolTag(true, TRUE),
  boolTag(false, FALSE),
  intTag('BIN'),
  intTag('OCT'),
  intTag('HEX'),
  intTag('DEC'),
  notFiniteTag,
  floatTag,
  mergeTag,
  ...explicitOnly,
];

/** Keeps the schema's map, sequence and string tags and puts go-yaml's scalars in place of its own. */
const KEPT = new Set([`${TAG}map`, `${TAG}seq`, `${TAG}str`]);
const helmTags = (tags: Tags): Tags => [...tags.filter((t) => typeof t !== 'string' && KEPT.has(t.tag)), ...SCALAR_TAGS];

/**
 * Parser and schema options for YAML as helm reads it. `uniqueKeys: false`: go-yaml v2 (not
 * strict) keeps the last of duplicate keys, where the `yaml` package refuses them.
 */
export const HELM_YAML_OPTIONS = {
  version: '1.1',
  schema: 'yaml-1.1',
  customTags: helmTags,
  merge: false,
  resolveKnownTags: false,
  uniqueKeys: false,
} as const satisfies ParseOptions & DocumentOptions & SchemaOptions;

export interface ReadOptions {
  /**
   * Aliases a document may expand, per anchor (the `yaml` package's measure; -1: no limit). 100 by
   * default: a values file from a CR's namespace is untrusted input.
   */
  readonly maxAliasCount?: number;
  /**
   * Nodes the document may have once its aliases are expanded (what JSON of it holds). go-yaml v2
   * bounds the same thing by a ratio of aliases to nodes decoded, which lets a small document expand
   * to millions of nodes; a bound of our own keeps reading it within the operator's memory.
   */
  readonly maxNodes?: number;
}

const firstError = (doc: Document.Parsed): HelmYamlError | undefined => {
  const e = doc.errors[0];
  return e === undefined ? undefined : new HelmYamlError(e.message.split('\n')[0] ?? e.message);
};

/** Characters go-yaml v2 reads as line breaks or refuses as unprintable, and escaped lone surrogates. */
const NOT_PLAIN_JSON = /[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]|\\u[dD][89abAB]|\\u[dD][c-fC-F]|"__proto__"/;

/**
 * Pure: a document that is, under whole-line comments, one line of JSON exactly as `JSON.stringify`
 * writes it (no duplicate key, every number one that prints back the same, no character YAML 1.1
 * reads otherwise), read with `JSON.parse`: what the YAML reader makes of it, for a fraction of the
 * cost. The post-renderer writes every object it stamps so (render-ownership.ts), and the deployed
 * manifest of each install is read again to keep it (manifest-cache.ts): through the YAML parser
 * that was a third of the operator's allocation in a converge. Anything else is undefined, and the
 * YAML reader decides. Within `maxNodes` by length: every JSON node takes at least one character.
 */
function canonicalJson(text: string, options: ReadOptions): { value: unknown } | undefined {
  if (!text.includes('{') || (options.maxNodes !== undefined && text.length > options.maxNodes)) return undefined;
  const body = text.split('\n').filter((line) => !/^[ \t]*(?:#.*)?$/.test(line));
  const line = body[0];
  if (body.length !== 1 || line === undefined || !line.startsWith('{') || NOT_PLAIN_JSON.test(line)) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return JSON.stringify(value) === line ? { value } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Pure: one YAML document as helm reads it, as plain JSON-able data (null when empty).
 * @throws {HelmYamlError} when helm would refuse the text.
 */
export function readHelmYaml(text: string, options: ReadOptions = {}): unknown {
  const json = canonicalJson(text, options);
  if (json !== undefined) return json.value;
  const doc = parseDocument(text, HELM_YAML_OPTIONS);
  const error = firstError(doc);
  if (error !== undefined) throw error;
  return toPlain(doc, options);
}

/**
 * Pure: every document of a stream (a rendered manifest) as helm reads it. A document with an
 * error gives what could be read of it: the stream is one helm already applied.
 */
export function readHelmYamlStream(text: string, options: ReadOptions = {}): unknown[] {
  return splitHelmStream(text).map((chunk) => {
    const json = canonicalJson(chunk, options);
    if (json !== undefined) return json.value;
    // go-yaml reads the first document of a chunk (a `--- x` line inside it starts another).
    const [doc] = parseAllDocuments(chunk, HELM_YAML_OPTIONS);
    if (doc === undefined) return null;
    try {
      return toPlain(doc, options);
    } catch {
      return undefined;
    }
  });
}

/** Go's unicode.IsSpace, which JavaScript's `\s` is not quite (U+0085 in, U+FEFF out). */
const GO_SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const SEPARATOR_LINE = new RegExp(`^---${GO_SPACE}*$`, 'u');

/**
 * Pure: a stream cut into documents where helm's apply cuts it (apimachinery's YAMLReader: a line
 * that is `---` and then only white space), not where a YAML parser does. The two disagree (a `---`
 * line inside a quoted scalar; `--- # comment`), and what helm creates is what its cut gives.
 */
export function splitHelmStream(text: string): string[] {
  const chunks: string[] = [];
  let current: string[] = [];
  for (const line of text.split(/(?<=\n)/)) {
    if (SEPARATOR_LINE.test(line)) {
      chunks.push(current.join(''));
      current = [];
    } else current.push(line);
  }
  chunks.push(current.join(''));
  return chunks;
}

/** Pure: the document tree (comments kept) with helm's scalars, e.g. to write it back. */
export function parseHelmYamlDocument(text: string, options: { prettyErrors?: boolean } = {}): Document.Parsed {
  return parseDocument(text, { ...HELM_YAML_OPTIONS, ...options });
}

/** An empty document with helm's schema, whose text YAML 1.1 and 1.2 readers read alike. */
export function newHelmYamlDocument(value: unknown): Document {
  // compat 'core': a string that YAML 1.2 would read as something else is quoted too.
  return new Document(value, { ...HELM_YAML_OPTIONS, compat: 'core' });
}

function toPlain(doc: Document.Parsed, options: ReadOptions): unknown {
  let value: unknown;
  try {
    // toJS shares an anchor's value among its aliases: linear in the text whatever the expansion.
    value = doc.toJS({ maxAliasCount: options.maxAliasCount ?? 100 });
  } catch (err) {
    if (err instanceof HelmYamlError) throw err;
    throw new HelmYamlError(err instanceof Error ? err.message : String(err));
  }
  if (options.maxNodes !== undefined && !withinNodes(value, options.maxNodes)) {
    throw new HelmYamlError(
      `the document expands to more than ${options.maxNodes} nodes through its aliases (or an alias contains itself)`,
    );
  }
  return value;
}

/**
 * Pure: whether `value`, its shared parts counted each time they are reached (as JSON would write
 * them), has at most `max` nodes. Iterative and stops at `max`, so a cycle or an exponential
 * expansion costs `max` steps.
 */
export function withinNodes(value: unknown, max: number): boolean {
  const stack: unknown[] = [value];
  let count = 0;
  while (stack.length > 0) {
    const v = stack.pop();
    if (++count > max) return false;
    if (typeof v !== 'object' || v === null) continue;
    for (const child of Array.isArray(v) ? (v as unknown[]) : Object.values(v)) stack.push(child);
  }
  return true;
}
