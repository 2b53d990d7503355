/**
 * Value paths, the keys of helm's `--set-string`: `a.b` nests maps, `a[0]` indexes lists, and a
 * backslash makes the next character literal, as in helm's strvals (`\.` keeps a dot for keys like
 * `example\.com/x`, `\\` a backslash, `\[` a bracket). One parser for watches.yaml's
 * overrideValues (checked at load) and a CR's values-from `targetPath` (written by whoever may
 * create a CR), so it is linear in its input and bounded in what it returns: a hostile path is
 * refused, never looped on or allocated (docs/adr/0043-bounded-parsers.md).
 */

export const VALUE_PATH_LIMITS = {
  /** Characters of the whole path: far beyond any real key, and it bounds the messages that quote one. */
  maxLength: 1024,
  /** Names and indexes together; helm's strvals stops at 30 nested names (MaxNestedNameLevel). */
  maxSegments: 32,
  /** helm's strvals MaxIndex: `a[65536]` is the last index helm sets (a list of 65537 entries). */
  maxIndex: 65536,
} as const;

export type ValuePath = (string | number)[];

/** A path that is not a value path, or is beyond the limits; `message` says which and where. */
export class ValuePathError extends Error {
  override readonly name = 'ValuePathError';
}

/** Characters a name holds only escaped: strvals' separators, and the index brackets. */
const SEPARATORS = new Set(['.', '[', ']', '=', ',']);

/** At most the first 40 characters, quoted: messages quote what the author wrote, never unbounded. */
const excerpt = (s: string): string => JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);

/** The name starting at `start` with its escapes undone, and where it ends. */
function readName(text: string, start: number): { name: string; end: number } {
  let name = '';
  let i = start;
  for (; i < text.length && !SEPARATORS.has(text.charAt(i)); i++) {
    if (text.charAt(i) === '\\') {
      if (i + 1 === text.length) throw new ValuePathError('the path ends with a lone backslash');
      i++;
    }
    name += text.charAt(i);
  }
  if (i === start) throw new ValuePathError(`a name is missing at character ${start + 1}`);
  return { name, end: i };
}

/** The index in the brackets opening at `open`, and where it ends (after the `]`). */
function readIndex(text: string, open: number): { index: number; end: number } {
  const { maxIndex } = VALUE_PATH_LIMITS;
  const close = text.indexOf(']', open + 1);
  if (close === -1) throw new ValuePathError(`"[" at character ${open + 1} is not closed by "]"`);
  const digits = text.slice(open + 1, close);
  if (!/^\d+$/.test(digits))
    throw new ValuePathError(`index ${excerpt(digits)} at character ${open + 2} is not a number from 0 to ${maxIndex}`);
  const index = Number(digits);
  if (index > maxIndex) throw new ValuePathError(`index ${excerpt(digits)} at character ${open + 2} is larger than ${maxIndex}`);
  return { index, end: close + 1 };
}

/**
 * The path's names (strings) and indexes (numbers). Digit-only names stay strings (`a.0` is a map
 * key). Throws ValuePathError for an empty name (`a..b`, `.a`, `a.`), an unclosed or non-numeric
 * index, a lone trailing backslash, and anything beyond VALUE_PATH_LIMITS.
 */
export function parseValuePath(text: string): ValuePath {
  const { maxLength, maxSegments } = VALUE_PATH_LIMITS;
  if (text.length === 0) throw new ValuePathError('the path is empty');
  if (text.length > maxLength) throw new ValuePathError(`the path is ${text.length} characters long, more than ${maxLength}`);
  const path: ValuePath = [];
  const push = (segment: string | number): void => {
    if (path.length === maxSegments) throw new ValuePathError(`the path has more than ${maxSegments} names and indexes`);
    path.push(segment);
  };
  // Every read moves `i` forward: the parse ends after at most text.length steps.
  for (let i = 0; ; i++) {
    const name = readName(text, i);
    push(name.name);
    i = name.end;
    while (text.charAt(i) === '[') {
      const index = readIndex(text, i);
      push(index.index);
      i = index.end;
    }
    if (i === text.length) return path;
    if (text.charAt(i) !== '.') throw new ValuePathError(`unexpected ${excerpt(text.charAt(i))} at character ${i + 1}`);
  }
}

/** Whether `segment` is an index parseValuePath could have returned: for paths built by hand. */
export const isValueIndex = (segment: number): boolean =>
  Number.isInteger(segment) && segment >= 0 && segment <= VALUE_PATH_LIMITS.maxIndex;

/** Why `text` is not a value path parseValuePath takes, or undefined: for validators that collect problems. */
export function valuePathProblem(text: string): string | undefined {
  try {
    parseValuePath(text);
    return undefined;
  } catch (err) {
    if (err instanceof ValuePathError) return err.message;
    throw err;
  }
}
