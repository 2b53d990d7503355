import { describe, expect, it } from 'vitest';
import { MAX_RELEASE_NAME_LENGTH, ownerKindLabel, releaseNameProblem } from '../../../../src/reconciler/decide/release-name.js';

/** A Kubernetes label value: at most 63 characters, alphanumerics with `-`, `_`, `.` inside. */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

describe('releaseNameProblem', () => {
  it('allows helm names up to 53 characters', () => {
    expect(MAX_RELEASE_NAME_LENGTH).toBe(53);
    expect(releaseNameProblem('a'.repeat(53))).toBeUndefined();
  });

  it.each(['web', 'a', '0', 'nginx-sample', 'my.release', 'a-b.c-d', '1abc', 'abc1', 'x'.repeat(20) + '.' + 'y'.repeat(20)])(
    'accepts %j',
    (name) => {
      expect(releaseNameProblem(name)).toBeUndefined();
    },
  );

  it('rejects 54 characters with a message that says how long it is and what to do', () => {
    const name = 'a'.repeat(54);
    expect(releaseNameProblem(name)).toBe(
      `release name "${name}" is 54 characters long; helm allows at most 53. Rename the resource to 53 characters or fewer`,
    );
  });

  it('reports the length first even when the name is also not DNS-1123', () => {
    const name = 'A_'.repeat(40);
    expect(releaseNameProblem(name)).toContain('is 80 characters long; helm allows at most 53');
  });

  it('counts characters of a valid Kubernetes name that is too long for helm (63)', () => {
    expect(releaseNameProblem('n'.repeat(63))).toContain('63 characters long');
  });

  it.each(['', 'Web', 'MyRelease', '-web', 'web-', 'web_1', 'a..b', '.a', 'a.', 'a b', 'wéb', 'a/b', 'a.-b', 'a-.b'])(
    'rejects %j as not DNS-1123',
    (name) => {
      expect(releaseNameProblem(name)).toBe(
        `release name "${name}" is not a valid DNS-1123 name (lower-case letters, digits, '-' and '.')`,
      );
    },
  );
});

describe('ownerKindLabel', () => {
  it('is Kind.group', () => {
    expect(ownerKindLabel('Nginx', 'example.com')).toBe('Nginx.example.com');
    expect(ownerKindLabel('Memcached', 'cache.example.com')).toBe('Memcached.cache.example.com');
  });

  it('is just the Kind for the core group', () => {
    expect(ownerKindLabel('ConfigMap', '')).toBe('ConfigMap');
  });

  it('keeps a name of exactly 63 characters as is', () => {
    const group = `${'g'.repeat(57 - 'example.com'.length - 1)}.example.com`; // Nginx. + 57 = 63
    const full = `Nginx.${group}`;
    expect(full).toHaveLength(63);
    expect(ownerKindLabel('Nginx', group)).toBe(full);
  });

  it('tells kinds of different groups apart, and groups of different kinds', () => {
    const labels = new Set([
      ownerKindLabel('Nginx', 'example.com'),
      ownerKindLabel('Nginx', 'example.org'),
      ownerKindLabel('Redis', 'example.com'),
      ownerKindLabel('Nginx', ''),
    ]);
    expect(labels.size).toBe(4);
  });

  describe('for long groups', () => {
    const long = `${'very-long-subdomain.'.repeat(5)}example.com`;

    it('is at most 63 characters and a valid label value', () => {
      const label = ownerKindLabel('Nginx', long);
      expect(`Nginx.${long}`.length).toBeGreaterThan(63);
      expect(label.length).toBeLessThanOrEqual(63);
      expect(label).toMatch(LABEL_VALUE);
    });

    it('keeps the start of Kind.group and ends with an 8-hex hash', () => {
      const label = ownerKindLabel('Nginx', long);
      expect(label).toMatch(/^Nginx\.very-long-subdomain\..*-[0-9a-f]{8}$/);
      expect(`Nginx.${long}`.startsWith(label.slice(0, -9))).toBe(true);
    });

    it('is stable', () => {
      expect(ownerKindLabel('Nginx', long)).toBe(ownerKindLabel('Nginx', long));
    });

    it('differs for groups that differ only after the cut', () => {
      const a = ownerKindLabel('Nginx', `${long}.a`);
      const b = ownerKindLabel('Nginx', `${long}.b`);
      expect(a.slice(0, -9)).toBe(b.slice(0, -9));
      expect(a).not.toBe(b);
    });

    it('differs for kinds that differ only after the cut', () => {
      const kindA = `${'K'.repeat(70)}a`;
      const kindB = `${'K'.repeat(70)}b`;
      expect(ownerKindLabel(kindA, 'example.com')).not.toBe(ownerKindLabel(kindB, 'example.com'));
    });

    it('drops a separator left at the cut, so the label never holds ".-" or "--"', () => {
      // Kind "Nginx." is 6 characters; a dot at index 53 is the last of the 54 kept.
      const group = `${'a'.repeat(47)}.${'b'.repeat(20)}`;
      expect(`Nginx.${group}`.charAt(53)).toBe('.');
      const label = ownerKindLabel('Nginx', group);
      expect(label).toMatch(LABEL_VALUE);
      expect(label).not.toMatch(/[.-]-[0-9a-f]{8}$/);
      expect(label).toBe(`Nginx.${'a'.repeat(47)}-${label.slice(-8)}`);
    });

    it('drops a run of separators at the cut', () => {
      const group = `${'a'.repeat(46)}-.${'b'.repeat(20)}`;
      const label = ownerKindLabel('Nginx', group);
      expect(label).toMatch(LABEL_VALUE);
      expect(label).toBe(`Nginx.${'a'.repeat(46)}-${label.slice(-8)}`);
    });

    it.each([
      ['Nginx', 'x'.repeat(250)],
      ['A', `${'a.'.repeat(120)}io`],
      ['VeryLongKindNameForACustomResourceThatKeepsGoingAndGoing', 'operators.example.com'],
      ['Nginx', `${'sub-'.repeat(60)}io`],
    ])('%s.%s is label-safe', (kind, group) => {
      const label = ownerKindLabel(kind, group);
      expect(label.length).toBeLessThanOrEqual(63);
      expect(label).toMatch(LABEL_VALUE);
    });
  });

  it('hashes rather than passes through a short name that is not a DNS label once dots become dashes', () => {
    // `_` is legal in a label value, so the result must still be one.
    const label = ownerKindLabel('My_Kind', 'example.com');
    expect(label).toMatch(LABEL_VALUE);
    expect(label).toMatch(/^My_Kind\.example\.com-[0-9a-f]{8}$/);
  });
});
