import { describe, expect, it } from 'vitest';
import PlainSummaryReporter, { errorMessage, moduleSeconds, slowestFiles } from '../../support/plain-summary-reporter.js';

describe('the slowest files a test run lists', () => {
  it('lists the slowest first, at most the count asked for, with how many files ran', () => {
    const files = [
      { project: 'unit', file: 'a.test.ts', seconds: 1 },
      { project: 'integration', file: 'b.test.ts', seconds: 120.04 },
      { project: 'integration', file: 'c.test.ts', seconds: 30.5 },
    ];
    expect(slowestFiles(files, 2)).toEqual([
      'slowest files (2 of 3):',
      '   120.0s  integration b.test.ts',
      '    30.5s  integration c.test.ts',
    ]);
  });

  it('prints nothing when no file ran', () => {
    expect(slowestFiles([])).toEqual([]);
  });

  it("counts a file's import, setup, tests and hooks", () => {
    expect(moduleSeconds({ prepareDuration: 100, collectDuration: 400, setupDuration: 500, duration: 2000 })).toBe(3);
  });
});

describe('an unhandled error in the summary', () => {
  it('reads a serialised error without a prototype, a plain one, and anything else', () => {
    const serialised = Object.assign(Object.create(null) as object, { name: 'TypeError', message: 'boom\n  at x' });
    expect(errorMessage(serialised)).toBe('TypeError: boom\n  at x');
    expect(errorMessage(Object.assign(Object.create(null) as object, { code: 7 }))).toBe('{"code":7}');
    expect(errorMessage(new Error('plain'))).toBe('Error: plain');
    expect(errorMessage('text')).toBe('text');
  });

  it('prints its failed-test line and the closing line instead of throwing', () => {
    const lines: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = (chunk: string) => (lines.push(chunk), true);
    try {
      new PlainSummaryReporter().onTestRunEnd([], [Object.assign(Object.create(null) as object, { message: 'worker died' })]);
    } finally {
      process.stdout.write = write;
    }
    const out = lines.join('');
    expect(out).toContain('failed test: (unhandled error): worker died');
    expect(out).toContain('0 passed, 1 failed, 0 skipped');
  });
});
