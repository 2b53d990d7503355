import { describe, expect, it } from 'vitest';
import { keyOf } from '../../../src/operator/fingerprint-key.js';

describe('keyOf', () => {
  it('reads a key of at least 32 bytes from the Secret, and nothing else', () => {
    const key = Buffer.alloc(32, 1);
    expect(keyOf({ data: { key: key.toString('base64') } })).toEqual(key);
    expect(keyOf({ data: { key: Buffer.alloc(16, 1).toString('base64') } })).toBeUndefined();
    expect(keyOf({ data: {} })).toBeUndefined();
    expect(keyOf({})).toBeUndefined();
    expect(keyOf(undefined)).toBeUndefined();
  });
});
