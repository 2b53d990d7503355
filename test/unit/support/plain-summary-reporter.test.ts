import { describe, expect, it } from 'vitest';
import { moduleSeconds, slowestFiles } from '../../support/plain-summary-reporter.js';

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
