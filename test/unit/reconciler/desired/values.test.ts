import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  fingerprint,
  keyedFingerprint,
  mergeValues,
  setValueAt,
  RENDER_PROTOCOL,
  type Values,
} from '../../../../src/reconciler/desired/values.js';
import { ValuePathError } from '../../../../src/config/value-path.js';
import { canonicalJson } from '../../../../src/util/canonical-json.js';

/** Freezes `v` and everything below it, so any mutation throws (ES modules are strict). */
function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const child of Object.values(v)) deepFreeze(child);
    Object.freeze(v);
  }
  return v;
}

describe('mergeValues', () => {
  it('with no overrides returns an equal copy, not the same object', () => {
    const spec = { a: { b: [1, 2] } };
    const merged = mergeValues(spec, {});
    expect(merged).toEqual(spec);
    expect(merged).not.toBe(spec);
    expect(merged.a).not.toBe(spec.a);
  });

  it('the override wins over the spec', () => {
    expect(mergeValues({ image: { tag: '1.0', repository: 'nginx' } }, { 'image.tag': '2.0' })).toEqual({
      image: { tag: '2.0', repository: 'nginx' },
    });
  });

  it('sets values as strings, like --set-string', () => {
    expect(mergeValues({ replicas: 3 }, { replicas: '5', enabled: 'true', empty: '' })).toEqual({
      replicas: '5',
      enabled: 'true',
      empty: '',
    });
  });

  it('creates nested maps that do not exist yet', () => {
    expect(mergeValues({}, { 'a.b.c': 'x' })).toEqual({ a: { b: { c: 'x' } } });
  });

  it('keeps siblings when nesting into an existing map', () => {
    expect(mergeValues({ a: { keep: 1, b: { keep: 2 } } }, { 'a.b.c': 'x' })).toEqual({ a: { keep: 1, b: { keep: 2, c: 'x' } } });
  });

  it('replaces a scalar, null or list that is in the way of a map path', () => {
    expect(mergeValues({ a: 'scalar' }, { 'a.b': 'x' })).toEqual({ a: { b: 'x' } });
    expect(mergeValues({ a: null }, { 'a.b': 'x' })).toEqual({ a: { b: 'x' } });
    expect(mergeValues({ a: [1, 2] }, { 'a.b': 'x' })).toEqual({ a: { b: 'x' } });
  });

  it('replaces a whole subtree when the override targets it directly', () => {
    expect(mergeValues({ a: { b: { c: 1 } } }, { 'a.b': 'x' })).toEqual({ a: { b: 'x' } });
  });

  it('sets a list element by index, keeping the others', () => {
    expect(mergeValues({ args: ['a', 'b', 'c'] }, { 'args[1]': 'B' })).toEqual({ args: ['a', 'B', 'c'] });
  });

  it('sets a field of a list element, keeping its other fields', () => {
    const spec = {
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: '2' },
      ],
    };
    expect(mergeValues(spec, { 'env[1].value': 'override' })).toEqual({
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: 'override' },
      ],
    });
  });

  it('creates a list when none exists', () => {
    expect(mergeValues({}, { 'args[0]': 'x' })).toEqual({ args: ['x'] });
    expect(mergeValues({}, { 'env[0].name': 'A' })).toEqual({ env: [{ name: 'A' }] });
  });

  it('replaces a map that is in the way of a list index', () => {
    expect(mergeValues({ args: { a: 1 } }, { 'args[0]': 'x' })).toEqual({ args: ['x'] });
  });

  it('nests lists in lists', () => {
    expect(mergeValues({}, { 'm[0][0]': 'x' })).toEqual({ m: [['x']] });
  });

  it('an index past the end grows the list; the gaps serialise as null, as helm fills them', () => {
    const merged = mergeValues({ args: ['a'] }, { 'args[2]': 'c' });
    expect(merged.args).toHaveLength(3);
    expect(JSON.parse(JSON.stringify(merged))).toEqual({ args: ['a', null, 'c'] });
  });

  it('applies escaped dots as literal keys', () => {
    expect(mergeValues({ podAnnotations: { keep: 'y' } }, { 'podAnnotations.example\\.com/team': 'web' })).toEqual({
      podAnnotations: { keep: 'y', 'example.com/team': 'web' },
    });
  });

  it('applies several overrides together', () => {
    expect(
      mergeValues({ image: { tag: '1' }, replicas: 1 }, { 'image.tag': '2', 'image.pullPolicy': 'Always', 'service.port': '80' }),
    ).toEqual({
      image: { tag: '2', pullPolicy: 'Always' },
      replicas: 1,
      service: { port: '80' },
    });
  });

  it('throws on a key watches.yaml would have refused at load (a bug, not input)', () => {
    expect(() => mergeValues({ a: 1 }, { '': 'x' })).toThrow(ValuePathError);
  });

  it('does not mutate the spec or the overrides (both deeply frozen)', () => {
    const spec = deepFreeze({ image: { tag: '1' }, args: ['a', 'b'], env: [{ name: 'A' }] });
    const overrides = deepFreeze({ 'image.tag': '2', 'args[1]': 'B', 'env[0].name': 'Z', 'new.key': 'v' });
    const before = structuredClone(spec);
    const merged = mergeValues(spec, overrides);
    expect(spec).toEqual(before);
    expect(merged).toEqual({ image: { tag: '2' }, args: ['a', 'B'], env: [{ name: 'Z' }], new: { key: 'v' } });
  });

  it('treats __proto__ and constructor as ordinary keys and never touches Object.prototype', () => {
    const merged = mergeValues({}, { '__proto__.polluted': 'yes', 'constructor.prototype.polluted': 'yes' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(merged))).toEqual(
      JSON.parse('{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}'),
    );
  });

  it('keeps a __proto__ key that came from the spec (JSON.parse makes it an own key)', () => {
    const spec = JSON.parse('{"__proto__":{"a":"1"}}') as Values;
    const merged = mergeValues(spec, { '__proto__.b': '2' });
    expect(({} as Record<string, unknown>).b).toBeUndefined();
    expect(JSON.stringify(merged)).toBe('{"__proto__":{"a":"1","b":"2"}}');
  });
});

describe('setValueAt', () => {
  it("sets up to helm's MaxIndex and refuses past it, negative or fractional indexes, before setting anything", () => {
    const target: Values = {};
    setValueAt(target, ['a', 65536], 'x');
    expect((target.a as unknown[]).length).toBe(65537);
    for (const bad of [65537, 4294967294, -1, 1.5, Number.NaN, Infinity]) {
      const t: Values = {};
      expect(() => {
        setValueAt(t, ['a', bad], 'x');
      }).toThrow(ValuePathError);
      expect(t).toEqual({});
    }
  });

  it('refuses a path longer than 32 segments', () => {
    expect(() => {
      setValueAt(
        {},
        Array.from({ length: 33 }, () => 'a'),
        'x',
      );
    }).toThrow(ValuePathError);
    const t: Values = {};
    setValueAt(
      t,
      Array.from({ length: 32 }, () => 'a'),
      'x',
    );
    expect(JSON.stringify(t).split('{').length - 1).toBe(32);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every level', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it('is the same for any key order', () => {
    const a = { image: { tag: '1', repository: 'nginx' }, replicas: 2, labels: { x: 'y', a: 'b' } };
    const b = { labels: { a: 'b', x: 'y' }, replicas: 2, image: { repository: 'nginx', tag: '1' } };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
  });

  it('keeps list order (lists are ordered)', () => {
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
    expect(canonicalJson({ a: ['b', 'a'] })).toBe('{"a":["b","a"]}');
  });

  it('is valid JSON that parses back to the value', () => {
    const v = { s: 'quote " backslash \\ newline \n unicode é 🚀', n: -1.5e-7, t: true, f: false, z: null, e: {}, l: [] };
    expect(JSON.parse(canonicalJson(v))).toEqual(v);
  });

  it('escapes keys', () => {
    expect(canonicalJson({ 'a"b': 1, 'example.com/x': 2 })).toBe('{"a\\"b":1,"example.com/x":2}');
  });

  it('sorts keys by UTF-16 code unit, independent of locale', () => {
    expect(canonicalJson({ b: 1, B: 2, a: 3, _: 4, '1': 5, é: 6 })).toBe('{"1":5,"B":2,"_":4,"a":3,"b":1,"é":6}');
  });

  it('normalises numbers: 1 and 1.0 are one number', () => {
    expect(canonicalJson({ a: 1.0 })).toBe(canonicalJson(JSON.parse('{"a":1}')));
    expect(canonicalJson(JSON.parse('{"a":1.0}'))).toBe('{"a":1}');
  });

  it('distinguishes a number from the same digits as a string', () => {
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: '1' }));
  });

  it('omits undefined object values, as JSON.stringify does', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson({ a: undefined, b: 1 })).toBe(canonicalJson({ b: 1 }));
    expect(canonicalJson({ nested: { a: undefined } })).toBe('{"nested":{}}');
  });

  it('writes undefined list elements as null, as JSON.stringify does', () => {
    expect(canonicalJson([1, undefined, 2])).toBe('[1,null,2]');
  });

  it('writes the holes of a sparse list (an override index past the end) as null', () => {
    // eslint-disable-next-line no-sparse-arrays
    const sparse = [, , 'x'];
    expect(canonicalJson(sparse)).toBe('[null,null,"x"]');
    const merged = mergeValues({}, { 'args[2]': 'x' });
    expect(canonicalJson(merged)).toBe(JSON.stringify(merged));
    expect(canonicalJson(merged)).toBe(canonicalJson({ args: [null, null, 'x'] }));
  });

  it('writes a bare undefined as null', () => {
    expect(canonicalJson(undefined)).toBe('null');
  });

  it.each([
    [null, 'null'],
    [true, 'true'],
    [0, '0'],
    ['s', '"s"'],
    [[], '[]'],
    [{}, '{}'],
  ])('%j', (v, want) => {
    expect(canonicalJson(v)).toBe(want);
  });

  it('agrees with JSON.stringify when keys are already sorted', () => {
    const v = { a: [1, { b: 'c', d: [null, true] }], e: { f: 'g' } };
    expect(canonicalJson(v)).toBe(JSON.stringify(v));
  });
});

describe('keyedFingerprint (what CR status shows)', () => {
  const secretValues = (pin: string): { chartDigest: string; values: Values; helmMajor: number } => ({
    chartDigest: 'sha256:abc',
    values: { db: { pin } },
    helmMajor: 4,
  });

  it('cannot be matched by guessing the values without the key (a 4-digit PIN from a Secret, tried exhaustively)', () => {
    const key = Buffer.alloc(32, 7);
    const shown = keyedFingerprint(key, fingerprint(secretValues('4821')));
    expect(shown).toMatch(/^[0-9a-f]{40}$/);
    const guesses = Array.from({ length: 10_000 }, (_, i) => fingerprint(secretValues(String(i).padStart(4, '0'))));
    expect(guesses).toContain(fingerprint(secretValues('4821')));
    expect(guesses).not.toContain(shown);
  });

  it('is the same for the same key (across replicas and restarts), different under another key', () => {
    const fp = fingerprint(secretValues('4821'));
    expect(keyedFingerprint(Buffer.alloc(32, 7), fp)).toBe(keyedFingerprint(Buffer.alloc(32, 7), fp));
    expect(keyedFingerprint(Buffer.alloc(32, 8), fp)).not.toBe(keyedFingerprint(Buffer.alloc(32, 7), fp));
    expect(keyedFingerprint(Buffer.alloc(32, 7), fp)).toBe(createHmac('sha256', Buffer.alloc(32, 7)).update(fp).digest('hex').slice(0, 40));
  });
});

describe('fingerprint', () => {
  const base = { chartDigest: 'sha256:abc', values: { image: { tag: '1' }, replicas: 2 }, helmMajor: 4 };

  it('is 40 lower-case hex characters (fits a label value)', () => {
    expect(fingerprint(base)).toMatch(/^[0-9a-f]{40}$/);
    expect(fingerprint({ ...base, values: {} })).toMatch(/^[0-9a-f]{40}$/);
  });

  it('is the first 160 bits of sha256 over the protocol, helm major, chart digest and canonical values', () => {
    const text = `protocol=${RENDER_PROTOCOL}\nhelm=4\nchart=sha256:abc\nvalues={"image":{"tag":"1"},"replicas":2}`;
    expect(fingerprint(base)).toBe(createHash('sha256').update(text).digest('hex').slice(0, 40));
  });

  it('is deterministic', () => {
    expect(fingerprint(base)).toBe(fingerprint(structuredClone(base)));
  });

  it('is stable across key order at every level', () => {
    expect(fingerprint({ ...base, values: { replicas: 2, image: { tag: '1' } } })).toBe(fingerprint(base));
    const deep = { a: { y: [{ q: 1, p: 2 }], x: 'x' }, b: null };
    const deepReordered = { b: null, a: { x: 'x', y: [{ p: 2, q: 1 }] } };
    expect(fingerprint({ ...base, values: deep })).toBe(fingerprint({ ...base, values: deepReordered }));
  });

  it('ignores undefined values', () => {
    expect(fingerprint({ ...base, values: { ...base.values, gone: undefined } })).toBe(fingerprint(base));
  });

  it('changes with the chart digest', () => {
    expect(fingerprint({ ...base, chartDigest: 'sha256:abd' })).not.toBe(fingerprint(base));
  });

  it('changes with the values', () => {
    expect(fingerprint({ ...base, values: { image: { tag: '2' }, replicas: 2 } })).not.toBe(fingerprint(base));
    expect(fingerprint({ ...base, values: { image: { tag: '1' }, replicas: '2' } })).not.toBe(fingerprint(base));
    expect(fingerprint({ ...base, values: { image: { tag: '1' }, replicas: 2, extra: null } })).not.toBe(fingerprint(base));
    expect(fingerprint({ ...base, values: {} })).not.toBe(fingerprint(base));
  });

  it('changes with list order', () => {
    expect(fingerprint({ ...base, values: { l: [1, 2] } })).not.toBe(fingerprint({ ...base, values: { l: [2, 1] } }));
  });

  it('changes with the helm major', () => {
    expect(fingerprint({ ...base, helmMajor: 3 })).not.toBe(fingerprint(base));
  });

  it('matches for the spec and the merged values it produces when nothing is overridden', () => {
    const spec = { b: 1, a: 2 };
    expect(fingerprint({ ...base, values: mergeValues(spec, {}) })).toBe(fingerprint({ ...base, values: spec }));
  });
});
