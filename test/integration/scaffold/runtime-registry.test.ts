/**
 * `init` when the npm registry serves this version of the runtime (issue 26, item 1): the project
 * depends on the registry's exact version, vendors nothing, and `npm ci` installs it from the
 * registry. The registry is one on 127.0.0.1 that serves this checkout's `npm pack` tarball as
 * `helm-operator-ts` and hands every other package to the public registry the machine uses.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv, exec, runtimePackage, type RuntimePackage } from '../../support/scaffold.js';

const UPSTREAM = 'https://registry.npmjs.org';

interface Registry {
  readonly url: string;
  /** Paths asked for this package (packument and tarball), in order. */
  readonly served: string[];
  stop(): Promise<void>;
}

/** A registry serving `tarball` as its package, redirecting anything else upstream. */
async function serveRuntime(tarball: string): Promise<Registry> {
  const bytes = await readFile(tarball);
  const manifest = JSON.parse(await exec('tar', ['-xOzf', tarball, 'package/package.json'])) as { name: string; version: string };
  const served: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://registry');
    const file = `/${manifest.name}/-/${manifest.name}-${manifest.version}.tgz`;
    if (url.pathname === `/${manifest.name}` || url.pathname === file) {
      served.push(url.pathname);
      if (url.pathname === file) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(bytes);
        return;
      }
      const dist = {
        tarball: `http://${req.headers.host ?? ''}${file}`,
        integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
        shasum: createHash('sha1').update(bytes).digest('hex'),
      };
      const packument = {
        name: manifest.name,
        'dist-tags': { latest: manifest.version },
        versions: { [manifest.version]: { ...manifest, dist } },
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(packument));
      return;
    }
    res.writeHead(302, { location: `${UPSTREAM}${url.pathname}${url.search}` }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    served,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

let work = '';
let pkg: RuntimePackage;
let registry: Registry | undefined;

beforeAll(async () => {
  pkg = await runtimePackage();
  work = await mkdtemp(path.join(os.tmpdir(), 'runtime-registry-it-'));
  registry = await serveRuntime(pkg.tarball);
}, 600_000);

afterAll(async () => {
  await registry?.stop();
  await rm(work, { recursive: true, force: true });
});

describe('init when the npm registry serves the runtime', () => {
  // A cache of its own: nothing the machine's npm cached for the public registry answers for ours.
  const env = (): NodeJS.ProcessEnv =>
    childEnv({ npm_config_registry: registry?.url ?? '', npm_config_cache: path.join(work, 'npm-cache') });

  it('depends on the registry version, vendors nothing, and npm ci installs it from the registry', async () => {
    const dir = path.join(work, 'project');
    await mkdir(dir);
    const out = await exec(pkg.bin, ['init', '--domain', 'example.com'], { cwd: dir, env: env(), timeoutMs: 300_000 });
    expect(out).toContain(`runtime: ${pkg.version} (the npm registry serves helm-operator-ts@${pkg.version})`);
    const manifest = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(manifest.dependencies['helm-operator-ts']).toBe(pkg.version);
    expect(existsSync(path.join(dir, 'vendor'))).toBe(false);
    const lock = JSON.parse(await readFile(path.join(dir, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string }>;
    };
    expect(lock.packages['node_modules/helm-operator-ts']?.version).toBe(pkg.version);
    expect(registry?.served).toContain(`/helm-operator-ts/-/helm-operator-ts-${pkg.version}.tgz`);

    // A clean install of the committed lockfile, as every make target and the Dockerfile do it.
    await rm(path.join(dir, 'node_modules'), { recursive: true, force: true });
    await exec('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, env: env(), timeoutMs: 300_000 });
    expect(await exec(path.join(dir, 'node_modules/.bin/helm-operator'), ['version'], { cwd: dir, env: env() })).toContain(pkg.version);
    expect(JSON.parse(await readFile(path.join(dir, 'node_modules/helm-operator-ts/package.json'), 'utf8'))).toMatchObject({
      version: pkg.version,
    });
  });
});
