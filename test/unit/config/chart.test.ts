import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { create } from 'tar';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChartError, digestFiles, loadChartInfo } from '../../../src/config/chart.js';

let tmp: string;

beforeEach(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'chart-test-'));
});

afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const CHART_YAML = 'apiVersion: v2\nname: nginx\nversion: 0.1.0\nappVersion: "1.25.3"\n';

async function writeTree(root: string, files: Record<string, string>): Promise<string> {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), content);
  }
  return root;
}

async function makeChart(name = 'nginx', extra: Record<string, string> = {}): Promise<string> {
  return writeTree(join(tmp, name), {
    'Chart.yaml': CHART_YAML,
    'values.yaml': 'replicaCount: 1\n',
    'templates/deployment.yaml': 'kind: Deployment\n',
    ...extra,
  });
}

async function pack(dir: string, out: string, mtime = new Date('2020-01-01T00:00:00Z')): Promise<string> {
  await create({ gzip: true, file: out, cwd: join(dir, '..'), portable: true, mtime }, [relative(join(dir, '..'), dir)]);
  return out;
}

async function chartError(path: string): Promise<ChartError> {
  try {
    await loadChartInfo(path);
  } catch (err) {
    if (err instanceof ChartError) return err;
    throw err;
  }
  throw new Error('expected a ChartError');
}

describe('loadChartInfo: directories', () => {
  it('reads name, versions and an absolute path', async () => {
    const dir = await makeChart();
    const info = await loadChartInfo(relative(process.cwd(), dir));
    expect(info).toEqual({
      path: dir,
      format: 'directory',
      name: 'nginx',
      version: '0.1.0',
      appVersion: '1.25.3',
      digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) as unknown,
    });
  });

  it('keeps number-looking versions as written and omits a missing appVersion', async () => {
    const dir = await makeChart('n', { 'Chart.yaml': 'name: n\nversion: 1.10\nappVersion: 2.10\n' });
    const info = await loadChartInfo(dir);
    expect(info.version).toBe('1.10');
    expect(info.appVersion).toBe('2.10');
    const bare = await makeChart('m', { 'Chart.yaml': 'name: m\nversion: 1.0.0\n' });
    expect(await loadChartInfo(bare)).not.toHaveProperty('appVersion');
  });

  it('changes the digest when content or a path changes, but not on a rewrite of the same bytes', async () => {
    const dir = await makeChart();
    const before = (await loadChartInfo(dir)).digest;
    await writeFile(join(dir, 'values.yaml'), 'replicaCount: 1\n');
    expect((await loadChartInfo(dir)).digest).toBe(before);
    await writeFile(join(dir, 'values.yaml'), 'replicaCount: 2\n');
    const changed = (await loadChartInfo(dir)).digest;
    expect(changed).not.toBe(before);
    await writeFile(join(dir, 'templates/extra.yaml'), '');
    expect((await loadChartInfo(dir)).digest).not.toBe(changed);
  });

  it('honours .helmignore like helm, including the templates/.* default', async () => {
    const dir = await makeChart('ign', {
      '.helmignore': '# comment\n*.tmp\n/docs/\nci/*.yaml\n',
      'a.tmp': 'x',
      'sub/b.tmp': 'x',
      'docs/readme.md': 'x',
      'ci/values.yaml': 'x',
      'templates/.swp': 'x',
    });
    const base = (await loadChartInfo(dir)).digest;
    for (const ignored of ['a.tmp', 'sub/b.tmp', 'docs/readme.md', 'ci/values.yaml', 'templates/.swp']) {
      await writeFile(join(dir, ignored), 'changed');
      expect((await loadChartInfo(dir)).digest, ignored).toBe(base);
    }
    await writeFile(join(dir, 'ci/values.txt'), 'not ignored');
    expect((await loadChartInfo(dir)).digest).not.toBe(base);
  });

  it('keeps helm\u2019s negation quirk: "!x" ignores everything that does not match x', async () => {
    const dir = await makeChart('neg', { '.helmignore': '!Chart.yaml\n' });
    const base = (await loadChartInfo(dir)).digest;
    await writeFile(join(dir, 'values.yaml'), 'replicaCount: 5\n');
    expect((await loadChartInfo(dir)).digest).toBe(base);
  });

  it('rejects a .helmignore with ** as helm does', async () => {
    const dir = await makeChart('dbl', { '.helmignore': '**/x\n' });
    const err = await chartError(dir);
    expect(err.reason).toBe('invalid-content');
    expect(err.message).toContain('double-star');
  });

  it('follows symlinks that stay inside the chart, as helm does', async () => {
    const dir = await makeChart('sym');
    const before = (await loadChartInfo(dir)).digest;
    await writeTree(dir, { 'files/shared.yaml': 'x: 1\n' });
    await symlink('../files/shared.yaml', join(dir, 'templates', 'shared.yaml'));
    await symlink(join(dir, 'files'), join(dir, 'linked'));
    await symlink(dir, join(dir, 'loop'));
    expect((await loadChartInfo(dir)).digest).not.toBe(before);
  });

  describe('refuses a symlink out of the chart, naming the file and its target', () => {
    it.each([
      ['a template linked to /etc/passwd', 'templates/x.yaml', '/etc/passwd'],
      ['a files/ entry linked to a relative path out of the chart', 'files/passwd', '../../../../../../../../etc/passwd'],
      ['a subchart directory linked from outside', 'charts/common', '../../outside'],
      ['a link inside a subchart', 'charts/db/templates/x.yaml', '/etc/hostname'],
    ])('%s', async (_name, link, target) => {
      await writeTree(tmp, { 'outside/Chart.yaml': 'name: common\nversion: 1.0.0\n' });
      const dir = await makeChart('escape', { 'charts/db/Chart.yaml': 'name: db\nversion: 1.0.0\n' });
      await mkdir(join(dir, link, '..'), { recursive: true });
      await symlink(target, join(dir, link));
      const err = await chartError(dir);
      expect(err.reason).toBe('escaping-symlink');
      expect(err.message).toContain(
        `chart ${JSON.stringify(dir)}: ${JSON.stringify(link)} is a symbolic link to ${JSON.stringify(target)}, which resolves outside the chart directory`,
      );
    });

    it('but not one that .helmignore leaves out (helm reads nothing of it)', async () => {
      const dir = await makeChart('ignored', { '.helmignore': 'secret\n' });
      await symlink('/etc/passwd', join(dir, 'secret'));
      await expect(loadChartInfo(dir)).resolves.toMatchObject({ name: 'nginx' });
    });

    it('and refuses a dangling link, ignored or not, as helm fails on it', async () => {
      const dir = await makeChart('dangling', { '.helmignore': 'gone\n' });
      await symlink('nowhere', join(dir, 'gone'));
      const err = await chartError(dir);
      expect(err.reason).toBe('escaping-symlink');
      expect(err.message).toContain('"gone" is a symbolic link to "nowhere", which points to nothing');
    });
  });

  it('explains a directory without Chart.yaml', async () => {
    const dir = await writeTree(join(tmp, 'empty'), { 'values.yaml': '' });
    const err = await chartError(dir);
    expect(err.reason).toBe('not-a-chart');
    expect(err.path).toBe(dir);
    expect(err.message).toBe(`chart directory ${JSON.stringify(dir)} has no Chart.yaml`);
  });

  it.each([
    ['version: 1.0.0\n', '"name" is required'],
    ['name: x\n', '"version" is required'],
    ['name: x\nversion: latest\n', 'version "latest" is not a semantic version'],
    ['name: a/b\nversion: 1.0.0\n', 'must not contain path separators'],
    ['name: [x\n', 'invalid Chart.yaml'],
  ])('rejects Chart.yaml %j', async (chartYaml, message) => {
    const dir = await makeChart('bad', { 'Chart.yaml': chartYaml });
    const err = await chartError(dir);
    expect(err.reason).toBe('invalid-metadata');
    expect(err.message).toContain(message);
  });

  it('rejects library charts, which helm cannot install', async () => {
    const dir = await makeChart('lib', { 'Chart.yaml': 'apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n' });
    const err = await chartError(dir);
    expect(err.reason).toBe('not-installable');
    expect(err.message).toContain('library chart');
  });

  it('reports a missing path with its absolute form', async () => {
    const err = await chartError(join(tmp, 'nope'));
    expect(err.reason).toBe('not-found');
    expect(err.message).toBe(`chart ${JSON.stringify(join(tmp, 'nope'))} does not exist`);
  });
});

describe('loadChartInfo: archives', () => {
  it('reads <top>/Chart.yaml from a .tgz without extracting it', async () => {
    const dir = await makeChart();
    const tgz = await pack(dir, join(tmp, 'nginx-0.1.0.tgz'));
    const info = await loadChartInfo(tgz);
    expect(info).toMatchObject({ path: tgz, format: 'archive', name: 'nginx', version: '0.1.0', appVersion: '1.25.3' });
  });

  it('digests the same files to the same value as the directory, whatever the archive timestamps', async () => {
    const dir = await makeChart();
    const a = await loadChartInfo(await pack(dir, join(tmp, 'a.tgz'), new Date('2020-01-01T00:00:00Z')));
    const b = await loadChartInfo(await pack(dir, join(tmp, 'b.tgz'), new Date('2024-06-01T12:00:00Z')));
    expect(a.digest).toBe(b.digest);
    expect(a.digest).toBe((await loadChartInfo(dir)).digest);
  });

  it('rejects files that are not gzipped archives', async () => {
    await writeFile(join(tmp, 'chart.tgz'), 'hello');
    const err = await chartError(join(tmp, 'chart.tgz'));
    expect(err.reason).toBe('not-a-chart');
    expect(err.message).toMatch(/^not a chart: .* is neither a chart directory nor a gzipped chart archive/);
  });

  it('rejects an archive without <top>/Chart.yaml', async () => {
    const dir = await writeTree(join(tmp, 'nochart'), { 'values.yaml': 'a: 1\n' });
    const err = await chartError(await pack(dir, join(tmp, 'nochart.tgz')));
    expect(err.reason).toBe('not-a-chart');
    expect(err.message).toContain('has no <top>/Chart.yaml');
  });

  it('rejects an archive with entries outside its directory', async () => {
    const dir = await makeChart();
    await writeFile(join(tmp, 'evil'), 'x');
    const tgz = join(tmp, 'evil.tgz');
    await create({ gzip: true, file: tgz, cwd: dir, preservePaths: true }, ['Chart.yaml', '../evil']);
    const err = await chartError(tgz);
    expect(err.reason).toBe('invalid-content');
    expect(err.message).toContain('has an entry outside its directory: "../evil"');
  });

  it('rejects a corrupt archive', async () => {
    const { gzipSync } = await import('node:zlib');
    await writeFile(join(tmp, 'corrupt.tgz'), gzipSync(Buffer.alloc(1024, 7)));
    const err = await chartError(join(tmp, 'corrupt.tgz'));
    expect(err.reason).toBe('not-a-chart');
  });
});

describe('loadChartInfo: archives with link entries', () => {
  it('loads them: helm reads a link entry of an archive as an empty file and follows nothing', async () => {
    const dir = await makeChart('linked');
    await symlink('/etc/passwd', join(dir, 'templates', 'x.yaml'));
    const tgz = join(tmp, 'linked.tgz');
    await create({ gzip: true, file: tgz, cwd: tmp, portable: true }, ['linked']);
    await expect(loadChartInfo(tgz)).resolves.toMatchObject({ name: 'nginx', format: 'archive' });
  });
});

describe('loadChartInfo: values.schema.json references', () => {
  const schema = (props: Record<string, unknown>, extra: Record<string, unknown> = {}): string =>
    JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: props, ...extra });

  it('lists none for a chart whose schema refers only to itself', async () => {
    const dir = await makeChart('local', {
      'values.schema.json': schema(
        { a: { $ref: '#/definitions/a' }, n: { $ref: 'http://json-schema.org/draft-07/schema#/definitions/nonNegativeInteger' } },
        { definitions: { a: { type: 'string' } }, $schema: 'http://json-schema.org/schema#' },
      ),
    });
    expect(await loadChartInfo(dir)).not.toHaveProperty('schemaRefs');
  });

  it('lists remote, file and relative refs of the chart and of its subcharts, directories and archives', async () => {
    const sub = await writeTree(join(tmp, 'src', 'cache'), {
      'Chart.yaml': 'name: cache\nversion: 1.0.0\n',
      'values.schema.json': schema({ x: { $ref: 'file:///etc/passwd' } }),
    });
    const dir = await makeChart('refs', {
      'values.schema.json': schema({ a: { $ref: 'https://example.com/a.json' }, b: { $ref: 'defs.json#/b' } }),
      'charts/db/Chart.yaml': 'name: db\nversion: 1.0.0\n',
      'charts/db/values.schema.json': schema({}, { $schema: 'http://schemas.example.com/meta' }),
    });
    await pack(sub, join(dir, 'charts', 'cache-1.0.0.tgz'));
    const info = await loadChartInfo(dir);
    expect(info.schemaRefs).toEqual(
      expect.arrayContaining([
        { file: 'values.schema.json', keyword: '$ref', ref: 'https://example.com/a.json' },
        { file: 'values.schema.json', keyword: '$ref', ref: 'defs.json#/b' },
        { file: 'charts/db/values.schema.json', keyword: '$schema', ref: 'http://schemas.example.com/meta' },
        { file: 'charts/cache-1.0.0.tgz:values.schema.json', keyword: '$ref', ref: 'file:///etc/passwd' },
      ]),
    );
    expect(info.schemaRefs).toHaveLength(4);
    // The same from the packaged chart.
    expect((await loadChartInfo(await pack(dir, join(tmp, 'refs.tgz')))).schemaRefs).toHaveLength(4);
  });

  it('lists none for a schema that does not parse (helm reports it at install; it fetches nothing)', async () => {
    const dir = await makeChart('broken', { 'values.schema.json': '{"$ref": "https://x"' });
    expect(await loadChartInfo(dir)).not.toHaveProperty('schemaRefs');
  });
});

describe('loadChartInfo: the CRDs of crds/', () => {
  let tmp: string;
  beforeEach(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'chart-crds-'));
  });
  afterEach(async () => {
    await rm(tmp, { recursive: true, force: true });
  });
  const crd = (name: string): string => `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: ${name}\n`;

  it("reads the chart's, a subchart directory's and a packed subchart's (helm installs all three), nested archives too", async () => {
    const inner = await writeTree(join(tmp, 'src', 'inner'), {
      'Chart.yaml': 'name: inner\nversion: 1.0.0\n',
      'crds/inner.yaml': crd('inners.example.com'),
    });
    const cache = await writeTree(join(tmp, 'src', 'cache'), {
      'Chart.yaml': 'name: cache\nversion: 1.0.0\n',
      'crds/caches.yaml': crd('caches.example.com'),
      // Not a crds/ file of the subchart: a template.
      'templates/crd.yaml': crd('templated.example.com'),
    });
    await mkdir(join(cache, 'charts'), { recursive: true });
    await pack(inner, join(cache, 'charts', 'inner-1.0.0.tgz'));
    const dir = await makeChart('crds', {
      'crds/widgets.yaml': crd('widgets.example.com'),
      'charts/db/Chart.yaml': 'name: db\nversion: 1.0.0\n',
      'charts/db/crds/dbs.yaml': crd('dbs.example.com'),
    });
    await pack(cache, join(dir, 'charts', 'cache-1.0.0.tgz'));
    const files = (info: Awaited<ReturnType<typeof loadChartInfo>>) => (info.crds ?? []).map((c) => [c.file, c.name]);
    const want = [
      ['charts/cache-1.0.0.tgz:charts/inner-1.0.0.tgz:crds/inner.yaml', 'inners.example.com'],
      ['charts/cache-1.0.0.tgz:crds/caches.yaml', 'caches.example.com'],
      ['charts/db/crds/dbs.yaml', 'dbs.example.com'],
      ['crds/widgets.yaml', 'widgets.example.com'],
    ];
    expect(files(await loadChartInfo(dir))).toStrictEqual(want);
    // The same from the packaged chart.
    expect(files(await loadChartInfo(await pack(dir, join(tmp, 'crds.tgz'))))).toStrictEqual(want);
  });
});

describe('digestFiles', () => {
  it('is independent of order and distinguishes path from content boundaries', () => {
    const a = { path: 'a', data: Buffer.from('bc') };
    const b = { path: 'b', data: Buffer.from('') };
    expect(digestFiles([a, b])).toBe(digestFiles([b, a]));
    expect(digestFiles([{ path: 'ab', data: Buffer.from('c') }])).not.toBe(digestFiles([{ path: 'a', data: Buffer.from('bc') }]));
  });
});
