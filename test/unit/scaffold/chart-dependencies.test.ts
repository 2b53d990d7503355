import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  declaredDependencies,
  dependencyRepositories,
  isVendored,
  parseRepositories,
  privateRepositoryEnv,
  removeUnpackedDependencies,
  vendoredCharts,
} from '../../../src/scaffold/chart-dependencies.js';

describe('which dependencies charts/ already vendors', () => {
  const common = { name: 'common', version: '2.x.x', repository: 'https://charts.example.com' };

  it('an unpacked directory or an archive of that chart within the constraint', () => {
    expect(isVendored(common, [{ dir: 'common', name: 'common', version: '2.31.10' }])).toBe(true);
    expect(isVendored(common, [{ archive: 'common-2.31.10.tgz' }])).toBe(true);
    expect(isVendored({ name: 'common', version: '>= 2.0.0, < 3.0.0' }, [{ archive: 'common-2.31.10.tgz' }])).toBe(true);
    expect(isVendored({ name: 'common' }, [{ dir: 'c', name: 'common', version: '1.0.0' }])).toBe(true);
  });

  it('not another chart, another version, or an archive of a chart whose name starts the same', () => {
    expect(isVendored(common, [{ dir: 'common', name: 'common', version: '1.9.0' }])).toBe(false);
    expect(isVendored(common, [{ dir: 'x', name: 'other', version: '2.0.0' }])).toBe(false);
    expect(isVendored(common, [{ archive: 'common-lib-2.0.0.tgz' }])).toBe(false);
    expect(isVendored(common, [])).toBe(false);
    expect(isVendored({ name: 'common', version: 'not a range' }, [{ dir: 'common', name: 'common', version: '2.0.0' }])).toBe(false);
  });

  it('reads Chart.yaml dependencies that name a chart', () => {
    expect(declaredDependencies([{ name: 'a', version: '1.0.0', repository: 'oci://r/c' }, { version: '1' }, 'x', null])).toEqual([
      { name: 'a', version: '1.0.0', repository: 'oci://r/c' },
    ]);
  });
});

describe('the private repositories file for helm dependency build', () => {
  const user = [
    { name: 'bitnami', url: 'https://charts.bitnami.com/bitnami/', username: 'me', password: 'secret' },
    { name: 'other', url: 'https://other.example.com' },
  ];

  it('adds an entry per repository URL, reusing the user entry (and credentials) for the same URL', () => {
    const deps = [
      { name: 'common', repository: 'https://charts.bitnami.com/bitnami' },
      { name: 'web', repository: 'http://127.0.0.1:8879/' },
      { name: 'web2', repository: 'http://127.0.0.1:8879' },
      { name: 'sub', repository: 'oci://registry.example.com/charts' },
      { name: 'local', repository: 'file://../local' },
    ];
    expect(dependencyRepositories(deps, user)).toEqual([user[0], { name: 'dependency-1', url: 'http://127.0.0.1:8879' }]);
  });

  it('takes the user entry an alias names (@name, alias:name)', () => {
    expect(
      dependencyRepositories(
        [
          { name: 'a', repository: '@other' },
          { name: 'b', repository: 'alias:bitnami' },
        ],
        user,
      ),
    ).toEqual([user[1], user[0]]);
    expect(dependencyRepositories([{ name: 'a', repository: '@missing' }], user)).toEqual([]);
  });

  it('parses a repositories.yaml, dropping malformed entries', () => {
    expect(parseRepositories('apiVersion: ""\nrepositories:\n- {name: a, url: "https://a"}\n- {name: b}\n- x\n')).toEqual([
      { name: 'a', url: 'https://a' },
    ]);
    expect(parseRepositories('')).toEqual([]);
  });
});

describe('charts/ on disk', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'chart-deps-'));
    await mkdir(path.join(dir, 'charts', 'common'), { recursive: true });
    await writeFile(path.join(dir, 'charts', 'common', 'Chart.yaml'), 'apiVersion: v2\nname: common\nversion: 2.31.10\n');
    await mkdir(path.join(dir, 'charts', 'undeclared'), { recursive: true });
    await writeFile(path.join(dir, 'charts', 'undeclared', 'Chart.yaml'), 'apiVersion: v2\nname: undeclared\nversion: 0.1.0\n');
    await writeFile(path.join(dir, 'charts', 'web-0.1.0.tgz'), '');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('lists unpacked charts by their Chart.yaml and archives by name', async () => {
    expect(await vendoredCharts(dir)).toEqual(
      expect.arrayContaining([
        { dir: 'common', name: 'common', version: '2.31.10' },
        { dir: 'undeclared', name: 'undeclared', version: '0.1.0' },
        { archive: 'web-0.1.0.tgz' },
      ]),
    );
    expect(await vendoredCharts(path.join(dir, 'charts', 'common'))).toEqual([]);
  });

  it('removes unpacked copies of declared dependencies only, before a build fetches them again', async () => {
    await removeUnpackedDependencies(dir, [{ name: 'common' }], await vendoredCharts(dir));
    await expect(stat(path.join(dir, 'charts', 'common'))).rejects.toThrow();
    expect((await stat(path.join(dir, 'charts', 'undeclared'))).isDirectory()).toBe(true);
  });

  it('writes the private repositories file 0600 and points helm at it and at an empty cache', async () => {
    const env = await privateRepositoryEnv(path.join(dir, 'repos'), [{ name: 'dependency-0', url: 'http://127.0.0.1:1' }]);
    expect(env.HELM_REPOSITORY_CONFIG).toBe(path.join(dir, 'repos', 'repositories.yaml'));
    expect(env.HELM_REPOSITORY_CACHE?.startsWith(path.join(dir, 'repos'))).toBe(true);
    expect(env.HELM_CACHE_HOME?.startsWith(path.join(dir, 'repos'))).toBe(true);
    expect((await stat(env.HELM_REPOSITORY_CONFIG ?? '')).mode & 0o777).toBe(0o600);
    expect(parse(await readFile(env.HELM_REPOSITORY_CONFIG ?? '', 'utf8'))).toMatchObject({
      repositories: [{ name: 'dependency-0', url: 'http://127.0.0.1:1' }],
    });
  });
});
