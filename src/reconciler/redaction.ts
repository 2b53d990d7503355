/**
 * Keeps sensitive values (those a CR takes from Secrets) out of what the operator writes for
 * people to read: status, events, logs. helm and the API server quote values in their errors
 * (`Invalid value: "<value>"`), and those errors become condition messages, events and log lines;
 * each such text is passed through a Redactor first. Pure.
 */

export const REDACTED = '[redacted]';

/**
 * Shorter values are not redacted: replacing every "no" or "80" in a message would make it
 * unreadable, and a secret that short is no secret. Documented in the README.
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

/** The scalars of a values tree as text (`password: 1234` leaks as "1234" too). */
export function leafStrings(values: unknown): string[] {
  if (typeof values === 'string') return [values];
  if (typeof values === 'number' || typeof values === 'bigint') return [String(values)];
  if (Array.isArray(values)) return values.flatMap(leafStrings);
  if (typeof values === 'object' && values !== null) return Object.values(values).flatMap(leafStrings);
  return [];
}

/** The scalars, as text, of `values` at each dotted path (`auth.password`; a map path takes all below it). */
export function valuesAt(values: unknown, paths: readonly string[]): string[] {
  return paths.flatMap((path) => {
    let node: unknown = values;
    for (const key of path.split('.')) {
      if (typeof node !== 'object' || node === null || Array.isArray(node)) return [];
      node = (node as Record<string, unknown>)[key];
    }
    return leafStrings(node);
  });
}

export class Redactor {
  /** Longest first, so that a value containing another is replaced whole. */
  #forms: string[] = [];

  constructor(sensitive: Iterable<string> = []) {
    this.add(sensitive);
  }

  add(sensitive: Iterable<string>): void {
    const forms = new Set(this.#forms);
    for (const value of sensitive) for (const form of spellings(value)) forms.add(form);
    this.#forms = [...forms].sort((a, b) => b.length - a.length);
  }

  get empty(): boolean {
    return this.#forms.length === 0;
  }

  text(text: string): string {
    let out = text;
    for (const form of this.#forms) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return out;
  }

  /** Every string in a JSON-like value (a status patch), keys included. */
  deep<T>(value: T): T {
    return this.empty ? value : (this.#deep(value) as T);
  }

  #deep(value: unknown): unknown {
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((v) => this.#deep(v));
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [this.text(k), this.#deep(v)]));
    }
    return value;
  }
}
