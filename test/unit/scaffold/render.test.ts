/** The templates' one piece of syntax, `{{ name }}` (src/scaffold/templates/render.ts). */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { render, substitute, TemplateError } from '../../../src/scaffold/templates/render.js';

const FILES = path.resolve(import.meta.dirname, '../../../src/scaffold/templates/files');
const GOLDEN = path.resolve(import.meta.dirname, '../../fixtures/scaffold-init/registry');

describe('substitute', () => {
  it('replaces each placeholder, with or without spaces, and leaves the rest byte for byte', () => {
    expect(substitute('a {{ x }}-{{y}}\n\t$$(b) ${c} { d }\n', { x: '1', y: '2' }, 't')).toBe('a 1-2\n\t$$(b) ${c} { d }\n');
  });

  it('inserts values verbatim: no replacement patterns, no escaping', () => {
    expect(substitute('{{ v }}', { v: "$& $1 $$ <a href='x'>\n" }, 't')).toBe("$& $1 $$ <a href='x'>\n");
  });

  it('fails on a placeholder without a value, naming the template and line', () => {
    expect(() => substitute('one\ntwo {{ projectName }}\n', { projectname: 'x' }, 'files/PROJECT.tmpl')).toThrow(
      new TemplateError('files/PROJECT.tmpl:2: no value for {{ projectName }}'),
    );
  });

  it('fails on a "{{" that opens no placeholder, naming the line', () => {
    expect(() => substitute('a\nb\n{{ not a name }}\n', {}, 'x.tmpl')).toThrow('x.tmpl:3: "{{" opens no {{ name }} placeholder');
    expect(() => substitute('{{ x }} {{', { x: '1' }, 'x.tmpl')).toThrow('x.tmpl:1:');
  });

  it('does not take a name from the prototype chain', () => {
    expect(() => substitute('{{ constructor }}', {}, 'x.tmpl')).toThrow('no value for {{ constructor }}');
  });
});

describe('the template files', () => {
  const templates = readdirSync(FILES, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(FILES, path.join(e.parentPath, e.name)));

  it('are each a file init writes (no template left unused)', () => {
    expect(templates.length).toBeGreaterThan(0);
    for (const t of templates) {
      const written = t.replace(/\.tmpl$/, '').replace(/^(gitignore|dockerignore)$/, '.$1');
      expect(existsSync(path.join(GOLDEN, `${written}.golden`)), t).toBe(true);
    }
  });

  it('keep the Makefile recipes as real tabs', () => {
    const makefile = render('Makefile', { projectName: 'p', runtimePackage: 'r', commitVendored: '' });
    expect(makefile).toMatch(/^run: .*\n\t\$\(WITH_NODE\) bash/m);
    expect(makefile).not.toMatch(/^ {4}\S/m);
  });
});
