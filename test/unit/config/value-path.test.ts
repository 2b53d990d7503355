import { describe, expect, it } from 'vitest';
import { parseValuePath, VALUE_PATH_LIMITS, ValuePathError, valuePathProblem } from '../../../src/config/value-path.js';

describe('parseValuePath', () => {
  it.each<[string, (string | number)[]]>([
    ['a', ['a']],
    ['a.b', ['a', 'b']],
    ['image.repository', ['image', 'repository']],
    ['a.b.c.d', ['a', 'b', 'c', 'd']],
    ['a[0]', ['a', 0]],
    ['a[0].b', ['a', 0, 'b']],
    ['a.b[1].c', ['a', 'b', 1, 'c']],
    ['a[0][12]', ['a', 0, 12]],
    ['a[10].b[2]', ['a', 10, 'b', 2]],
    ['dotted\\.name', ['dotted.name']],
    ['a\\.b.c', ['a.b', 'c']],
    ['a.b\\.c', ['a', 'b.c']],
    ['ingress.annotations.kubernetes\\.io/ingress\\.class', ['ingress', 'annotations', 'kubernetes.io/ingress.class']],
    ['podAnnotations.example\\.com/x', ['podAnnotations', 'example.com/x']],
    ['a\\.b[0].c\\.d', ['a.b', 0, 'c.d']],
    ['with-dash_and_underscore', ['with-dash_and_underscore']],
  ])('%s', (key, want) => {
    expect(parseValuePath(key)).toEqual(want);
  });

  // helm's strvals (runesUntil) takes the character after any backslash literally, and the
  // watches.yaml validator accepts any escaped character, so `\\`, `\,`, `\=`, `\[` all work.
  it.each<[string, (string | number)[]]>([
    ['a\\\\b', ['a\\b']],
    ['a\\,b', ['a,b']],
    ['a\\=b', ['a=b']],
    ['a\\[0\\]', ['a[0]']],
    ['a\\\\.b', ['a\\', 'b']],
  ])('escapes like helm: %s', (key, want) => {
    expect(parseValuePath(key)).toEqual(want);
  });

  it('yields numbers for indexes and strings for names', () => {
    const path = parseValuePath('list[3].name');
    expect(path.map((s) => typeof s)).toEqual(['string', 'number', 'string']);
  });

  it('keeps digit-only names as strings', () => {
    expect(parseValuePath('a.0.b')).toEqual(['a', '0', 'b']);
  });
});

describe('parseValuePath refuses, with where and why', () => {
  it.each<[string, RegExp]>([
    ['', /empty/],
    ['a[', /"\[" at character 2 is not closed/],
    ['a[0', /"\[" at character 2 is not closed/],
    ['a[0][', /"\[" at character 5 is not closed/],
    ['a[]', /index "" at character 3 is not a number/],
    ['a[x]', /index "x" at character 3 is not a number/],
    ['a[-1]', /index "-1" at character 3 is not a number from 0 to 65536/],
    ['a[1.5]', /is not a number/],
    ['a[ 1]', /is not a number/],
    ['a[4294967294]', /index "4294967294" at character 3 is larger than 65536/],
    ['a[65537]', /larger than 65536/],
    [`a[${'9'.repeat(400)}]`, /larger than 65536/],
    ['a..b', /a name is missing at character 3/],
    ['.a', /a name is missing at character 1/],
    ['a.', /a name is missing at character 3/],
    ['[0]', /a name is missing at character 1/],
    ['a]', /unexpected "]" at character 2/],
    ['a[0]b', /unexpected "b" at character 5/],
    ['a=b', /unexpected "=" at character 2/],
    ['a,b', /unexpected "," at character 2/],
    ['a\\', /lone backslash/],
    ['a\\\\\\', /lone backslash/],
  ])('%j', (text, why) => {
    expect(() => parseValuePath(text)).toThrow(ValuePathError);
    expect(valuePathProblem(text)).toMatch(why);
  });

  it("takes helm's MaxIndex itself", () => {
    expect(parseValuePath('a[65536]')).toEqual(['a', 65536]);
    expect(parseValuePath('a[007]')).toEqual(['a', 7]);
  });

  it('bounds the length and the number of segments', () => {
    const { maxLength, maxSegments } = VALUE_PATH_LIMITS;
    expect(parseValuePath(Array.from({ length: maxSegments }, () => 'a').join('.'))).toHaveLength(maxSegments);
    expect(valuePathProblem(Array.from({ length: maxSegments + 1 }, () => 'a').join('.'))).toMatch(/more than 32 names and indexes/);
    expect(valuePathProblem(`a${'[0]'.repeat(maxSegments)}`)).toMatch(/more than 32/);
    expect(parseValuePath('a'.repeat(maxLength))).toEqual(['a'.repeat(maxLength)]);
    expect(valuePathProblem('a'.repeat(maxLength + 1))).toMatch(/1025 characters long, more than 1024/);
  });

  it('quotes at most 40 characters of a bad index', () => {
    expect(valuePathProblem(`a[${'x'.repeat(500)}]`)?.length).toBeLessThan(120);
  });
});
