/**
 * Keeps sensitive values (those a CR takes from Secrets) out of what the operator writes for
 * people to read: status, events, logs. helm and the API server quote values in their errors
 * (`Invalid value: "<value>"`), and those errors become condition messages, events and log lines;
 * each such text is passed through a Redactor first. Pure.
 */
import { describeError } from '../../k8s/errors.js';
import { TerminalError } from '../../runtime/reconcile.js';
import { ReportedError } from '../core/outcome.js';
import { leafStringsAt } from '../../util/value-leaves.js';

export const REDACTED = '[redacted]';

/**
 * Shorter values are not redacted: replacing every "no" or "80" in a message would make it
 * unreadable, and a secret that short is no secret. Documented in docs/multi-tenancy.md#redaction.
 */
export const MIN_REDACTED_LENGTH = 4;

/**
 * The spellings under which `value` can show up in error text: as is, quoted the way Go's `%q` and
 * JSON quote it (helm and the API server quote values so), and base64 (a Secret's `data`).
 */
export function spellings(value: string): string[] {
  if (value.length < MIN_REDACTED_LENGTH) return [];
  const quoted = JSON.stringify(value).slice(1, -1);
  const forms = new Set([value, quoted, Buffer.from(value, 'utf8').toString('base64')]);
  // Each line of a multi-line value (a key file, a values.yaml) can be quoted on its own.
  for (const line of value.split('\n')) if (line.trim().length >= MIN_REDACTED_LENGTH) forms.add(line.trim());
  return [...forms];
}

/** The scalars, as text, of `values` at each dotted path (`auth.password`; a map path takes all below it). */
export function valuesAt(values: unknown, paths: readonly string[]): string[] {
  return leafStringsAt(
    values,
    paths.map((p) => p.split('.')),
  );
}

export class Redactor {
  /** Squeezed (see {@link squeeze}), longest first. */
  #forms: string[] = [];

  constructor(sensitive: Iterable<string> = []) {
    this.add(sensitive);
  }

  add(sensitive: Iterable<string>): void {
    const forms = new Set(this.#forms);
    for (const value of sensitive) {
      for (const form of spellings(value)) {
        const squeezed = squeeze(form);
        if (squeezed.length >= MIN_REDACTED_LENGTH) forms.add(squeezed);
      }
    }
    this.#forms = [...forms].sort((a, b) => b.length - a.length);
  }

  get empty(): boolean {
    return this.#forms.length === 0;
  }

  /**
   * `text` with every sensitive value masked: found whether the text kept the value's whitespace
   * or collapsed it (helm's summaries collapse runs of spaces, tabs and newlines), and where the
   * text was cut inside a value (at its end, or before an ellipsis) the prefix left of it too. Meant
   * for raw text, before anything shortens it; the whitespace and prefix cases are the second line.
   */
  text(text: string): string {
    if (this.#forms.length === 0) return text;
    const view = new SqueezedView(text);
    const ranges: Array<readonly [number, number]> = [];
    for (const form of this.#forms) {
      for (let j = view.text.indexOf(form); j >= 0; j = view.text.indexOf(form, j + form.length))
        ranges.push(view.range(j, j + form.length));
    }
    for (const cut of cutPoints(view.text)) {
      for (const form of this.#forms) {
        const k = overlap(view.text, cut, form);
        if (k >= MIN_REDACTED_LENGTH) ranges.push(view.range(cut - k, cut));
      }
    }
    return mask(text, ranges);
  }

  /** Every string in a JSON-like value (a status patch), keys included. */
  deep<T>(value: T): T {
    return this.empty ? value : redactedDeep(value, (t) => this.text(t));
  }
}

/** Pure: every string in a JSON-like value, keys included, passed through `redact` (a Redactor's text, or an action's). */
export function redactedDeep<T>(value: T, redact: (text: string) => string): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redact(v);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [redact(k), walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/** Whitespace runs as one space, trimmed: the form in which values are looked for. */
function squeeze(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/**
 * A text with each whitespace run as one space, mapped back to the text: a value is found in this
 * view whether the text kept its whitespace or collapsed it, and masked in the text itself. Kept as
 * segments (a word, a whitespace run), not a map per character: helm's stderr can be large.
 */
class SqueezedView {
  readonly text: string;
  /** Per segment: where it starts in the view, where in the text, whether it is whitespace. */
  readonly #segments: Array<{ readonly view: number; readonly text: number; readonly space: boolean }> = [];

  constructor(text: string) {
    const parts: string[] = [];
    let length = 0;
    for (const m of text.matchAll(/\s+|\S+/g)) {
      const space = /^\s/.test(m[0]);
      this.#segments.push({ view: length, text: m.index, space });
      const part = space ? ' ' : m[0];
      parts.push(part);
      length += part.length;
    }
    this.text = parts.join('');
  }

  /** The text's range for the view's [start, end), both ends on characters that are not whitespace. */
  range(start: number, end: number): readonly [number, number] {
    return [this.#at(start), this.#at(end - 1) + 1];
  }

  #at(v: number): number {
    let lo = 0;
    let hi = this.#segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.#segments[mid]?.view ?? 0) <= v) lo = mid;
      else hi = mid - 1;
    }
    const seg = this.#segments[lo];
    if (seg === undefined) return v;
    return seg.space ? seg.text : seg.text + (v - seg.view);
  }
}

/** Where a shortened text may have cut a value: its end, and each ellipsis (`…`, `...`) marking text left out. */
function cutPoints(view: string): number[] {
  const cuts = [view.trimEnd().length];
  for (const m of view.matchAll(/ ?(?:\u2026|\.\.\.)/g)) cuts.push(m.index);
  return cuts;
}

/** Length of the longest prefix of `form` that ends `view` at `cut` (the KMP failure function). */
function overlap(view: string, cut: number, form: string): number {
  const s = `${form}\u0000${view.slice(Math.max(0, cut - form.length), cut)}`;
  const fail: number[] = [0];
  for (let i = 1; i < s.length; i++) {
    let k = fail[i - 1] ?? 0;
    while (k > 0 && s[i] !== s[k]) k = fail[k - 1] ?? 0;
    if (s[i] === s[k]) k++;
    fail.push(k);
  }
  return fail[s.length - 1] ?? 0;
}

/** `text` with each of `ranges` (merged where they overlap or touch) replaced by {@link REDACTED}. */
function mask(text: string, ranges: ReadonlyArray<readonly [number, number]>): string {
  const merged: Array<[number, number]> = [];
  for (const [start, end] of [...ranges].sort((a, b) => a[0] - b[0])) {
    const last = merged.at(-1);
    if (last !== undefined && start <= last[1]) last[1] = Math.max(last[1], end);
    else merged.push([start, end]);
  }
  let out = '';
  let pos = 0;
  for (const [start, end] of merged) {
    out += `${text.slice(pos, start)}${REDACTED}`;
    pos = end;
  }
  return out + text.slice(pos);
}

/**
 * The error a reconcile ends with, as the controller may log it: without the sensitive values its
 * message or causes quote. Its kind (terminal or not) is kept; its causes go, as they are raw
 * helm or API server text. Unchanged when the CR has nothing sensitive.
 */
export function redactedError(err: unknown, redact: Redactor): unknown {
  if (redact.empty) return err;
  const message = redact.text(err instanceof Error ? err.message : describeError(err));
  if (err instanceof ReportedError) return new ReportedError(message);
  if (err instanceof TerminalError || (err instanceof Error && err.cause instanceof TerminalError)) return new TerminalError(message);
  return new Error(message);
}
