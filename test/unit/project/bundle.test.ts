/**
 * The bundled executable the image runs (hack/bundle.ts, docs/adr/0023): built here into a
 * temporary directory, then checked for what it is for. The image test (test/real-node/image.suite.ts)
 * runs it in-cluster on a real node.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundle, bundleOptions } from '../../../hack/bundle.js';
import { VERSION } from '../../../src/cli/version.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../../..');
/** A cluster nobody serves: the operator starts, logs, and fails to reach it. */
const UNREACHABLE_KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`;

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

  // Each spawns node on the bundle: seconds when idle, tens of seconds on a loaded machine.
  it('runs on its own, with the package version built in', { timeout: 60_000 }, async () => {
    // Copied away from the repository: nothing may resolve from its node_modules/ or package.json.
    const { stdout } = await run(process.execPath, [path.join(dir, 'helm-operator.js'), '--version'], { cwd: os.tmpdir() });
    expect(stdout.trim()).toBe(VERSION);
  });

  it('writes human-readable logs with --zap-devel (pino-pretty in this thread: no worker files needed)', { timeout: 60_000 }, async () => {
    const kubeconfig = path.join(dir, 'unreachable.kubeconfig');
    await writeFile(kubeconfig, UNREACHABLE_KUBECONFIG);
    const args = [
      'run',
      '--zap-devel',
      '--kubeconfig',
      kubeconfig,
      '--watches-file',
      'watches.yaml',
      '--metrics-bind-address',
      '0',
      '--health-probe-bind-address',
      '0',
      '--helm-binary',
      '/nonexistent/helm',
    ];
    const child = spawn(process.execPath, [path.join(dir, 'helm-operator.js'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(new Error(`no log line within 10 s; so far: ${out}`));
        }, 10_000);
        const take = (chunk: Buffer): void => {
          out += chunk.toString();
          if (!out.includes('helm command finished')) return;
          clearTimeout(timer);
          resolve();
        };
        child.stdout.on('data', take);
        child.stderr.on('data', take);
      });
    } finally {
      child.kill('SIGKILL');
    }
    expect(out).toMatch(/^\[[\d:.]+\] .*DEBUG.*: .*helm command finished/m);
    expect(out).not.toContain('{"level"');
  });

  it('imports only node builtins and its own chunks', () => {
    // `from` after `}` or a space, as in a statement: a string such as "values-from" followed by `,X="` is not one.
    const statements = /(?:(?<=[}\s])from|\bimport\(|^import|;import)\s*"([^"\s+${}]+)"/gm;
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
