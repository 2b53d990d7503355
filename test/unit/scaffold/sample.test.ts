import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { InvalidValuesError, sampleCustomResource } from '../../../src/scaffold/sample.js';

const target = { apiVersion: 'example.com/v1alpha1', kind: 'Nginx', name: 'nginx-sample' };

describe('sampleCustomResource', () => {
  it('nests values under spec, keeping comments, key order and quoting', () => {
    const values = [
      '# Default values for demo.',
      '# A YAML-formatted file.',
      '',
      '# -- Number of pods.',
      'replicaCount: 1 # trailing',
      'image:',
      '  # -- Image repository.',
      '  repository: nginx',
      '  tag: "1.10"',
      'zeta: true',
      'alpha: []',
      '# last words',
      '',
    ].join('\n');
    expect(sampleCustomResource(values, target)).toBe(
      [
        'apiVersion: example.com/v1alpha1',
        'kind: Nginx',
        'metadata:',
        '  name: nginx-sample',
        'spec:',
        '  # Default values for demo.',
        '  # A YAML-formatted file.',
        '',
        '  # -- Number of pods.',
        '  replicaCount: 1 # trailing',
        '  image:',
        '    # -- Image repository.',
        '    repository: nginx',
        '    tag: "1.10"',
        '  zeta: true',
        '  alpha: []',
        '  # last words',
        '',
      ].join('\n'),
    );
  });

  it('round-trips the sample chart values exactly as data', () => {
    const values = readFileSync(new URL('../../../helm-charts/nginx/values.yaml', import.meta.url), 'utf8');
    const sample = sampleCustomResource(values, target);
    expect(parse(sample) as unknown).toEqual({ apiVersion: target.apiVersion, kind: target.kind, metadata: { name: target.name }, spec: parse(values) as unknown });
    expect(sample).toContain('  # -- Number of nginx pods.');
  });

  it('gives spec: {} for an empty values file, keeping a comments-only file above spec', () => {
    expect(parse(sampleCustomResource('', target))).toMatchObject({ spec: {} });
    expect(parse(sampleCustomResource('\n\n', target))).toMatchObject({ spec: {} });
    const out = sampleCustomResource('# nothing to set yet\n', target);
    expect(out).toContain('# nothing to set yet\nspec: {}\n');
    expect(parse(out)).toMatchObject({ spec: {} });
  });

  it('keeps anchors and aliases working and long strings on one line', () => {
    const long = 'x'.repeat(200);
    const out = sampleCustomResource(`base: &b {a: 1}\ncopy: *b\nlong: ${long}\n`, target);
    expect((parse(out) as { spec: unknown }).spec).toEqual({ base: { a: 1 }, copy: { a: 1 }, long });
    expect(out).toContain(`long: ${long}\n`);
  });

  it('puts an optional header comment above the document', () => {
    const out = sampleCustomResource('a: 1\n', target, { header: 'Default values copied from\nhelm-charts/demo/values.yaml' });
    expect(out.startsWith('# Default values copied from\n# helm-charts/demo/values.yaml\n')).toBe(true);
    expect(parse(out)).toMatchObject({ apiVersion: target.apiVersion, spec: { a: 1 } });
  });

  it('rejects values that do not parse or are not a map, with the line', () => {
    expect(() => sampleCustomResource('a: [1\n', target)).toThrow(InvalidValuesError);
    expect(() => sampleCustomResource('a: 1\na: 2\n', target)).toThrow(/line 2/);
    expect(() => sampleCustomResource('- 1\n- 2\n', target)).toThrow(/top level must be a map/);
    expect(() => sampleCustomResource('just a string\n', target)).toThrow(InvalidValuesError);
  });
});
