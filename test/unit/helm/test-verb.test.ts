/** `helm test`'s arguments, and the part of its output a failure keeps. */
import { describe, expect, it } from 'vitest';
import { testArgs } from '../../../src/helm/args.js';
import { allSucceeded, MAX_TEST_LOGS, podLogs } from '../../../src/helm/verbs/test.js';

describe('helm test', () => {
  it('passes the timeout and --logs, the release after --', () => {
    expect(testArgs({ release: 'web', namespace: 'apps', timeoutMs: 90_000, logs: true })).toEqual([
      'test',
      '--namespace',
      'apps',
      '--timeout',
      '1m30s',
      '--logs',
      '--',
      'web',
    ]);
  });

  it('keeps the POD LOGS part, redacted, its end when long', () => {
    const lines = [
      'NAME: web',
      'TEST SUITE:     web-test',
      'Phase:          Failed',
      '',
      'POD LOGS: web-test',
      'password=hunter2',
      'connection refused',
    ];
    expect(podLogs(lines, (t) => t.replaceAll('hunter2', '****'))).toBe('POD LOGS: web-test\npassword=****\nconnection refused');
    expect(podLogs(['NAME: web'])).toBe('');
    const long = podLogs(['POD LOGS: web-test', 'x'.repeat(5_000), 'the end']);
    expect(long.length).toBe(MAX_TEST_LOGS + 1);
    expect(long.endsWith('the end')).toBe(true);
  });
});

describe('allSucceeded', () => {
  it('is true only when helm reports suites and every one Succeeded', () => {
    expect(allSucceeded(['TEST SUITE:     web-test', 'Phase:          Succeeded'])).toBe(true);
    expect(allSucceeded(['Phase:          Succeeded', 'Phase:          Failed'])).toBe(false);
    expect(allSucceeded(['NAME: web'])).toBe(false);
  });
});
