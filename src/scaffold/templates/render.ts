/**
 * The scaffolded files' templates: files under ./files/ that read like the files they produce
 * (docs/adr/0051). The one piece of syntax is `{{ name }}`, replaced by a value the caller passes;
 * choices are made in TypeScript, which passes pre-rendered fragments (an empty string for "none").
 */
import { readFileSync } from 'node:fs';

/** Beside this module: in src/ (tsx, vitest) and in dist/, where `npm run build` (and so prepack) copies them. */
const FILES = new URL('files/', import.meta.url);

export class TemplateError extends Error {
  override readonly name = 'TemplateError';
}

const PLACEHOLDER = /\{\{\s*([A-Za-z][A-Za-z0-9]*)\s*\}\}/g;

/**
 * `text` with each `{{ name }}` replaced by `values[name]`. A name without a value and a `{{` that
 * opens no placeholder are errors naming `source:line`: a typo in a template or its caller fails
 * the tests instead of shipping a literal `{{ projectName }}`.
 * @throws TemplateError
 */
export function substitute(text: string, values: Readonly<Record<string, string>>, source: string): string {
  const lineOf = (offset: number): number => text.slice(0, offset).split('\n').length;
  const stray = text.replace(PLACEHOLDER, (m) => ' '.repeat(m.length)).indexOf('{{');
  if (stray >= 0) throw new TemplateError(`${source}:${lineOf(stray)}: "{{" opens no {{ name }} placeholder`);
  return text.replace(PLACEHOLDER, (_match, name: string, offset: number) => {
    if (!Object.hasOwn(values, name)) throw new TemplateError(`${source}:${lineOf(offset)}: no value for {{ ${name} }}`);
    return values[name] ?? '';
  });
}

const cache = new Map<string, string>();

/** The template `files/<name>.tmpl`, read once. */
export function template(name: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    text = readFileSync(new URL(`${name}.tmpl`, FILES), 'utf8');
    cache.set(name, text);
  }
  return text;
}

/** `files/<name>.tmpl` rendered with `values` (see {@link substitute}). */
export const render = (name: string, values: Readonly<Record<string, string>> = {}): string =>
  substitute(template(name), values, `src/scaffold/templates/files/${name}.tmpl`);
