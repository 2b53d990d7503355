/**
 * `create api` and symbolic links in the chart it copies. helm follows links when it loads a chart
 * directory, so a link out of the chart would have copied a file of the user's machine into the
 * project (and `helm template` read it); links inside it were dropped without a word. Now a link
 * inside is copied as the file helm reads, one out of the chart (or a link entry of a .tgz, which
 * helm reads as an empty file) is refused naming it, and nothing of the project is written.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile, lstat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create } from 'tar';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ChartHelm } from '../../../src/helm/chart-helm.js';
import { ChartSourceError } from '../../../src/scaffold/chart-source.js';
import { createApi } from '../../../src/scaffold/create-api.js';
import { initProject } from '../../../src/scaffold/init-project.js';
import { scaffoldLibrary } from '../../../src/scaffold/library.js';
import { runtimeIdentity } from '../../../src/scaffold/runtime-identity.js';

const PASSWD_LINE = async (): Promise<string> => (await readFile('/etc/passwd', 'utf8')).split('\n')[0] ?? '';

describe('create api: symbolic links in the chart', () => {
  let work: string;
  let root: string;

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'chart-links-'));
    root = path.join(work, 'project');
    await mkdir(root);
    // The runtime is neither fetched nor installed: only what create api writes is under test.
    await initProject({ root, domain: 'example.com', projectName: 'links' }, runtimeIdentity(), {
      probe: () => Promise.resolve('served'),
      vendor: () => Promise.resolve(),
      install: () => Promise.resolve(),
    });
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  /** A chart reading `files/` into a ConfigMap, as a chart exposing `.Files.Get` does. */
  async function chart(name: string): Promise<string> {
    const dir = path.join(work, 'src', name);
    await mkdir(path.join(dir, 'templates'), { recursive: true });
    await mkdir(path.join(dir, 'files'));
    await writeFile(path.join(dir, 'Chart.yaml'), `apiVersion: v2\nname: ${name}\nversion: 0.1.0\n`);
    await writeFile(path.join(dir, 'values.yaml'), 'greeting: hello\n');
    await writeFile(
      path.join(dir, 'templates', 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n{{ (.Files.Glob "files/*").AsConfig | indent 2 }}\n',
    );
    await writeFile(path.join(dir, 'files', 'shared.conf'), 'shared: true\n');
    return dir;
  }

  const api = (kind: string, helmChart: string) =>
    createApi(
      { root, group: 'links', version: 'v1', kind, helmChart },
      { helm: new ChartHelm({ binary: inject('helmBin'), tmpDir: work }), library: scaffoldLibrary },
    );

  /** Every file the project holds, read whole: none may carry the host's /etc/passwd. */
  async function projectText(): Promise<string> {
    const entries = await readdir(root, { recursive: true, withFileTypes: true });
    const texts = await Promise.all(entries.filter((e) => e.isFile()).map((e) => readFile(path.join(e.parentPath, e.name), 'utf8')));
    return texts.join('\n');
  }

  it('refuses a files/ entry linked to /etc/passwd, naming it and its target, and writes nothing', async () => {
    const dir = await chart('leaky');
    await symlink('/etc/passwd', path.join(dir, 'files', 'passwd'));
    const err = await api('Leaky', dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChartSourceError);
    expect((err as Error).message).toContain(
      `chart ${dir}: "files/passwd" is a symbolic link to "/etc/passwd", which resolves outside the chart directory`,
    );
    await expect(lstat(path.join(root, 'helm-charts', 'leaky'))).rejects.toThrow(/ENOENT/);
    expect(await projectText()).not.toContain(await PASSWD_LINE());
  });

  it('refuses a subchart directory linked from outside the chart', async () => {
    const dir = await chart('borrower');
    const outside = await chart('common');
    await mkdir(path.join(dir, 'charts'));
    await symlink(outside, path.join(dir, 'charts', 'common'));
    await expect(api('Borrower', dir)).rejects.toThrow(
      `"charts/common" is a symbolic link to ${JSON.stringify(outside)}, which resolves outside the chart directory`,
    );
    await expect(lstat(path.join(root, 'helm-charts', 'borrower'))).rejects.toThrow(/ENOENT/);
  });

  it('refuses a .tgz holding a link entry (helm would install it as an empty file)', async () => {
    const dir = await chart('packed');
    await symlink('/etc/passwd', path.join(dir, 'files', 'passwd'));
    const tgz = path.join(work, 'packed-0.1.0.tgz');
    await create({ gzip: true, file: tgz, cwd: path.dirname(dir), portable: true }, ['packed']);
    await expect(api('Packed', tgz)).rejects.toThrow(
      `chart archive ${tgz}: "packed/files/passwd" is a symbolic link to "/etc/passwd", which helm installs as an empty file`,
    );
    expect(await projectText()).not.toContain(await PASSWD_LINE());
  });

  it('copies a link inside the chart as the file helm reads through it (it used to be dropped)', async () => {
    const dir = await chart('aliased');
    await symlink('shared.conf', path.join(dir, 'files', 'alias.conf'));
    await api('Aliased', dir);
    const copied = path.join(root, 'helm-charts', 'aliased', 'files', 'alias.conf');
    expect((await lstat(copied)).isFile()).toBe(true);
    expect(await readFile(copied, 'utf8')).toBe('shared: true\n');
  });
});
