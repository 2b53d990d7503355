import { describe, expect, it } from 'vitest';
import { classifyChartSource } from '../../../src/scaffold/chart-source.js';

const nothing = () => undefined;

describe('classifyChartSource', () => {
  it('prefers what is on disk', () => {
    expect(classifyChartSource({ helmChart: 'charts/web' }, () => 'directory')).toMatchObject({ kind: 'directory' });
    expect(classifyChartSource({ helmChart: 'web-1.0.0.tgz' }, () => 'file')).toMatchObject({ kind: 'archive' });
  });

  it('passes remote references to helm pull', () => {
    expect(classifyChartSource({ helmChart: 'bitnami/nginx', helmChartVersion: '1.2.3' }, nothing)).toEqual({ kind: 'remote', chart: 'bitnami/nginx', version: '1.2.3' });
    expect(classifyChartSource({ helmChart: 'oci://127.0.0.1:5000/charts/web' }, nothing)).toEqual({ kind: 'remote', chart: 'oci://127.0.0.1:5000/charts/web' });
    expect(classifyChartSource({ helmChart: 'https://x.test/web-1.0.0.tgz' }, nothing)).toMatchObject({ kind: 'remote' });
    expect(classifyChartSource({ helmChart: 'web', helmChartRepo: 'http://127.0.0.1:8080' }, nothing)).toEqual({ kind: 'remote', chart: 'web', repo: 'http://127.0.0.1:8080' });
  });

  it('explains what it cannot use', () => {
    expect(() => classifyChartSource({ helmChart: 'missing.tgz' }, nothing)).toThrow(/chart archive missing.tgz not found/);
    expect(() => classifyChartSource({ helmChart: 'web' }, nothing)).toThrow(/a bare name needs --helm-chart-repo/);
    expect(() => classifyChartSource({ helmChart: 'dir', helmChartVersion: '1' }, () => 'directory')).toThrow(/apply to remote charts/);
    expect(() => classifyChartSource({ helmChart: 'oci://h/x', helmChartRepo: 'http://r' }, nothing)).toThrow(/with --helm-chart-repo/);
  });
});
