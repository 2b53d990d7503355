import { describe, expect, it } from 'vitest';
import {
  composeReferencedValues,
  deepMerge,
  notOptedIn,
  parseValuesFrom,
  secretStrings,
  type ValuesReference,
} from '../../../../src/reconciler/desired/values-from.js';

describe('parseValuesFrom', () => {
  it('reads YAML or JSON lists with defaults', () => {
    expect(
      parseValuesFrom('- {kind: Secret, name: db, key: password, targetPath: auth.password}\n- {kind: ConfigMap, name: defaults}'),
    ).toEqual({
      refs: [
        { kind: 'Secret', name: 'db', key: 'password', targetPath: 'auth.password', optional: false },
        { kind: 'ConfigMap', name: 'defaults', key: 'values.yaml', optional: false },
      ],
    });
    expect(parseValuesFrom('[{"kind":"Secret","name":"db","optional":true}]')).toEqual({
      refs: [{ kind: 'Secret', name: 'db', key: 'values.yaml', optional: true }],
    });
    expect(parseValuesFrom(undefined)).toEqual({ refs: [] });
    expect(parseValuesFrom('  ')).toEqual({ refs: [] });
  });

  it.each([
    ['{kind: Secret}', 'must be a list'],
    ['- [a]', 'entry 0: expected a map'],
    ['- {kind: Secret, nmae: db}', 'entry 0: unknown field "nmae"'],
    ['- {kind: Pod, name: x}', 'kind must be Secret or ConfigMap, got "Pod"'],
    ['- {kind: Secret, name: Bad_Name}', 'name must be the name of a Secret'],
    ['- {kind: Secret, name: db, key: "a/b"}', 'key must be a data key'],
    ['- {kind: Secret, name: db, targetPath: ""}', 'targetPath must be a value path'],
    ['- {kind: Secret, name: db, optional: "yes"}', 'optional must be true or false'],
    ['- {kind: [', 'is not valid YAML'],
  ])('reports %s', (raw, problem) => {
    const parsed = parseValuesFrom(raw);
    expect('problem' in parsed && parsed.problem).toContain(problem);
  });

  it('refuses an alias bomb instead of expanding it', () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x]',
      ...Array.from(
        { length: 8 },
        (_, i) =>
          `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}]`,
      ),
    ].join('\n');
    expect(parseValuesFrom(bomb)).toHaveProperty('problem');
  });

  it.each([
    ['a[', 'is not closed by "]"'],
    ['a[4294967294]', 'is larger than 65536'],
    ['a[-1]', 'is not a number from 0 to 65536'],
    ['a.', 'a name is missing'],
  ])('refuses targetPath %j with why, before anything is read', (path, why) => {
    const parsed = parseValuesFrom(`- {kind: ConfigMap, name: kube-root-ca.crt, key: ca.crt, targetPath: ${JSON.stringify(path)}}`);
    expect('problem' in parsed && parsed.problem).toContain(
      `targetPath must be a value path such as "auth.password" or "args[0]", got ${JSON.stringify(path)}: `,
    );
    expect('problem' in parsed && parsed.problem).toContain(why);
  });

  it('refuses an annotation longer than 16 KiB, or with more than 32 references, before parsing them', () => {
    const ref = '- {kind: ConfigMap, name: x}\n';
    expect(parseValuesFrom(ref.repeat(32))).toHaveProperty('refs');
    expect(parseValuesFrom(ref.repeat(33))).toEqual({ problem: expect.stringContaining('lists 33 references, more than 32') as unknown });
    expect(parseValuesFrom(`${ref}#${'x'.repeat(16 * 1024)}`)).toEqual({
      problem: expect.stringContaining('more than 16384: list references, not values') as unknown,
    });
  });

  it('names a deep or long field value by its type or a cut quote, never in full', () => {
    const deep = `- {kind: Secret, name: ${'['.repeat(10)}${']'.repeat(10)}}`;
    expect(parseValuesFrom(deep)).toEqual({ problem: expect.stringMatching(/got a list$/) as unknown });
    expect(parseValuesFrom(`- {kind: Secret, name: db, optional: {a: {b: 1}}}`)).toEqual({
      problem: expect.stringMatching(/got a map$/) as unknown,
    });
    const long = parseValuesFrom(`- {kind: ${'K'.repeat(5000)}}`);
    expect('problem' in long && long.problem.length).toBeLessThan(200);
  });

  it('refuses nesting before the YAML reader sees it (it takes about a second on 16 KiB of brackets)', () => {
    expect(parseValuesFrom(`- ${'['.repeat(8000)}${']'.repeat(8000)}`)).toEqual({
      problem: expect.stringContaining('nests more than 16 brackets') as unknown,
    });
    expect(parseValuesFrom(`- {kind: Secret, name: ${'{a: '.repeat(17)}`)).toEqual({
      problem: expect.stringContaining('nests more than 16 brackets') as unknown,
    });
    expect(parseValuesFrom('[{"kind": "Secret", "name": "db", "targetPath": "a[0][1].b[2]"}]')).toHaveProperty('refs');
  });
});

describe('composeReferencedValues', () => {
  const secret: ValuesReference = { kind: 'Secret', name: 'db', key: 'password', targetPath: 'auth.password', optional: false };
  const defaults: ValuesReference = { kind: 'ConfigMap', name: 'defaults', key: 'values.yaml', optional: false };

  it('merges YAML documents and places single values, later references winning', () => {
    const out = composeReferencedValues(
      [defaults, secret],
      [{ 'values.yaml': 'auth: {user: app, password: old}\nreplicas: 2\n' }, { password: 's3cret' }],
    );
    expect(out).toEqual({ values: { auth: { user: 'app', password: 's3cret' }, replicas: 2 }, missing: [], invalid: [], oversized: [] });
  });

  it('names what is missing or not a map, never what the objects hold', () => {
    const out = composeReferencedValues(
      [secret, defaults, { ...defaults, name: 'other' }],
      [undefined, { 'values.yaml': '- a list' }, { unrelated: 'x' }],
    );
    expect(out.missing).toEqual(['Secret db', 'ConfigMap other key values.yaml']);
    expect(out.invalid).toEqual(['ConfigMap defaults key values.yaml']);
  });

  it('refuses a values file nested deeper than the limit, never merging or walking it', () => {
    const deep = Array.from({ length: 150 }, (_, i) => `${' '.repeat(i)}k:`).join('\n') + ' 1\n';
    const out = composeReferencedValues([defaults], [{ 'values.yaml': deep }]);
    expect(out.values).toEqual({});
    expect(out.oversized).toEqual([
      expect.stringMatching(/^ConfigMap defaults key values.yaml nests maps and lists more than 100 deep \(at k\.k\.k\.k\.k\.k…\)/),
    ]);
    const file: ValuesReference = { ...defaults, kind: 'Secret' };
    expect(secretStrings([file], [{ 'values.yaml': deep }])).toEqual([deep]);
  });

  it('refuses deep flow nesting before the YAML reader sees it (it took 40 s on 1 MiB of "[")', () => {
    const out = composeReferencedValues([defaults], [{ 'values.yaml': `a: ${'['.repeat(1024 * 1024)}` }]);
    expect(out.oversized).toEqual(['ConfigMap defaults key values.yaml nests more than 100 brackets']);
  });

  it('reads one object named many times once, and no more than 4 MiB of values files in all', () => {
    const big = `a: "${'x'.repeat(1024 * 1024 - 100)}"\n`;
    const same = Array.from({ length: 32 }, () => defaults);
    expect(
      composeReferencedValues(
        same,
        same.map(() => ({ 'values.yaml': `${big}b: 1\n` })),
      ).oversized,
    ).toEqual([]);
    const five = Array.from({ length: 5 }, (_, i): ValuesReference => ({ ...defaults, name: `d${i}` }));
    const out = composeReferencedValues(
      five,
      five.map((_, i) => ({ 'values.yaml': `${big}b: ${i}\n` })),
    );
    expect(out.oversized).toEqual(['ConfigMap d4 key values.yaml is past the 4 MiB of text the referenced values files may hold together']);
    // It builds and parses megabytes of YAML by design (the bound is 4 MiB): about a second alone, past
    // vitest's 5 s default on a 2-core machine busy with the rest of `make test`.
  }, 60_000);

  it('refuses references that are within the limits one by one but not together', () => {
    const refs = Array.from({ length: 32 }, (_, i): ValuesReference => ({ ...secret, kind: 'ConfigMap', targetPath: `l${i}[65536]` }));
    const out = composeReferencedValues(
      refs,
      refs.map(() => ({ password: 'x' })),
    );
    expect(out.oversized).toEqual(['the merge of all references is larger than 4 MiB as JSON']);
  });

  it('skips optional references that are absent', () => {
    expect(composeReferencedValues([{ ...secret, optional: true }], [undefined])).toEqual({
      values: {},
      missing: [],
      invalid: [],
      oversized: [],
    });
  });
});

describe('secretStrings', () => {
  const one: ValuesReference = { kind: 'Secret', name: 'db', key: 'password', targetPath: 'auth.password', optional: false };
  const file: ValuesReference = { kind: 'Secret', name: 'extra', key: 'values.yaml', optional: false };
  const config: ValuesReference = { kind: 'ConfigMap', name: 'defaults', key: 'values.yaml', optional: false };

  it('collects what Secrets hold (a single value, or a values file and each of its scalars), never what ConfigMaps hold', () => {
    const data: Record<string, string>[] = [
      { password: 'hunter22' },
      { 'values.yaml': 'token: abcd1234\nport: 5432\nlist: [x1y2]\n' },
      { 'values.yaml': 'greeting: hello\n' },
    ];
    expect(secretStrings([one, file, config], data)).toEqual([
      'hunter22',
      'token: abcd1234\nport: 5432\nlist: [x1y2]\n',
      'abcd1234',
      '5432',
      'x1y2',
    ]);
  });

  it('skips absent objects and keys, and a values file that is not a map', () => {
    expect(secretStrings([one, file], [undefined, { other: 'x' }])).toEqual([]);
    expect(secretStrings([file], [{ 'values.yaml': '- not a map' }])).toEqual(['- not a map']);
  });
});

describe('notOptedIn', () => {
  const ref = (kind: ValuesReference['kind'], name: string): ValuesReference => ({ kind, name, key: 'values.yaml', optional: false });

  it('names the existing objects without the opt-in label; absent ones are left to the missing check', () => {
    const refs = [ref('Secret', 'a'), ref('ConfigMap', 'b'), ref('Secret', 'c')];
    expect(notOptedIn(refs, [{ data: {}, optedIn: false }, { data: {}, optedIn: true }, undefined])).toEqual(['Secret a']);
    expect(notOptedIn(refs, [{ data: {}, optedIn: true }, { data: {}, optedIn: true }, undefined])).toEqual([]);
  });
});

describe('deepMerge', () => {
  it('merges maps key by key and replaces everything else, never touching the prototype', () => {
    const merged = deepMerge(
      { a: { b: 1, c: [1] }, d: 'x' },
      JSON.parse('{"a": {"c": [2]}, "__proto__": {"polluted": true}}') as Record<string, unknown>,
    );
    expect(merged).toEqual(JSON.parse('{"a": {"b": 1, "c": [2]}, "d": "x", "__proto__": {"polluted": true}}'));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
