/**
 * The bundled executable the image runs (hack/bundle.ts, docs/adr/0023): the build the process
 * tests start (test/support/operator-bundle.ts: built once per content, cached), copied here into a
 * temporary directory, then checked for what it is for. The image test (test/real-node/image.suite.ts)
 * runs it in-cluster on a real node.
 */
import { execFile, spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VERSION } from '../../../src/cli/version.js';
import { bundleKey, ensureOperatorBundle } from '../../support/operator-bundle.js';

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
  let metafile: Metafile | undefined;

  beforeAll(async () => {
    const built = await ensureOperatorBundle();
    metafile = JSON.parse(await readFile(built.metafile, 'utf8')) as Metafile;
    // Away from the repository and the cache: nothing may resolve from a node_modules/ above it.
    dir = await mkdtemp(path.join(os.tmpdir(), 'helm-operator-bundle-'));
    await cp(built.dir, dir, { recursive: true });
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
      // Until the line, or the process ends without it; the test's timeout only stops a hang (the
      // first line took over 10 s at load average 40 on 2 cores).
      await new Promise<void>((resolve, reject) => {
        const take = (chunk: Buffer): void => {
          out += chunk.toString();
          if (out.includes('helm command finished')) resolve();
        };
        child.stdout.on('data', take);
        child.stderr.on('data', take);
        child.on('exit', (code, signal) => {
          reject(new Error(`exited (${String(code ?? signal)}) before the line; it wrote: ${out}`));
        });
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

  it("leaves out client-node's generated index and undici's index, as the CLI's module hooks do", () => {
    const inputs = Object.keys(metafile?.inputs ?? {});
    expect(inputs).toContainEqual(expect.stringMatching(/node_modules\/@kubernetes\/client-node\/dist\/config\.js$/));
    expect(inputs).toContainEqual(expect.stringMatching(/node_modules\/undici\/lib\/dispatcher\/agent\.js$/));
    expect(inputs.filter((f) => /client-node\/dist\/gen\/index\.js$|node_modules\/undici\/index\.js$/.test(f))).toEqual([]);
  });
});

describe("the process tests' bundle cache (test/support/operator-bundle.ts)", () => {
  let tree = '';
  const write = async (file: string, text: string): Promise<void> => {
    await mkdir(path.dirname(path.join(tree, file)), { recursive: true });
    await writeFile(path.join(tree, file), text);
  };

  beforeAll(async () => {
    tree = await mkdtemp(path.join(os.tmpdir(), 'helm-operator-bundle-key-'));
    for (const f of ['hack/bundle.ts', 'package.json', 'package-lock.json', 'tsconfig.json']) await write(f, '{}');
    await write('src/cli/program.ts', 'export const a = 1;\n');
  });
  afterAll(async () => {
    await rm(tree, { recursive: true, force: true });
  });

  it('keys a build on every input: a changed, added or renamed source, or a changed lockfile, is a new key', async () => {
    const keys = [await bundleKey(tree)];
    await write('src/cli/program.ts', 'export const a = 2;\n');
    keys.push(await bundleKey(tree));
    await write('src/k8s/new.ts', 'export {};\n');
    keys.push(await bundleKey(tree));
    await rename(path.join(tree, 'src/k8s/new.ts'), path.join(tree, 'src/k8s/renamed.ts'));
    keys.push(await bundleKey(tree));
    await write('package-lock.json', '{"lockfileVersion": 3}');
    keys.push(await bundleKey(tree));
    expect(new Set(keys).size).toBe(keys.length);
    // Unchanged: the same key, so a warm run reuses the build.
    expect(await bundleKey(tree)).toBe(keys.at(-1));
  });
});
