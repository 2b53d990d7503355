import { describe, expect, it } from 'vitest';
import { isPlainObject } from '../../../src/util/plain-object.js';

describe('isPlainObject', () => {
  it.each([
    [{}, true],
    [{ a: 1 }, true],
    [[], false],
    [null, false],
    [undefined, false],
    ['x', false],
    [1, false],
  ])('%j → %s', (v, want) => {
    expect(isPlainObject(v)).toBe(want);
  });
});
