import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  formatPointer,
  parsePointer,
  validateDriftIgnoreRules,
  WATCH_DRIFT_IGNORE_LIMITS,
} from '../../../src/config/drift-ignore-rules.js';
import { parseWatches } from '../../../src/config/watches.js';
import { WatchesError } from '../../../src/config/watches-problems.js';

describe('parsePointer', () => {
  it('reads RFC 6901 pointers, "~1" as "/" and "~0" as "~"', () => {
    expect(parsePointer('/webhooks/0/clientConfig/caBundle')).toEqual({ ok: true, tokens: ['webhooks', '0', 'clientConfig', 'caBundle'] });
    expect(parsePointer('/metadata/annotations/example.com~1owner~0x')).toEqual({
      ok: true,
      tokens: ['metadata', 'annotations', 'example.com/owner~x'],
    });
    expect(formatPointer(['metadata', 'annotations', 'example.com/owner~x'])).toBe('/metadata/annotations/example.com~1owner~0x');
  });

  it.each([
    ['', /whole object/],
    ['spec/replicas', /must start with "\/"/],
    ['.spec.replicas', /must start with "\/"/],
    ['/spec/~2x', /"~" must be followed by 0/],
    ['/spec/x~', /"~" must be followed by 0/],
    ['/spec//replicas', /empty segment/],
    ['/spec/containers/-', /"-" names no existing list entry/],
    ['/metadata/name', /identifies the object/],
    [`/${'a'.repeat(600)}`, /more than 512/],
  ])('refuses %#', (text, message) => {
    const parsed = parsePointer(text);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? '' : parsed.message).toMatch(message);
  });
});

describe('validateDriftIgnoreRules', () => {
  it('accepts paths with an optional kind, name and label selector target', () => {
    const rules = [
      { paths: ['/spec/replicas'] },
      {
        paths: ['/webhooks/0/clientConfig/caBundle'],
        target: { kind: 'MutatingWebhookConfiguration', name: 'cfg', labelSelector: { matchLabels: { a: 'b' } } },
      },
    ];
    expect(validateDriftIgnoreRules(rules, WATCH_DRIFT_IGNORE_LIMITS)).toEqual({ ok: true, rules });
  });

  it('names the path of every problem', () => {
    const result = validateDriftIgnoreRules(
      [
        { paths: ['spec/replicas', 3] },
        { paths: [] },
        { path: ['/x'] },
        { paths: ['/x'], target: { kind: 'deployment', labelSelector: { matchLabels: { 'a b': 'c' } }, namespace: 'x' } },
        'x',
      ],
      WATCH_DRIFT_IGNORE_LIMITS,
    );
    expect(result.ok).toBe(false);
    const problems = result.ok ? [] : result.problems.map((p) => p.path.join('.'));
    expect(problems).toEqual([
      '0.paths.0',
      '0.paths.1',
      '1.paths',
      '2.path',
      '2.paths',
      '3.target.kind',
      '3.target.labelSelector.matchLabels.a b',
      '3.target.namespace',
      '4',
    ]);
  });

  it('bounds the rules and the pointers over all of them', () => {
    const many = Array.from({ length: 3 }, () => ({ paths: ['/a', '/b'] }));
    const result = validateDriftIgnoreRules(many, { rules: 2, paths: 5 });
    expect(result.ok ? [] : result.problems.map((p) => p.message)).toEqual([
      '3 rules, more than the 2 allowed',
      '6 paths over all rules, more than the 5 allowed',
    ]);
    expect(validateDriftIgnoreRules({ paths: ['/a'] }, WATCH_DRIFT_IGNORE_LIMITS).ok).toBe(false);
  });
});

describe('watches.yaml driftIgnore', () => {
  let tmp: string;
  beforeEach(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'drift-ignore-'));
    await mkdir(join(tmp, 'chart', 'templates'), { recursive: true });
    await writeFile(join(tmp, 'chart', 'Chart.yaml'), 'apiVersion: v2\nname: app\nversion: 0.1.0\n');
  });
  afterEach(async () => {
    await rm(tmp, { recursive: true, force: true });
  });
  const entry = (...extra: string[]): string =>
    ['- group: example.com', '  version: v1', '  kind: App', '  chart: chart', ...extra, ''].join('\n');
  const parse = (text: string) => parseWatches(text, { file: 'watches.yaml', env: {}, baseDir: tmp });

  it('reads rules and the annotation opt-in; without them, neither is set', async () => {
    const [w] = await parse(
      entry(
        '  driftIgnore:',
        '    - paths: [/webhooks/0/clientConfig/caBundle]',
        '      target: {kind: MutatingWebhookConfiguration}',
        '  allowDriftIgnoreAnnotation: true',
      ),
    );
    expect(w).toMatchObject({
      driftIgnore: [{ paths: ['/webhooks/0/clientConfig/caBundle'], target: { kind: 'MutatingWebhookConfiguration' } }],
      allowDriftIgnoreAnnotation: true,
    });
    const [plain] = await parse(entry());
    expect(plain).not.toHaveProperty('driftIgnore');
    expect(plain).not.toHaveProperty('allowDriftIgnoreAnnotation');
  });

  it('reads conflictPolicy (absent: the default, force) and refuses another value with its place', async () => {
    const [fail] = await parse(entry('  conflictPolicy: fail'));
    expect(fail).toMatchObject({ conflictPolicy: 'fail' });
    const [plain] = await parse(entry());
    expect(plain).not.toHaveProperty('conflictPolicy');
    const err = await parse(entry('  conflictPolicy: replace')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WatchesError);
    expect((err as WatchesError).problems.map((p) => p.message)).toEqual([
      'watches.yaml:5:19: entry 0 (example.com/v1, Kind=App): field "conflictPolicy": expected "force" (an upgrade takes back the chart\'s fields from other field managers, the default) or "fail" (it stops with ResourceConflict), got string "replace"',
    ]);
  });

  it('reads crds (absent: the default, Create) and refuses another value with its place', async () => {
    const [replace] = await parse(entry('  crds: CreateReplace'));
    expect(replace).toMatchObject({ crds: 'CreateReplace' });
    const [plain] = await parse(entry());
    expect(plain).not.toHaveProperty('crds');
    const err = await parse(entry('  crds: Replace')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WatchesError);
    expect((err as WatchesError).problems.map((p) => p.message)).toEqual([
      'watches.yaml:5:9: entry 0 (example.com/v1, Kind=App): field "crds": expected "Create" (the chart\'s crds/ created at install when missing, as helm does; the default), "CreateReplace" (also replaced at upgrade when OLM v1\'s upgrade-safety rules allow it) or "Skip" (never installed), got string "Replace"',
    ]);
  });

  it('refuses a malformed pointer at load, with file:line of the pointer itself', async () => {
    const err = await parse(
      entry('  driftIgnore:', '    - paths:', '        - /spec/replicas', '        - spec.template', '      target: {kind: deployment}'),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WatchesError);
    const messages = (err as WatchesError).problems.map((p) => p.message);
    expect(messages).toEqual([
      'watches.yaml:8:11: entry 0 (example.com/v1, Kind=App): field "driftIgnore[0].paths[1]": "spec.template" is not a JSON pointer: it must start with "/", e.g. "/spec/replicas"',
      'watches.yaml:9:22: entry 0 (example.com/v1, Kind=App): field "driftIgnore[0].target.kind": expected a kind such as "Deployment", got string "deployment"',
    ]);
  });
});
