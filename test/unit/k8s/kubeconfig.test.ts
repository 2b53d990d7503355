/**
 * A kubeconfig that cannot be used is a one-line KubeConfigError naming the file (the CLI prints it
 * without a stack). Permission denied is covered where it happens, by running the image as uid
 * 1001 (test/real-node/image.suite.ts): these tests run as root, which reads any file.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfigError, loadKubeConfig } from '../../../src/k8s/kubeconfig.js';

describe('loadKubeConfig', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'kubeconfig-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const failure = (file: string): KubeConfigError => {
    try {
      loadKubeConfig(file);
    } catch (err) {
      if (err instanceof KubeConfigError) return err;
      throw err;
    }
    throw new Error('loadKubeConfig did not fail');
  };

  it('names a missing file', () => {
    const file = path.join(dir, 'missing.yaml');
    expect(failure(file).message).toBe(`cannot load the kubeconfig ${file}: no such file (ENOENT)`);
  });

  it('names a directory given as the file', () => {
    expect(failure(dir).message).toBe(`cannot load the kubeconfig ${dir}: it is a directory (EISDIR)`);
  });

  it('names a file that is not a kubeconfig, in one line', async () => {
    const file = path.join(dir, 'bad.yaml');
    await writeFile(file, 'clusters: [\n');
    const err = failure(file);
    expect(err.message).toMatch(new RegExp(`^cannot load the kubeconfig ${file}: \\S`));
    expect(err.message).not.toContain('\n');
  });

  it('refuses a kubeconfig without a server instead of falling back to localhost:8080', async () => {
    const file = path.join(dir, 'empty.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');
    expect(failure(file).message).toMatch(/^no Kubernetes configuration found/);
  });
});
