import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { initProject, type InitEffects } from '../../../src/scaffold/init-project.js';
import { chooseRuntimeSource, classifyRegistryAnswer, vendoredFile } from '../../../src/scaffold/runtime-source.js';

const pkg = { name: 'helm-operator-ts', version: '0.1.0' };

describe('where a scaffolded project gets the runtime', () => {
  it('uses the registry only when it serves this exact version', () => {
    expect(chooseRuntimeSource(pkg, 'served')).toMatchObject({ kind: 'registry', dependency: '0.1.0' });
    expect(chooseRuntimeSource(pkg, 'not-found')).toMatchObject({
      kind: 'vendored',
      dependency: 'file:vendor/helm-operator-ts-0.1.0.tgz',
      file: 'vendor/helm-operator-ts-0.1.0.tgz',
      reason: expect.stringMatching(/does not serve helm-operator-ts@0\.1\.0/) as string,
    });
    expect(chooseRuntimeSource(pkg, 'unreachable').reason).toMatch(/did not answer/);
  });

  it("names the tarball as npm pack does, a scope's @ and / folded", () => {
    expect(vendoredFile('@acme/helm-operator-ts', '1.2.3')).toBe('vendor/acme-helm-operator-ts-1.2.3.tgz');
  });

  it("reads npm view's answer: a version, E404, or anything else", () => {
    expect(classifyRegistryAnswer({ exitCode: 0, stdout: '0.1.0\n', stderr: '' }, '0.1.0')).toBe('served');
    expect(classifyRegistryAnswer({ exitCode: 1, stdout: '', stderr: 'npm error code E404\nnpm error 404 Not Found' }, '0.1.0')).toBe(
      'not-found',
    );
    // A served package without that version: npm view prints nothing and exits 0.
    expect(classifyRegistryAnswer({ exitCode: 0, stdout: '', stderr: '' }, '0.1.0')).toBe('not-found');
    expect(classifyRegistryAnswer({ exitCode: 1, stdout: '', stderr: 'npm error code ENOTFOUND' }, '0.1.0')).toBe('unreachable');
    expect(classifyRegistryAnswer({ exitCode: undefined, stdout: '', stderr: '' }, '0.1.0')).toBe('unreachable');
  });
});

describe('initProject', () => {
  const runtime = { runtimePackage: pkg.name, runtimeVersion: pkg.version, nodeVersion: '24.21.0', packageRoot: '/pkg' };

  async function init(answer: 'served' | 'not-found', dryRun = false): Promise<{ dir: string; calls: string[] }> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'init-source-'));
    const calls: string[] = [];
    const effects: InitEffects = {
      probe: () => Promise.resolve(answer),
      vendor: (root, project, file) => {
        calls.push(`vendor ${root} ${path.relative(dir, project) || '.'} ${file}`);
        return Promise.resolve();
      },
      install: (project) => {
        calls.push(`install ${path.relative(dir, project) || '.'}`);
        return Promise.resolve();
      },
    };
    await initProject({ root: dir, domain: 'example.com', projectName: 'demo', dryRun }, runtime, effects);
    return { dir, calls };
  }

  it('vendors this package and then installs when the registry does not serve it', async () => {
    const { dir, calls } = await init('not-found');
    try {
      expect(calls).toEqual(['vendor /pkg . vendor/helm-operator-ts-0.1.0.tgz', 'install .']);
      expect(JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8'))).toMatchObject({
        dependencies: { 'helm-operator-ts': 'file:vendor/helm-operator-ts-0.1.0.tgz' },
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('depends on the registry version and vendors nothing when the registry serves it', async () => {
    const { dir, calls } = await init('served');
    try {
      expect(calls).toEqual(['install .']);
      expect(JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8'))).toMatchObject({
        dependencies: { 'helm-operator-ts': '0.1.0' },
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('--dry-run neither vendors nor installs', async () => {
    const { dir, calls } = await init('not-found', true);
    try {
      expect(calls).toEqual([]);
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
