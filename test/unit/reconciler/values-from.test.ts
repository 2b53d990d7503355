import { describe, expect, it } from 'vitest';
import { composeReferencedValues, deepMerge, notOptedIn, parseValuesFrom, secretStrings, type ValuesReference } from '../../../src/reconciler/values-from.js';

describe('parseValuesFrom', () => {
  it('reads YAML or JSON lists with defaults', () => {
    expect(parseValuesFrom('- {kind: Secret, name: db, key: password, targetPath: auth.password}\n- {kind: ConfigMap, name: defaults}')).toEqual({
      refs: [
        { kind: 'Secret', name: 'db', key: 'password', targetPath: 'auth.password', optional: false },
        { kind: 'ConfigMap', name: 'defaults', key: 'values.yaml', optional: false },
      ],
    });
    expect(parseValuesFrom('[{"kind":"Secret","name":"db","optional":true}]')).toEqual({ refs: [{ kind: 'Secret', name: 'db', key: 'values.yaml', optional: true }] });
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
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x]', ...Array.from({ length: 8 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}]`)].join('\n');
    expect(parseValuesFrom(bomb)).toHaveProperty('problem');
  });
});

describe('composeReferencedValues', () => {
  const secret: ValuesReference = { kind: 'Secret', name: 'db', key: 'password', targetPath: 'auth.password', optional: false };
  const defaults: ValuesReference = { kind: 'ConfigMap', name: 'defaults', key: 'values.yaml', optional: false };

  it('merges YAML documents and places single values, later references winning', () => {
    const out = composeReferencedValues([defaults, secret], [{ 'values.yaml': 'auth: {user: app, password: old}\nreplicas: 2\n' }, { password: 's3cret' }]);
    expect(out).toEqual({ values: { auth: { user: 'app', password: 's3cret' }, replicas: 2 }, missing: [], invalid: [] });
  });

  it('names what is missing or not a map, never what the objects hold', () => {
    const out = composeReferencedValues([secret, defaults, { ...defaults, name: 'other' }], [undefined, { 'values.yaml': '- a list' }, { unrelated: 'x' }]);
    expect(out.missing).toEqual(['Secret db', 'ConfigMap other key values.yaml']);
    expect(out.invalid).toEqual(['ConfigMap defaults key values.yaml']);
  });

  it('skips optional references that are absent', () => {
    expect(composeReferencedValues([{ ...secret, optional: true }], [undefined])).toEqual({ values: {}, missing: [], invalid: [] });
  });
});

describe('secretStrings', () => {
  const one: ValuesReference = { kind: 'Secret', name: 'db', key: 'password', targetPath: 'auth.password', optional: false };
  const file: ValuesReference = { kind: 'Secret', name: 'extra', key: 'values.yaml', optional: false };
  const config: ValuesReference = { kind: 'ConfigMap', name: 'defaults', key: 'values.yaml', optional: false };

  it('collects what Secrets hold (a single value, or a values file and each of its scalars), never what ConfigMaps hold', () => {
    const data: Record<string, string>[] = [{ password: 'hunter22' }, { 'values.yaml': 'token: abcd1234\nport: 5432\nlist: [x1y2]\n' }, { 'values.yaml': 'greeting: hello\n' }];
    expect(secretStrings([one, file, config], data)).toEqual(['hunter22', 'token: abcd1234\nport: 5432\nlist: [x1y2]\n', 'abcd1234', '5432', 'x1y2']);
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
    const merged = deepMerge({ a: { b: 1, c: [1] }, d: 'x' }, JSON.parse('{"a": {"c": [2]}, "__proto__": {"polluted": true}}') as Record<string, unknown>);
    expect(merged).toEqual(JSON.parse('{"a": {"b": 1, "c": [2]}, "d": "x", "__proto__": {"polluted": true}}'));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
