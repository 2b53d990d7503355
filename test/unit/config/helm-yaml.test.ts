import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { HelmYamlError, readHelmYaml, readHelmYamlStream, splitHelmStream } from '../../../src/config/helm-yaml.js';

/**
 * Every row is what sigs.k8s.io/yaml v1.6.0 (go-yaml v2.4.3, as linked into helm v4.1.4) makes of
 * `v: <scalar>`, taken from its YAMLToJSON; the third column is what YAML 1.2 (the `yaml` package's
 * default, which this project used before) reads, where it differs.
 */
const SCALARS: [text: string, helm: unknown, yaml12?: unknown][] = [
  // Integers: Go's ParseInt(s, 0, 64) after every `_` is removed.
  ['0400', 256, 400],
  ['0755', 493, 755],
  ['-0400', -256, -400],
  ['012_3', 83, '012_3'],
  ['0o400', 256],
  ['0O400', 256, '0O400'],
  ['0x1F', 31],
  ['0X1F', 31, '0X1F'],
  ['0xff_ff', 65535, '0xff_ff'],
  ['-0x1F', -31, '-0x1F'],
  ['+0x1F', 31, '+0x1F'],
  ['0b101', 5, '0b101'],
  ['0B101', 5, '0B101'],
  ['-0b101', -5, '-0b101'],
  ['0', 0],
  ['00', 0],
  ['-0', 0, -0],
  ['08', 8],
  ['09', 9],
  ['1_000', 1000, '1_000'],
  ['1__0', 10, '1__0'],
  ['1000_', 1000, '1000_'],
  ['_1000', '_1000'],
  ['+12', 12],
  ['0x', '0x'],
  ['0o9', '0o9'],
  ['0b2', '0b2'],
  ['0400abc', '0400abc'],
  ['1,000', '1,000'],
  // Floats; sexagesimal is not (go-yaml dropped base 60, YAML 1.1 had it).
  ['1.5', 1.5],
  ['1.', 1],
  ['.5', 0.5],
  ['.2_8', 0.28, '.2_8'],
  ['-.5', -0.5],
  ['+.5', 0.5],
  ['1e3', 1000],
  ['1E3', 1000],
  ['1.5e-3', 0.0015],
  ['1_000.5', 1000.5, '1_000.5'],
  ['6.8523015e+5', 685230.15],
  ['1e', '1e'],
  ['20e4797', '20e4797', Infinity],
  ['1:20', '1:20'],
  ['190:20:30', '190:20:30'],
  ['1.2.3', '1.2.3'],
  ['.iNf', '.iNf'],
  // Booleans: go-yaml's exact spellings only.
  ['y', true, 'y'],
  ['Y', true, 'Y'],
  ['yes', true, 'yes'],
  ['Yes', true, 'Yes'],
  ['YES', true, 'YES'],
  ['yEs', 'yEs'],
  ['on', true, 'on'],
  ['On', true, 'On'],
  ['ON', true, 'ON'],
  ['oN', 'oN'],
  ['true', true],
  ['True', true],
  ['TRUE', true],
  ['tRUE', 'tRUE'],
  ['n', false, 'n'],
  ['N', false, 'N'],
  ['no', false, 'no'],
  ['No', false, 'No'],
  ['NO', false, 'NO'],
  ['off', false, 'off'],
  ['Off', false, 'Off'],
  ['OFF', false, 'OFF'],
  ['false', false],
  ['False', false],
  ['FALSE', false],
  // Null.
  ['~', null],
  ['null', null],
  ['Null', null],
  ['NULL', null],
  ['nULL', 'nULL'],
  ['', null],
  // Timestamps stay text (go-yaml's choice for an untyped target).
  ['2001-12-14', '2001-12-14'],
  ['2001-12-14T21:59:43Z', '2001-12-14T21:59:43Z'],
  ['2001-12-14 21:59:43.10 -5', '2001-12-14 21:59:43.10 -5'],
  // Quoting and explicit tags.
  ['"0400"', '0400'],
  ["'yes'", 'yes'],
  ['!!str 0400', '0400'],
  ['!!str yes', 'yes'],
  ['!!int "0400"', 256, 400],
  ['!!bool "yes"', true, 'yes'],
  ['!!float 1', 1, '1'],
  ['!!null ""', null],
  ['!!binary aGVsbG8=', 'hello'],
  ['<<', '<<'],
  ['=', '='],
];

describe('readHelmYaml: scalars as helm reads them', () => {
  it.each(SCALARS)('v: %s', (text, helm) => {
    expect(readHelmYaml(`v: ${text}`)).toStrictEqual({ v: helm });
  });

  it('differs from YAML 1.2 exactly where the table says (the reason this reader exists)', () => {
    const yaml12 = (text: string): unknown => (parse(`v: ${text}`, { logLevel: 'silent' }) as { v: unknown }).v;
    const differing = SCALARS.filter(([text, helm, v12]) => !text.startsWith('!!binary') && !Object.is(yaml12(text), v12 ?? helm));
    expect(differing.map(([text]) => text)).toEqual([]);
  });

  it.each(['.inf', '-.Inf', '+.INF', '.nan', '.NaN'])('refuses %s, which helm cannot turn into JSON', (text) => {
    expect(() => readHelmYaml(`v: ${text}`)).toThrow(HelmYamlError);
    expect(() => readHelmYaml(`v: ${text}`)).toThrow(/helm refuses it/);
  });

  it('reads map keys as helm does: YAML 1.1 booleans and numbers become their JSON text', () => {
    expect(readHelmYaml('y: 1\non: 2\n0x10: a\n1.5: b\n1e3: c\n')).toEqual({ true: 2, 16: 'a', '1.5': 'b', 1000: 'c' });
  });
});

describe('readHelmYaml: maps', () => {
  it.each([
    ['the last of duplicate keys wins', 'a: 1\na: 2\n', { a: 2 }],
    ['duplicates by value (yes and true) are one key', 'yes: 1\ntrue: 2\n', { true: 2 }],
    ['a merged key overwrites the keys before <<', 'a: 1\n<<: {a: 2, b: 3}\n', { a: 2, b: 3 }],
    ['keys after << overwrite merged ones', '<<: {a: 2, b: 3}\na: 1\n', { a: 1, b: 3 }],
    ['in a list of merged maps the earlier wins', '<<: [{a: 1}, {a: 2, b: 2}]\n', { a: 1, b: 2 }],
    ['several << keys all merge', '<<: {a: 1}\n<<: {b: 2}\n', { a: 1, b: 2 }],
    [
      'a merge through an alias, nested',
      'x: &x {a: 1, <<: {b: 9}}\nz:\n  <<: *x\n  c: 3\n',
      { x: { a: 1, b: 9 }, z: { a: 1, b: 9, c: 3 } },
    ],
    ['a quoted "<<" is a plain key', '"<<": {a: 1}\n', { '<<': { a: 1 } }],
    ['!!merge as a value is just a map', 'a: !!merge {b: 1}\n', { a: { b: 1 } }],
  ])('%s', (_what, text, expected) => {
    expect(readHelmYaml(text)).toStrictEqual(expected);
  });

  it('refuses a merge of something that is not a map, as helm does', () => {
    expect(() => readHelmYaml('k: &k [1, 2]\n<<: *k\n')).toThrow('map merge requires map or sequence of maps as the value');
  });

  it('refuses invalid YAML with the line, and caps alias expansion', () => {
    expect(() => readHelmYaml('a: [1\n')).toThrow(HelmYamlError);
    expect(() => readHelmYaml('a: &a [1]\nb: [*a, *a, *a]\n', { maxAliasCount: 2 })).toThrow(HelmYamlError);
  });

  it('gives null for an empty document', () => {
    expect(readHelmYaml('# only a comment\n')).toBeNull();
  });
});

describe('readHelmYamlStream', () => {
  it('reads every document of a manifest, empty ones as null/undefined', () => {
    const docs = readHelmYamlStream('a: 0400\n---\n---\nb: on\n');
    expect(docs.filter((d) => d !== null && d !== undefined)).toEqual([{ a: 256 }, { b: true }]);
  });

  it("cuts documents where helm's apply does (a line of `---` and white space only) and reads the first document of each, as go-yaml does", () => {
    // Neither `--- # c` nor `...` is a cut to helm: the chunk's first document is all it applies, so
    // the inventory must not list a ClusterRoleBinding that a YAML parser's own cut would find.
    for (const marker of ['--- # c', '...']) {
      const stream = `kind: ConfigMap\nmetadata: {name: a}\n${marker}\nkind: ClusterRoleBinding\nmetadata: {name: phantom}\n`;
      expect(readHelmYamlStream(stream)).toEqual([{ kind: 'ConfigMap', metadata: { name: 'a' } }]);
    }
    expect(splitHelmStream('a: 1\n--- # c\nb: 2\n---  \r\nc: 3\n---\u00a0\nd: 4\n---x\n')).toEqual([
      'a: 1\n--- # c\nb: 2\n',
      'c: 3\n',
      'd: 4\n---x\n',
    ]);
  });

  it('skips what cannot be read instead of throwing (helm applied the stream already)', () => {
    expect(readHelmYamlStream('k: &k [1]\n<<: *k\n---\nb: 1\n')).toEqual([undefined, { b: 1 }]);
  });
});
