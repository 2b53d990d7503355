import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readHelmYaml } from '../../../src/config/helm-yaml.js';
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
    expect(parse(sample) as unknown).toEqual({
      apiVersion: target.apiVersion,
      kind: target.kind,
      metadata: { name: target.name },
      spec: parse(values) as unknown,
    });
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

  it('types YAML 1.1 scalars as helm reads them, written so YAML 1.1 and 1.2 readers agree', () => {
    const values = [
      'enabled: yes',
      'links: Off',
      'mode: 0400',
      'mask: 0x1F',
      'flags: 0b101',
      'big: 1_000',
      'quoted: "yes"',
      'plainString: 1:20',
      'date: 2001-12-14',
      'none: ~',
      'y: key is YAML 1.1 true',
      'nested:',
      '  list: [on, n, 0o17]',
      '',
    ].join('\n');
    const expected = {
      enabled: true,
      links: false,
      mode: 256,
      mask: 31,
      flags: 5,
      big: 1000,
      quoted: 'yes',
      plainString: '1:20',
      date: '2001-12-14',
      none: null,
      true: 'key is YAML 1.1 true',
      nested: { list: [true, false, 15] },
    };
    expect(readHelmYaml(values)).toEqual(expected);
    const out = sampleCustomResource(values, target);
    expect((readHelmYaml(out) as { spec: unknown }).spec).toEqual(expected);
    expect((parse(out) as { spec: unknown }).spec).toEqual(expected);
    expect(out).toContain('mode: 0o400');
    expect(out).toContain('enabled: true');
  });

  it('keeps the last of duplicate keys, as helm does', () => {
    const out = sampleCustomResource('a: 1\nb:\n  c: 1\n  c: 2\na: 2\n', target);
    expect((parse(out) as { spec: unknown }).spec).toEqual({ b: { c: 2 }, a: 2 });
  });

  it('rejects values that do not parse or are not a map, with the line', () => {
    expect(() => sampleCustomResource('a: [1\n', target)).toThrow(InvalidValuesError);
    expect(() => sampleCustomResource('- 1\n- 2\n', target)).toThrow(/top level must be a map/);
    expect(() => sampleCustomResource('just a string\n', target)).toThrow(InvalidValuesError);
  });
});
