/**
 * The bundled executable the image runs (hack/bundle.ts, docs/adr/0023): built here into a
 * temporary directory, then checked for what it is for. The image test (test/e2e/image.test.ts)
 * runs it against a real control plane.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundle, bundleOptions } from '../../../hack/bundle.js';
import { VERSION } from '../../../src/cli/version.js';

const run = promisify(execFile);

describe('the bundled executable', () => {
  let dir = '';
  let sources: { file: string; text: string }[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'helm-operator-bundle-'));
    await bundle(dir);
    const files = (await readdir(dir)).filter((f) => f.endsWith('.js'));
    sources = await Promise.all(files.map(async (file) => ({ file, text: await readFile(path.join(dir, file), 'utf8') })));
  }, 60_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('runs on its own, with the package version built in', async () => {
    // Copied away from the repository: nothing may resolve from its node_modules/ or package.json.
    const { stdout } = await run(process.execPath, [path.join(dir, 'helm-operator.js'), '--version'], { cwd: os.tmpdir() });
    expect(stdout.trim()).toBe(VERSION);
  });

  it('imports only node builtins and its own chunks', () => {
    const statements = /(?:\bfrom|\bimport\(|^import|;import)\s*"([^"\s+${}]+)"/gm;
    const specifiers = sources.flatMap(({ text }) => [...text.matchAll(statements)].map((m) => m[1] ?? ''));
    expect(specifiers.length).toBeGreaterThan(0);
    const builtins = new Set(builtinModules);
    expect(specifiers.filter((s) => !builtins.has(s.replace(/^node:/, '')) && !/^\.\/[\w.-]+\.js$/.test(s))).toEqual([]);
  });

  it('is ASCII only: one other character makes V8 keep a whole chunk as two-byte text', () => {
    const nonAscii = /[\u0080-\u{10ffff}]/u;
    for (const { file, text } of sources) expect(nonAscii.exec(text)?.[0], file).toBeUndefined();
  });

  it("leaves out client-node's generated index and undici's index, as the CLI's module hooks do", async () => {
    const { metafile } = await build({ ...bundleOptions(path.join(dir, 'unused')), metafile: true, write: false });
    const inputs = Object.keys(metafile.inputs);
    expect(inputs).toContainEqual(expect.stringMatching(/node_modules\/@kubernetes\/client-node\/dist\/config\.js$/));
    expect(inputs).toContainEqual(expect.stringMatching(/node_modules\/undici\/lib\/dispatcher\/agent\.js$/));
    expect(inputs.filter((f) => /client-node\/dist\/gen\/index\.js$|node_modules\/undici\/index\.js$/.test(f))).toEqual([]);
  });
});
