/** `healthChecks` in watches.yaml: CEL rules compiled at load, a malformed one refused with file:line. */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileCel, evaluateCel, largestCollection, MAX_MACRO_NESTING } from '../../../src/config/cel-expression.js';
import { parseWatches } from '../../../src/config/watches.js';
import { WatchesError } from '../../../src/config/watches-problems.js';

const compiled = (text: string) => {
  const c = compileCel(text);
  if (!c.ok) throw new Error(c.message);
  return c.expression;
};

describe('compileCel', () => {
  it('compiles Flux cheatsheet expressions over the object fields', () => {
    const e = compiled("status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')");
    expect(evaluateCel(e, { status: { conditions: [{ type: 'Ready', status: 'True' }] } })).toEqual({ ok: true, value: true });
    expect(evaluateCel(e, { status: { conditions: [{ type: 'Ready', status: 'False' }] } })).toEqual({ ok: true, value: false });
  });

  it('refuses a syntax error with its column, an unknown variable and macros nested too deep', () => {
    const refusal = (text: string): string => {
      const c = compileCel(text);
      return c.ok ? 'compiled' : c.message;
    };
    expect(refusal("status.phase == 'Ready' &&")).toBe('not a CEL expression: at 1:25: found & but expecting end of input');
    expect(refusal('state.ready')).toContain('unknown variable "state"');
    expect(refusal('spec.a.all(x, spec.a.all(y, spec.a.all(z, true)))')).toContain(`more than ${MAX_MACRO_NESTING}`);
    expect(refusal('spec.a.all(x, spec.a.exists(y, x == y))')).toBe('compiled');
    expect(refusal('  ')).toBe('must not be empty');
  });

  it('reports an evaluation error, a non-bool result and an object over the budget, never throwing', () => {
    expect(evaluateCel(compiled('status.count / 0 == 1'), { status: { count: 1 } }).ok).toBe(false);
    expect(evaluateCel(compiled('status.phase'), { status: { phase: 'Ready' } })).toEqual({
      ok: false,
      message: 'yields string "Ready", not a bool',
    });
    // A field the object lacks reads as an empty map: has() works before a controller wrote status.
    expect(evaluateCel(compiled('has(status.phase)'), {})).toEqual({ ok: true, value: false });
    const big = { spec: { a: Array.from({ length: 2_000 }, (_, i) => i) } };
    const nested = compiled('spec.a.all(x, spec.a.exists(y, x == y))');
    const over = evaluateCel(nested, big);
    expect(!over.ok && over.message).toMatch(/^not evaluated: a list or map of 2000 entries/);
    expect(evaluateCel(compiled('spec.a.all(x, x >= 0)'), big)).toEqual({ ok: true, value: true });
    expect(largestCollection({ a: [1, 2, { b: [1, 2, 3, 4] }] })).toBe(4);
  });
});

describe('watches.yaml healthChecks', () => {
  let tmp: string;
  beforeEach(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'health-checks-'));
    await mkdir(join(tmp, 'chart', 'templates'), { recursive: true });
    await writeFile(join(tmp, 'chart', 'Chart.yaml'), 'apiVersion: v2\nname: app\nversion: 0.1.0\n');
  });
  afterEach(async () => {
    await rm(tmp, { recursive: true, force: true });
  });
  const entry = (...extra: string[]): string =>
    ['- group: example.com', '  version: v1', '  kind: App', '  chart: chart', ...extra, ''].join('\n');
  const parse = (text: string) => parseWatches(text, { file: 'watches.yaml', env: {}, baseDir: tmp });

  it('reads the rules; without them the field is not set', async () => {
    const [w] = await parse(
      entry(
        '  healthChecks:',
        '    - apiVersion: db.example.com/v1',
        '      kind: Database',
        '      current: "status.phase == \'Ready\'"',
        '      failed: "status.phase == \'Failed\'"',
      ),
    );
    expect(w?.healthChecks).toEqual([
      { apiVersion: 'db.example.com/v1', kind: 'Database', current: "status.phase == 'Ready'", failed: "status.phase == 'Failed'" },
    ]);
    const [plain] = await parse(entry());
    expect(plain).not.toHaveProperty('healthChecks');
  });

  it('refuses a malformed expression, a missing current and a bad kind at their file:line', async () => {
    const text = entry(
      '  healthChecks:',
      '    - apiVersion: db.example.com/v1',
      '      kind: Database',
      '      current: "status.phase == \'Ready\' &&"',
      '    - apiVersion: db.example.com/v1',
      '      kind: cache',
      '      failed: "has(status.error)"',
      '      inProgres: "true"',
    );
    const err = await parse(text).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WatchesError);
    const messages = (err as WatchesError).problems.map((p) => p.message);
    expect(messages).toEqual([
      expect.stringMatching(
        /^watches\.yaml:8:16: entry 0 \(example\.com\/v1, Kind=App\): field "healthChecks\[0\]\.current": not a CEL expression: at 1:\d+: /,
      ),
      expect.stringMatching(/^watches\.yaml:9:7: .*field "healthChecks\[1\]": current is required/),
      expect.stringMatching(/^watches\.yaml:10:13: .*field "healthChecks\[1\]\.kind": expected a kind/),
      expect.stringMatching(
        /^watches\.yaml:12:18: .*field "healthChecks\[1\]\.inProgres": unknown key "inProgres" \(did you mean "inProgress"\?\)/,
      ),
    ]);
  });
});

describe('watches.yaml test', () => {
  let tmp: string;
  beforeEach(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'release-test-'));
    await mkdir(join(tmp, 'chart', 'templates'), { recursive: true });
    await writeFile(join(tmp, 'chart', 'Chart.yaml'), 'apiVersion: v2\nname: app\nversion: 0.1.0\n');
  });
  afterEach(async () => {
    await rm(tmp, { recursive: true, force: true });
  });
  const entry = (...extra: string[]): string =>
    ['- group: example.com', '  version: v1', '  kind: App', '  chart: chart', ...extra, ''].join('\n');
  const parse = (text: string) => parseWatches(text, { file: 'watches.yaml', env: {}, baseDir: tmp });

  it("reads Flux's enable, timeout and ignoreFailures; not enabled is no test", async () => {
    const [w] = await parse(entry('  test: { enable: true, timeout: 2m, ignoreFailures: true }'));
    expect(w?.test).toEqual({ enable: true, timeoutMs: 120_000, ignoreFailures: true });
    const [off] = await parse(entry('  test: { enable: false }'));
    expect(off).not.toHaveProperty('test');
  });

  it('refuses a wrong type, a short timeout and an unknown key at their file:line', async () => {
    const err = await parse(entry('  test:', '    enable: "yes"', '    timeout: 10ms', '    ignoreFailure: true')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WatchesError);
    expect((err as WatchesError).problems.map((p) => p.message)).toEqual([
      expect.stringMatching(/^watches\.yaml:6:13: .*field "test\.enable": expected true or false, got string "yes"$/),
      expect.stringMatching(/^watches\.yaml:7:14: .*field "test\.timeout": "10ms" is shorter than 1s$/),
      expect.stringMatching(/^watches\.yaml:8:5: .*field "test\.ignoreFailure": unknown key \(did you mean "ignoreFailures"\?\)$/),
    ]);
  });
});
