import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { NGINX_CHART } from '../../support/operator.js';
import { startOperatorProcess, waitForExit } from '../../support/process.js';

/** These operators are meant to exit before they watch; should one not, it watches no other file's CRs. */
const NO_NAMESPACE = { WATCH_NAMESPACE: 'cli-test-watches-nothing' };

/** What a user sees when the input is wrong: the process exits non-zero with an actionable message. */
describe('helm-operator run: bad input', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'cli-test-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('exits non-zero naming file, line, entry and field of a malformed watches.yaml', async () => {
    const file = path.join(dir, 'watches.yaml');
    await writeFile(
      file,
      [
        '- group: example.com',
        '  version: v1alpha1',
        '  kind: Nginx',
        `  chart: ${NGINX_CHART}`,
        '  reconcilePeriod: 5 minutes',
        '  overideValues: {}',
        '',
      ].join('\n'),
    );
    const p = startOperatorProcess(['run', '--watches-file', file, '--helm-binary', inject('helmBin')], NO_NAMESPACE);
    const { code } = await waitForExit(p);
    expect(code).not.toBe(0);
    const out = p.output();
    expect(out).toContain(`${file}:5:`);
    expect(out).toMatch(/entry 0 \(example\.com\/v1alpha1, Kind=Nginx\): field "reconcilePeriod": invalid duration "5 minutes"/);
    expect(out).toMatch(/unknown field "overideValues" \(did you mean "overrideValues"\?\)/);
    expect(out).not.toMatch(/\n\s+at /); // a message, not a stack trace
  });

  it('exits non-zero when a chart does not exist', async () => {
    const file = path.join(dir, 'missing-chart.yaml');
    await writeFile(file, '- group: example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: ./no-such-chart\n');
    const p = startOperatorProcess(['run', '--watches-file', file, '--helm-binary', inject('helmBin')], NO_NAMESPACE);
    const { code } = await waitForExit(p);
    expect(code).not.toBe(0);
    expect(p.output()).toMatch(/missing-chart\.yaml:4:\d+: .*field "chart".*no-such-chart/);
  });

  it('refuses an operator-sdk flag that is not implemented instead of ignoring it', async () => {
    const p = startOperatorProcess(['run', '--zap-time-encoding=iso8601']);
    const { code } = await waitForExit(p);
    expect(code).not.toBe(0);
    expect(p.output()).toMatch(/--zap-time-encoding is not implemented/);
  });

  it('refuses an unknown flag', async () => {
    const p = startOperatorProcess(['run', '--no-such-flag']);
    const { code } = await waitForExit(p);
    expect(code).not.toBe(0);
    expect(p.output()).toMatch(/unknown option '--no-such-flag'/);
  });

  it('exits non-zero with a clear message when the kind is not served', async () => {
    const file = path.join(dir, 'unserved.yaml');
    await writeFile(file, `- group: nowhere.example.com\n  version: v1\n  kind: Ghost\n  chart: ${NGINX_CHART}\n`);
    const p = startOperatorProcess(['run', '--watches-file', file, '--helm-binary', inject('helmBin')], NO_NAMESPACE);
    const { code } = await waitForExit(p);
    expect(code).not.toBe(0);
    expect(p.output()).toMatch(
      /no resource of kind "Ghost" is served at nowhere\.example\.com\/v1: is its CustomResourceDefinition installed\?/,
    );
  });
});
