import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../../..');

interface Outcome {
  code: number;
  output: string;
}

async function hack(script: string, args: string[], env: NodeJS.ProcessEnv): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run('bash', [path.join(ROOT, 'hack', script), ...args], {
      env: { ...process.env, ...env },
      timeout: 120_000,
    });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** The bootstrap scripts fail fast and say what is wrong; they never hang or half-finish. */
describe('tool bootstrap and cluster scripts', () => {
  let cache = '';
  beforeAll(async () => {
    cache = await mkdtemp(path.join(os.tmpdir(), 'tools-cache-'));
  });
  afterAll(async () => {
    await rm(cache, { recursive: true, force: true });
  });

  it('rebuilds a half-built component instead of trusting it', async () => {
    const versions = await readFile(path.join(ROOT, 'hack/versions.env'), 'utf8');
    const nodeVersion = /^NODE_VERSION=(.+)$/m.exec(versions)?.[1] ?? '';
    const dir = path.join(cache, `node-v${nodeVersion}`);
    await mkdir(path.join(dir, 'bin'), { recursive: true });
    await writeFile(path.join(dir, 'bin', 'node'), 'truncated');
    const out = await hack('tools.sh', ['node'], { HELM_OPERATOR_CACHE_DIR: cache });
    expect(out.code).toBe(0);
    expect(out.output).toContain(`${dir} is incomplete (interrupted build?); rebuilding it`);
    const { stdout } = await run(path.join(dir, 'bin', 'node'), ['--version']);
    expect(stdout.trim()).toBe(`v${nodeVersion}`);
  });

  it('names the component whose build failed and exits non-zero', async () => {
    const versions = (await readFile(path.join(ROOT, 'hack/versions.env'), 'utf8')).replace(
      /^NODE_VERSION=.*$/m,
      'NODE_VERSION=0.0.0-no-such-version',
    );
    const file = path.join(cache, 'versions.env');
    await writeFile(file, versions);
    const out = await hack('tools.sh', ['node'], { HELM_OPERATOR_CACHE_DIR: cache, TOOLS_VERSIONS_FILE: file });
    expect(out.code).not.toBe(0);
    expect(out.output).toMatch(
      /error: component 'node' failed to build \(exit \d+\) after \d+s; full log: .*node-v0\.0\.0-no-such-version\.log/,
    );
  });

  it('refuses a port that is already in use', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const out = await hack('cluster.sh', ['up', '--name', 'port-in-use', '--port', String(port)], {});
      expect(out.code).not.toBe(0);
      expect(out.output).toContain(`port ${port} on 127.0.0.1 is already in use`);
    } finally {
      server.close();
    }
  });

  it('rejects a bad cluster name before doing anything', async () => {
    const out = await hack('cluster.sh', ['up', '--name', 'Not_Valid'], {});
    expect(out.code).not.toBe(0);
    expect(out.output).toContain("cluster name 'Not_Valid' must be a DNS label");
  });
});
