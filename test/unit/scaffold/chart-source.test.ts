import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChartHelm } from '../../../src/helm/chart-helm.js';
import { classifyChartSource, fetchChart, localDependencies } from '../../../src/scaffold/chart-source.js';
import { HELM_BINARIES, writeTinyChart } from '../helm/helpers.js';

const nothing = () => undefined;

describe('classifyChartSource', () => {
  it('prefers what is on disk', () => {
    expect(classifyChartSource({ helmChart: 'charts/web' }, () => 'directory')).toMatchObject({ kind: 'directory' });
    expect(classifyChartSource({ helmChart: 'web-1.0.0.tgz' }, () => 'file')).toMatchObject({ kind: 'archive' });
  });

  it('passes remote references to helm pull', () => {
    expect(classifyChartSource({ helmChart: 'bitnami/nginx', helmChartVersion: '1.2.3' }, nothing)).toEqual({
      kind: 'remote',
      chart: 'bitnami/nginx',
      version: '1.2.3',
    });
    expect(classifyChartSource({ helmChart: 'oci://127.0.0.1:5000/charts/web' }, nothing)).toEqual({
      kind: 'remote',
      chart: 'oci://127.0.0.1:5000/charts/web',
    });
    expect(classifyChartSource({ helmChart: 'https://x.test/web-1.0.0.tgz' }, nothing)).toMatchObject({ kind: 'remote' });
    expect(classifyChartSource({ helmChart: 'web', helmChartRepo: 'http://127.0.0.1:8080' }, nothing)).toEqual({
      kind: 'remote',
      chart: 'web',
      repo: 'http://127.0.0.1:8080',
    });
  });

  it('explains what it cannot use', () => {
    expect(() => classifyChartSource({ helmChart: 'missing.tgz' }, nothing)).toThrow(/chart archive missing.tgz not found/);
    expect(() => classifyChartSource({ helmChart: 'web' }, nothing)).toThrow(/a bare name needs --helm-chart-repo/);
    expect(() => classifyChartSource({ helmChart: 'dir', helmChartVersion: '1' }, () => 'directory')).toThrow(/apply to remote charts/);
    expect(() => classifyChartSource({ helmChart: 'oci://h/x', helmChartRepo: 'http://r' }, nothing)).toThrow(/with --helm-chart-repo/);
  });
});

describe('localDependencies', () => {
  const deps = [
    { name: 'lib', repository: 'file://../lib' },
    { name: 'inner', repository: 'file://sub/inner' },
    { name: 'abs', repository: 'file:///opt/charts/abs' },
    { name: 'remote', repository: 'https://charts.example.com' },
    { name: 'aliased', repository: '@stable' },
    null,
  ];

  it('copies relative file:// subcharts to where the same path resolves from the copy', () => {
    expect(localDependencies(deps, '/src/charts/app', '/tmp/w/chart/app', '/tmp/w')).toEqual([
      { from: '/src/charts/lib', to: '/tmp/w/chart/lib' },
      { from: '/src/charts/app/sub/inner', to: '/tmp/w/chart/app/sub/inner' },
    ]);
  });

  it('refuses a path that would land outside the scratch directory, saying what to do', () => {
    expect(() => localDependencies([{ repository: 'file://../../../far' }], '/src/a', '/tmp/w/chart/a', '/tmp/w')).toThrow(
      /vendor it into charts\//,
    );
  });
});

describe.runIf(HELM_BINARIES.length > 0)('fetchChart of a chart directory with a file:// subchart (real helm)', () => {
  it('vendors the sibling subchart into charts/ and keeps Chart.yaml as written', async () => {
    const work = await mkdtemp(path.join(tmpdir(), 'chart-source-test-'));
    try {
      await writeTinyChart(work, 'lib', '0.2.0');
      const app = await writeTinyChart(work, 'app');
      const chartYaml = `${await readFile(path.join(app, 'Chart.yaml'), 'utf8')}dependencies:\n  - name: lib\n    version: 0.2.0\n    repository: file://../lib\n`;
      await writeFile(path.join(app, 'Chart.yaml'), chartYaml);
      const scratch = await mkdtemp(path.join(work, 'scratch-'));
      const helm = new ChartHelm({ binary: HELM_BINARIES[0]!.bin, tmpDir: work });
      const fetched = await fetchChart(helm, { kind: 'directory', path: app }, { workDir: scratch });
      expect(fetched.name).toBe('app');
      expect(await readdir(path.join(fetched.dir, 'charts'))).toEqual(['lib-0.2.0.tgz']);
      expect(await readFile(path.join(fetched.dir, 'Chart.yaml'), 'utf8')).toBe(chartYaml);
      expect(await readdir(app)).not.toContain('charts');
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});
