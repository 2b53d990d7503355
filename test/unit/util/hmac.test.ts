import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hmacSha256 } from '../../../src/util/hmac.js';

describe('hmacSha256', () => {
  it('gives what createHmac gives under the raw key, call after call', () => {
    const key = randomBytes(32);
    for (const message of ['', 'fingerprint', 'é ☃']) {
      const want = createHmac('sha256', key).update(message).digest('hex');
      expect(hmacSha256(key).update(message).digest('hex')).toBe(want);
      expect(hmacSha256(key).update(message).digest('hex')).toBe(want);
    }
  });

  it('keeps keys apart, and two arrays of the same bytes alike', () => {
    const a = randomBytes(32);
    const b = randomBytes(32);
    expect(hmacSha256(a).update('m').digest('hex')).not.toBe(hmacSha256(b).update('m').digest('hex'));
    expect(hmacSha256(Uint8Array.from(a)).update('m').digest('hex')).toBe(hmacSha256(a).update('m').digest('hex'));
  });
});
