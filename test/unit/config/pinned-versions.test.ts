import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pinnedVersion } from '../../../src/config/pinned-versions.js';

describe('pinnedVersion', () => {
  it('reads hack/versions.env as data', () => {
    const text = readFileSync(new URL('../../../hack/versions.env', import.meta.url), 'utf8');
    expect(pinnedVersion('OLM_VERSION')).toBe(/^OLM_VERSION=(\S+)$/m.exec(text)?.[1]);
    expect(pinnedVersion('NODE_VERSION')).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('names the variable it cannot find, and never matches a prefix of another', () => {
    expect(() => pinnedVersion('NO_SUCH_VERSION')).toThrow('hack/versions.env of the runtime package has no NO_SUCH_VERSION');
    expect(() => pinnedVersion('OLM')).toThrow(/has no OLM$/);
  });
});
