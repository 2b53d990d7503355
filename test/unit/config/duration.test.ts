import { describe, expect, it } from 'vitest';
import { DurationError, formatDuration, parseDuration } from '../../../src/config/duration.js';

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['0s', 0],
    ['300ms', 300],
    ['1.5h', 5_400_000],
    ['1m30s', 90_000],
    ['2h45m', 9_900_000],
    ['30s', 30_000],
    ['1h1m1s1ms', 3_661_001],
    ['.5s', 500],
    ['5.s', 5000],
    ['+10s', 10_000],
    ['1500us', 1.5],
    ['1500\u00b5s', 1.5],
    ['1500\u03bcs', 1.5],
    ['2000000ns', 2],
    ['1500ns', 0.0015],
    ['1.0000000001s', 1000],
  ])('parses %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    ['5 minutes', 'unknown unit " minutes"'],
    ['30', 'missing unit'],
    ['00', 'missing unit'],
    ['5d', 'unknown unit "d"'],
    ['1m30', 'missing unit'],
    ['.s', 'expected a number'],
    ['s', 'expected a number'],
    ['', 'expected a number'],
    [' 30s', 'expected a number'],
  ])('rejects %j', (text, detail) => {
    expect(() => parseDuration(text)).toThrow(DurationError);
    expect(() => parseDuration(text)).toThrow(detail);
  });

  it('names the input and the expected syntax', () => {
    expect(() => parseDuration('5 minutes')).toThrow(
      'invalid duration "5 minutes": expected a number followed by a unit (ns, us, ms, s, m, h), e.g. "30s" or "1m30s"',
    );
  });

  it('rejects negative durations', () => {
    const err = (() => {
      try {
        parseDuration('-5s');
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(DurationError);
    expect((err as DurationError).input).toBe('-5s');
    expect((err as DurationError).reason).toBe('negative durations are not allowed');
    expect(() => parseDuration('-0')).toThrow('negative');
  });

  it('rejects durations beyond Go int64 nanoseconds', () => {
    expect(() => parseDuration('2562048h')).toThrow('out of range');
    expect(parseDuration('2562047h')).toBe(2562047 * 3_600_000);
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
    [9_900_000, '2h45m0s'],
    [1500, '1.5s'],
    [300, '300ms'],
    [0.0015, '1.5\u00b5s'],
    [1.5, '1.5ms'],
    [0.0005, '500ns'],
    [12.345, '12.345ms'],
    [-90_000, '-1m30s'],
    [86_400_000, '24h0m0s'],
  ])('formats %d ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('round-trips through parseDuration', () => {
    for (const text of ['1m30s', '2h45m0s', '300ms', '1.5s', '1h0m0.001s']) {
      expect(formatDuration(parseDuration(text))).toBe(text);
    }
  });
});
