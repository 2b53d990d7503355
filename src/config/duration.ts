/**
 * Go `time.Duration` text, as used by `reconcilePeriod` in watches.yaml and by the
 * `--reconcile-period` style flags. Parsing follows Go's `time.ParseDuration` exactly, except that
 * negative durations are rejected: no setting of ours has a meaning for them.
 */

const EXPECTED = 'expected a number followed by a unit (ns, us, ms, s, m, h), e.g. "30s" or "1m30s"';

/** Nanoseconds per unit. Both spellings of micro (U+00B5 and U+03BC) are accepted, as in Go. */
const UNIT_NS: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n],
  ['\u03bcs', 1_000n],
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
]);

/** Go stores durations in an int64 of nanoseconds; staying inside it keeps both sides in agreement. */
const MAX_NS = 2n ** 63n - 1n;

const NS_PER_MS = 1_000_000n;

export class DurationError extends Error {
  override readonly name = 'DurationError';
  /** The text that failed to parse, verbatim. */
  readonly input: string;
  /** Why it failed, without the `invalid duration "<input>": ` prefix. */
  readonly reason: string;

  constructor(input: string, reason: string) {
    super(`invalid duration ${JSON.stringify(input)}: ${reason}`);
    this.input = input;
    this.reason = reason;
  }
}

interface Term {
  readonly ns: bigint;
  readonly rest: string;
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/** Splits `<digits>[.<digits>]` off the front of `s`; undefined when there is no digit at all. */
function splitNumber(s: string): { readonly whole: string; readonly fraction: string; readonly rest: string } | undefined {
  const match = /^(\d*)(?:\.(\d*))?/.exec(s);
  const whole = match?.[1] ?? '';
  const fraction = match?.[2] ?? '';
  if (whole === '' && fraction === '') return undefined;
  return { whole, fraction, rest: s.slice(match?.[0].length ?? 0) };
}

/** Like Go, the unit is everything up to the next digit or dot, so "5 minutes" has unit " minutes". */
function splitUnit(s: string): { readonly unit: string; readonly rest: string } {
  let end = 0;
  while (end < s.length && !isDigit(s[end]) && s[end] !== '.') end++;
  return { unit: s.slice(0, end), rest: s.slice(end) };
}

/** One `<digits>[.<digits>]<unit>` term from the front of `s`. */
function parseTerm(input: string, s: string): Term {
  const number = splitNumber(s);
  if (number === undefined) throw new DurationError(input, EXPECTED);
  const { unit, rest } = splitUnit(number.rest);
  if (unit === '') throw new DurationError(input, `${EXPECTED} (missing unit)`);
  const scale = UNIT_NS.get(unit);
  if (scale === undefined) throw new DurationError(input, `${EXPECTED} (unknown unit ${JSON.stringify(unit)})`);
  const { whole, fraction } = number;
  // Go truncates the fractional part to whole nanoseconds; so do we.
  const fractionNs = fraction === '' ? 0n : (BigInt(fraction) * scale) / 10n ** BigInt(fraction.length);
  return { ns: BigInt(whole === '' ? '0' : whole) * scale + fractionNs, rest };
}

/** Parses Go duration text to nanoseconds. */
function parseNanoseconds(text: string): bigint {
  if (text.startsWith('-')) throw new DurationError(text, 'negative durations are not allowed');
  const body = text.startsWith('+') ? text.slice(1) : text;
  if (body === '0') return 0n;
  if (body === '') throw new DurationError(text, EXPECTED);
  let total = 0n;
  let rest = body;
  while (rest !== '') {
    const term = parseTerm(text, rest);
    total += term.ns;
    if (total > MAX_NS) throw new DurationError(text, 'out of range (the maximum is 2562047h47m16.854775807s)');
    rest = term.rest;
  }
  return total;
}

/**
 * Parses Go duration syntax (`300ms`, `1.5h`, `1m30s`, `2h45m`; a bare `0` is allowed) into
 * milliseconds, which may be fractional for sub-millisecond input.
 *
 * @throws {DurationError} on empty, negative, unit-less or otherwise malformed text.
 */
export function parseDuration(text: string): number {
  const ns = parseNanoseconds(text);
  return Number(ns / NS_PER_MS) + Number(ns % NS_PER_MS) / 1e6;
}

/** `.<digits>` for the part of `value` below 10^precision, trailing zeros dropped; '' when that part is zero. */
function fraction(value: bigint, precision: number): string {
  const digits = (value % 10n ** BigInt(precision)).toString().padStart(precision, '0').replace(/0+$/, '');
  return digits === '' ? '' : `.${digits}`;
}

function formatNanoseconds(ns: bigint): string {
  if (ns === 0n) return '0s';
  if (ns < 1_000n) return `${ns}ns`;
  if (ns < 1_000_000n) return `${ns / 1_000n}${fraction(ns, 3)}\u00b5s`;
  if (ns < 1_000_000_000n) return `${ns / 1_000_000n}${fraction(ns, 6)}ms`;
  const seconds = ns / 1_000_000_000n;
  const secondsPart = `${seconds % 60n}${fraction(ns, 9)}s`;
  const minutes = seconds / 60n;
  if (minutes === 0n) return secondsPart;
  const hours = minutes / 60n;
  const minutesPart = `${minutes % 60n}m${secondsPart}`;
  return hours === 0n ? minutesPart : `${hours}h${minutesPart}`;
}

/**
 * Formats milliseconds the way Go's `Duration.String` does (`1m30s`, `1h0m0s`, `1.5s`, `300ms`,
 * `0s`), so messages and status read like the flags users type. Input is rounded to whole
 * nanoseconds; negative input gets a leading `-`.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  const ns = BigInt(Math.round(ms * 1e6));
  return ns < 0n ? `-${formatNanoseconds(-ns)}` : formatNanoseconds(ns);
}
