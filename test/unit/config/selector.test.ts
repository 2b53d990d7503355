import { describe, expect, it } from 'vitest';
import {
  labelKeyProblems,
  labelSelectorToString,
  labelValueProblems,
  validateLabelSelector,
  type LabelSelector,
  type SelectorProblem,
} from '../../../src/config/selector.js';

function problemsOf(value: unknown): readonly SelectorProblem[] {
  const result = validateLabelSelector(value);
  return result.ok ? [] : result.problems;
}

describe('validateLabelSelector', () => {
  it('accepts a full selector and returns it typed', () => {
    const input = {
      matchLabels: { app: 'nginx', 'example.com/tier': 'web' },
      matchExpressions: [
        { key: 'env', operator: 'In', values: ['prod', 'dev'] },
        { key: 'legacy', operator: 'DoesNotExist' },
        { key: 'zone', operator: 'NotIn', values: ['a'] },
        { key: 'owner', operator: 'Exists', values: [] },
      ],
    };
    const result = validateLabelSelector(input);
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.selector.matchLabels).toEqual(input.matchLabels);
      expect(result.selector.matchExpressions?.[1]).toEqual({ key: 'legacy', operator: 'DoesNotExist' });
      expect(result.selector.matchExpressions?.[3]).toEqual({ key: 'owner', operator: 'Exists' });
    }
  });

  it('treats null and {} as the empty selector', () => {
    expect(validateLabelSelector(null)).toEqual({ ok: true, selector: {} });
    expect(validateLabelSelector({})).toEqual({ ok: true, selector: {} });
    expect(validateLabelSelector({ matchLabels: null, matchExpressions: null })).toEqual({ ok: true, selector: {} });
  });

  it('requires values for In and NotIn and forbids them for Exists and DoesNotExist', () => {
    const problems = problemsOf({
      matchExpressions: [
        { key: 'a', operator: 'In', values: [] },
        { key: 'b', operator: 'NotIn' },
        { key: 'c', operator: 'Exists', values: ['x'] },
        { key: 'd', operator: 'DoesNotExist', values: ['y'] },
      ],
    });
    expect(problems).toEqual([
      { path: ['matchExpressions', 0, 'values'], message: 'operator In needs at least one value' },
      { path: ['matchExpressions', 1, 'values'], message: 'operator NotIn needs at least one value' },
      { path: ['matchExpressions', 2, 'values'], message: 'operator Exists takes no values' },
      { path: ['matchExpressions', 3, 'values'], message: 'operator DoesNotExist takes no values' },
    ]);
  });

  it('rejects unknown operators, suggesting the right case', () => {
    const problems = problemsOf({ matchExpressions: [{ key: 'a', operator: 'in', values: ['x'] }, { key: 'b' }] });
    expect(problems[0]?.path).toEqual(['matchExpressions', 0, 'operator']);
    expect(problems[0]?.message).toContain('unknown operator string "in"');
    expect(problems[0]?.message).toContain('(did you mean "In"?)');
    expect(problems[1]?.message).toContain('operator is required');
  });

  it('checks label keys and values with the Kubernetes rules', () => {
    const problems = problemsOf({
      matchLabels: { 'bad key': 'x', 'Example.com/name': 'y', ok: 'not ok!', num: 5 },
      matchExpressions: [
        { key: '', operator: 'Exists' },
        { key: 'a', operator: 'In', values: ['-bad'] },
      ],
    });
    const messages = problems.map((p) => `${p.path.join('.')}: ${p.message}`);
    expect(messages).toEqual([
      expect.stringContaining('matchLabels.bad key: label key name "bad key" must consist of alphanumeric'),
      expect.stringContaining('matchLabels.Example.com/name: label key prefix "Example.com" must be a DNS subdomain'),
      expect.stringContaining('matchLabels.ok: label value "not ok!" must consist'),
      'matchLabels.num: label value must be a string, got number 5 (quote it)',
      'matchExpressions.0.key: key is required and must be a string',
      expect.stringContaining('matchExpressions.1.values.0: label value "-bad"'),
    ]);
  });

  it('reports unknown fields and wrong shapes', () => {
    expect(problemsOf({ matchLabel: { a: 'b' } })).toEqual([
      { path: ['matchLabel'], message: 'unknown field "matchLabel"; expected one of matchLabels, matchExpressions' },
    ]);
    expect(problemsOf({ matchExpressions: [{ key: 'a', operator: 'Exists', value: ['x'] }] })[0]?.path).toEqual([
      'matchExpressions',
      0,
      'value',
    ]);
    expect(problemsOf('app=nginx')[0]?.message).toContain('must be a map');
    expect(problemsOf({ matchLabels: ['a'] })[0]?.message).toContain('got a list');
    expect(problemsOf({ matchExpressions: { key: 'a' } })[0]?.message).toContain('got a map');
    expect(problemsOf({ matchExpressions: [{ key: 'a', operator: 'In', values: 'x' }] })[0]?.message).toContain(
      'must be a list of strings',
    );
  });
});

describe('label syntax', () => {
  it.each(['app', 'app.kubernetes.io/name', 'a', 'A_b-c.d', 'x'.repeat(63), `${'a'.repeat(253)}/x`])('accepts key %s', (key) => {
    expect(labelKeyProblems(key)).toEqual([]);
  });

  it.each(['', '/a', 'a/', 'a/b/c', '-a', 'a-', 'x'.repeat(64), 'UPPER.com/a', `${'a'.repeat(254)}/x`])('rejects key %j', (key) => {
    expect(labelKeyProblems(key)).not.toEqual([]);
  });

  it('accepts empty values and rejects long or ill-formed ones', () => {
    expect(labelValueProblems('')).toEqual([]);
    expect(labelValueProblems('v1.2_3-x')).toEqual([]);
    expect(labelValueProblems('x'.repeat(64))[0]).toContain('longer than 63');
    expect(labelValueProblems('a b')).toHaveLength(1);
  });
});

describe('labelSelectorToString', () => {
  it('gives the empty string for the empty selector', () => {
    expect(labelSelectorToString({})).toBe('');
    expect(labelSelectorToString({ matchLabels: {}, matchExpressions: [] })).toBe('');
  });

  it('prints the server-side query form, sorted by key, values sorted and de-duplicated', () => {
    const selector: LabelSelector = {
      matchLabels: { z: '1', a: 'b' },
      matchExpressions: [
        { key: 'x', operator: 'DoesNotExist' },
        { key: 'env', operator: 'In', values: ['prod', 'dev', 'prod'] },
        { key: 'tier', operator: 'NotIn', values: ['cache'] },
        { key: 'owner', operator: 'Exists' },
      ],
    };
    expect(labelSelectorToString(selector)).toBe('a=b,env in (dev,prod),owner,tier notin (cache),!x,z=1');
  });

  it('is deterministic regardless of input order', () => {
    const one: LabelSelector = {
      matchLabels: { a: 'b', c: 'd' },
      matchExpressions: [
        { key: 'a', operator: 'Exists' },
        { key: 'a', operator: 'NotIn', values: ['x'] },
      ],
    };
    const two: LabelSelector = {
      matchLabels: { c: 'd', a: 'b' },
      matchExpressions: [
        { key: 'a', operator: 'NotIn', values: ['x'] },
        { key: 'a', operator: 'Exists' },
      ],
    };
    expect(labelSelectorToString(one)).toBe(labelSelectorToString(two));
    expect(labelSelectorToString(one)).toBe('a,a notin (x),a=b,c=d');
  });
});
