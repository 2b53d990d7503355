import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { redirect, REDIRECTS } from '../../../src/k8s/client-node-hooks.js';

const require = createRequire(import.meta.url);
const slimDir = new URL('../../../src/k8s/client-node-slim/', import.meta.url);

/** Where the operator's graph finds each package whose imports are redirected. */
const clientNodeMain = require.resolve('@kubernetes/client-node');
const socksProxyAgentMain = createRequire(clientNodeMain).resolve('socks-proxy-agent');
const agentBaseMain = createRequire(socksProxyAgentMain).resolve('agent-base');
const PACKAGE_DIRS: Readonly<Record<string, string>> = {
  '@kubernetes/client-node': path.resolve(path.dirname(clientNodeMain), '..'),
  'agent-base': path.resolve(path.dirname(agentBaseMain), '..'),
};

/** The installed file of a REDIRECTS key (`<package>/<path>`). */
function installed(importer: string): string {
  const pkg = Object.keys(PACKAGE_DIRS).find((p) => importer.startsWith(`${p}/`));
  if (pkg === undefined) throw new Error(`no package directory for ${importer}`);
  return path.join(PACKAGE_DIRS[pkg] ?? '', importer.slice(pkg.length + 1));
}

/**
 * What `importer` imports from `specifier`, read from its source: the names of a named import,
 * 'default' for a default import, '*' for a namespace import.
 */
function importedNames(importer: string, specifier: string): string[] {
  const source = readFileSync(installed(importer), 'utf8');
  const escaped = specifier.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const m = new RegExp(`import\\s+(\\{[^}]*\\}|\\*\\s*as\\s+\\w+|\\w+)\\s*from\\s*['"]${escaped}['"]`).exec(source);
  if (m === null) throw new Error(`${importer} no longer imports ${specifier}: review client-node-hooks.ts`);
  const clause = m[1] ?? '';
  if (clause.startsWith('*')) return ['*'];
  if (!clause.startsWith('{')) return ['default'];
  return clause
    .slice(1, -1)
    .split(',')
    .map((n) => n.trim().split(/\s+as\s+/)[0] ?? '')
    .filter((n) => n !== '');
}

/** node:http's exports that load node's bundled undici when read (node-http.ts leaves them out). */
const HTTP_LAZY_UNDICI = ['WebSocket', 'CloseEvent', 'MessageEvent'];

const run = promisify(execFile);

// Its cases import client-node's generated modules and spawn node: under a second each when idle,
// past the 5 s default at load average 40 on 2 cores. The bound only stops a hang.
describe('client-node hooks', { timeout: 60_000 }, () => {
  it.each(Object.entries(REDIRECTS).flatMap(([importer, map]) => Object.entries(map).map(([spec, slim]) => ({ importer, spec, slim }))))(
    'the slim module for $spec in $importer provides every name the package imports from it',
    async ({ importer, spec, slim }) => {
      const names = importedNames(importer, spec);
      expect(names.length).toBeGreaterThan(0);
      const mod = (await import(new URL(`${slim}.ts`, slimDir).href)) as Record<string, unknown>;
      // A namespace import may use any export of the real module.
      const wanted = names[0] === '*' ? Object.keys(require(spec) as object).filter((n) => !HTTP_LAZY_UNDICI.includes(n)) : names;
      for (const name of wanted) expect(mod[name], `${slim} lacks ${name}`).toBeDefined();
    },
  );

  it('the slim node:http is node:http itself, with everything but the exports that load undici', async () => {
    const slim = (await import('../../../src/k8s/client-node-slim/node-http.js')) as Record<string, unknown>;
    const http = require('node:http') as Record<string, unknown>;
    expect(slim.default).toBe(http);
    const exported = Object.keys(http).filter((n) => !HTTP_LAZY_UNDICI.includes(n));
    for (const name of exported) expect(slim[name], `node-http lacks ${name}`).toBe(http[name]);
    expect(Object.keys(slim).sort()).toEqual([...exported, 'default'].sort());
  });

  // A process importing the whole operator under tsx: 4-7 s when idle, a minute or more at load 40
  // (asynchronous: a blocked worker cannot even report its timeout).
  it('the operator loads no copy of undici but the npm one it uses', { timeout: 300_000 }, async () => {
    // A fresh process (tsx for the sources): in this one, vitest has loaded both already.
    const script = [
      `const { trimClientNode } = await import(${JSON.stringify(new URL('../client-node-hooks.ts', slimDir).href)});`,
      'trimClientNode();',
      `await import(${JSON.stringify(new URL('../../cli/run.ts', slimDir).href)});`,
      `console.log(JSON.stringify(process.moduleLoadList.filter((m) => m.includes('undici'))));`,
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(JSON.parse(stdout)).toEqual([]);
  });

  it('redirects only those imports, from those files of the package', () => {
    const parent = (f: string): string => `file:///app/node_modules/@kubernetes/client-node/dist/${f}`;
    expect(redirect('http', 'file:///app/node_modules/socks-proxy-agent/node_modules/agent-base/dist/index.js', slimDir, '.js')).toBe(
      new URL('node-http.js', slimDir).href,
    );
    expect(redirect('node:http', parent('watch.js'), slimDir, '.js')).toBe(new URL('node-http.js', slimDir).href);
    expect(redirect('node:http', 'file:///app/dist/telemetry/health.js', slimDir, '.js')).toBeUndefined();
    expect(redirect('./gen/index.js', parent('config.js'), slimDir, '.js')).toBe(new URL('config-gen.js', slimDir).href);
    expect(redirect('./serializer.js', parent('cache.js'), slimDir, '.ts')).toBe(new URL('cache-serializer.ts', slimDir).href);
    expect(redirect('./gen/index.js', parent('api.js'), slimDir, '.js')).toBeUndefined();
    expect(redirect('./gen/index.js', 'file:///app/src/config.js', slimDir, '.js')).toBeUndefined();
    expect(redirect('./serializer.js', parent('gen/cache.js'), slimDir, '.js')).toBeUndefined();
    expect(redirect('undici', parent('watch.js'), slimDir, '.js')).toBe(new URL('undici.js', slimDir).href);
    expect(redirect('undici', parent('gen/http/isomorphic-fetch.js'), slimDir, '.js')).toBe(new URL('undici.js', slimDir).href);
    expect(redirect('undici', parent('health.js'), slimDir, '.js')).toBeUndefined();
    expect(redirect('undici', 'file:///app/node_modules/other/index.js', slimDir, '.js')).toBeUndefined();
    expect(redirect('undici', undefined, slimDir, '.js')).toBeUndefined();
  });

  it('the slim undici hands out the very classes of the undici client-node resolves', async () => {
    const slim = await import('../../../src/k8s/client-node-slim/undici.js');
    const undici = createRequire(require.resolve('@kubernetes/client-node'))('undici') as Record<string, unknown>;
    expect(slim.Agent).toBe(undici.Agent);
    expect(slim.ProxyAgent).toBe(undici.ProxyAgent);
    const res = await (slim.fetch as typeof fetch)('data:text/plain,ok');
    expect(await res.text()).toBe('ok');
  });

  it("the slim undici alone gives dispatchers the connect that ProxyAgent tunnels with, without undici's index", async () => {
    // A fresh process: in this one, other tests may have loaded undici's index already.
    const script = [
      `await import(${JSON.stringify(new URL('undici.ts', slimDir).href)});`,
      `const { createRequire } = await import('node:module');`,
      `const req = createRequire(${JSON.stringify(require.resolve('@kubernetes/client-node'))});`,
      `const index = req.resolve('undici');`,
      `const dispatcher = req('undici/lib/dispatcher/dispatcher.js');`,
      `console.log(JSON.stringify({ connect: typeof dispatcher.prototype.connect, index: index in req.cache }));`,
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(JSON.parse(stdout)).toEqual({ connect: 'function', index: false });
  });

  it('the slim serializer passes selector strings through and refuses anything else', async () => {
    const { ObjectSerializer } = await import('../../../src/k8s/client-node-slim/cache-serializer.js');
    expect(ObjectSerializer.serialize('app=x,tier!=db', 'string')).toBe('app=x,tier!=db');
    expect(() => ObjectSerializer.serialize({}, 'V1ObjectMeta')).toThrow(/not supported/);
  });
});
