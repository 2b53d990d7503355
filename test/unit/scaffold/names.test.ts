import { describe, expect, it } from 'vitest';
import { apiNames, kindFromChartName, pluralize } from '../../../src/scaffold/names.js';

describe('api names', () => {
  it('derives the group, plural and singular', () => {
    expect(apiNames({ group: 'cache', version: 'v1alpha1', kind: 'Memcached' }, 'example.com')).toMatchObject({
      fullGroup: 'cache.example.com',
      plural: 'memcacheds',
      singular: 'memcached',
    });
    expect(apiNames({ group: '', version: 'v1', kind: 'Nginx' }, 'example.com')).toMatchObject({
      fullGroup: 'example.com',
      plural: 'nginxes',
    });
    expect(['policy', 'box', 'bus', 'key', 'mesh'].map(pluralize)).toEqual(['policies', 'boxes', 'buses', 'keys', 'meshes']);
  });

  it.each([
    [{ group: 'cache', version: 'v1', kind: 'memcached' }, /--kind "memcached" must be CamelCase/],
    [{ group: 'cache', version: '1', kind: 'Memcached' }, /--version "1" must look like v1/],
    [{ group: 'Cache_x', version: 'v1', kind: 'Memcached' }, /--group "Cache_x"/],
    [{ group: 'cache', version: 'v1beta', kind: 'Memcached' }, /--version/],
  ])('refuses %o with a clear message', (gvk, msg) => {
    expect(() => apiNames(gvk, 'example.com')).toThrow(msg);
  });

  it('turns chart names into kinds', () => {
    expect(kindFromChartName('nginx')).toBe('Nginx');
    expect(kindFromChartName('kube-prometheus-stack')).toBe('KubePrometheusStack');
  });
});
