import { describe, expect, it, vi } from 'vitest';

// Counts the YAML parser's runs: the documents below must be read without it, and read the same.
vi.mock('yaml', async (importOriginal) => {
  const yaml = await importOriginal<typeof import('yaml')>();
  return { ...yaml, parseAllDocuments: vi.fn(yaml.parseAllDocuments), parseDocument: vi.fn(yaml.parseDocument) };
});
// The unit project shares modules between files (isolate: false): the reader is imported afresh, against the spy.
vi.resetModules();
const yaml = await import('yaml');
const { readHelmYaml, readHelmYamlStream } = await import('../../../src/config/helm-yaml.js');

const yamlRuns = (): number => vi.mocked(yaml.parseAllDocuments).mock.calls.length + vi.mocked(yaml.parseDocument).mock.calls.length;

/** Objects the way the post-renderer writes them (JSON.stringify), with what YAML 1.1 could read otherwise. */
const OBJECTS: Record<string, unknown>[] = [
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', labels: { 'app.kubernetes.io/name': 'x' } }, data: {} },
  { yes: 'on', on: 'no', '0400': '0400', '~': 'null', null: '~', '<<': { y: 'n' }, '': '', '1e3': '0x1F' },
  { n: [0, -1, 1.5, 1e21, 1e-7, 2 ** 53 - 1, -(2 ** 53 - 1), 0.1, 123456.789], b: [true, false, null], e: [[], {}, [[{}]]] },
  { s: ['a # not a comment', 'k: v', '---', '...', '- x', '{"a":1}', '&a *a !tag', '%YAML 1.1', "'q'", '"dq"'] },
  { s: ['tab\there', 'new\nline', 'cr\rret', 'back\\slash', 'nul\u0000', 'bell\u0007', 'é ü ß', '日本語', '😀 surrogate pair'] },
  { s: '  leading and trailing spaces  ', t: ' ', u: '\\u00e9 written out', v: 'x'.repeat(5000) },
];

describe('readHelmYaml: a document that is JSON as JSON.stringify writes it', () => {
  it('is read without the YAML parser, and to what the YAML parser reads from the same text indented', () => {
    for (const obj of OBJECTS) {
      const line = JSON.stringify(obj);
      const before = yamlRuns();
      const fast = readHelmYaml(`# Source: chart/templates/a.yaml\n${line}\n`);
      expect(yamlRuns()).toBe(before);
      // One space before the line: the same YAML document, which the YAML parser reads.
      const slow = readHelmYaml(`# Source: chart/templates/a.yaml\n ${line}\n`);
      expect(yamlRuns()).toBe(before + 1);
      expect(fast).toEqual(slow);
      expect(fast).toEqual(obj);
    }
  });

  it('reads a stamped manifest without the YAML parser, and every other document with it', () => {
    const stamped = OBJECTS.map((o) => `# Source: c/t${Object.keys(o).length}.yaml\n${JSON.stringify(o)}\n`);
    const before = yamlRuns();
    expect(readHelmYamlStream(stamped.join('---\n'))).toEqual(OBJECTS);
    expect(yamlRuns()).toBe(before);
    expect(readHelmYamlStream(`${stamped[0]}---\nmode: 0400\n`)).toEqual([OBJECTS[0], { mode: 256 }]);
    expect(yamlRuns()).toBe(before + 1);
  });

  it('leaves to the YAML parser what JSON.parse would read otherwise, or what is not one line of canonical JSON', () => {
    const cases: [text: string, helm: unknown][] = [
      ['{"a":1,"a":2}', { a: 2 }], // duplicate keys: the last wins, as go-yaml v2 keeps it
      ['{"n":12345678901234567890}', { n: 12345678901234567000 }], // past 2^53
      ['{"n":1.0}', { n: 1 }], // not as JSON.stringify prints it
      ['{ "a": 1 }', { a: 1 }],
      ['{"a":1} # c', { a: 1 }],
      ['{"a":\n1}', { a: 1 }],
      ['{"a":"x\u2028y"}', { a: 'x\u2028y' }], // a line break to YAML 1.1
      ['{"a":"\\ud800"}', undefined], // an escaped lone surrogate
      ['{"__proto__":{"x":1}}', undefined],
    ];
    for (const [text, helm] of cases) {
      const before = yamlRuns();
      let read: unknown;
      try {
        read = readHelmYaml(text);
      } catch {
        read = undefined;
      }
      expect(yamlRuns(), text).toBe(before + 1);
      if (helm !== undefined) expect(read, text).toEqual(helm);
    }
  });

  it('keeps maxNodes: the YAML reader judges a document longer than the bound', () => {
    const before = yamlRuns();
    expect(() => readHelmYaml('{"a":[1,2,3]}', { maxNodes: 5 })).not.toThrow();
    expect(yamlRuns()).toBe(before + 1);
  });
});
