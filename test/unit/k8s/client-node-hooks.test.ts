import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { redirect, REDIRECTS } from '../../../src/k8s/client-node-hooks.js';

const require = createRequire(import.meta.url);
const dist = path.dirname(require.resolve('@kubernetes/client-node'));
const slimDir = new URL('../../../src/k8s/client-node-slim/', import.meta.url);

/** The names `file` (in client-node's dist/) imports from `specifier`, read from its source. */
function importedNames(file: string, specifier: string): string[] {
  const source = readFileSync(path.join(dist, file), 'utf8');
  const escaped = specifier.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const m = new RegExp(`import\\s*\\{([^}]*)\\}\\s*from\\s*['"]${escaped}['"]`).exec(source);
  if (m === null) throw new Error(`${file} no longer imports ${specifier}: review client-node-hooks.ts`);
  return (m[1] ?? '').split(',').map((n) => n.trim().split(/\s+as\s+/)[0] ?? '').filter((n) => n !== '');
}

describe('client-node hooks', () => {
  it.each(Object.entries(REDIRECTS).flatMap(([file, map]) => Object.entries(map).map(([spec, slim]) => ({ file, spec, slim }))))(
    'the slim module for $spec in $file provides every name the package imports from it',
    async ({ file, spec, slim }) => {
      const names = importedNames(file, spec);
      expect(names.length).toBeGreaterThan(0);
      const mod = (await import(new URL(`${slim}.ts`, slimDir).href)) as Record<string, unknown>;
      for (const name of names) expect(mod[name], `${slim} lacks ${name}`).toBeDefined();
    },
  );

  it('redirects only those imports, from those files of the package', () => {
    const parent = (f: string): string => `file:///app/node_modules/@kubernetes/client-node/dist/${f}`;
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

  it('the slim undici alone gives dispatchers the connect that ProxyAgent tunnels with, without undici\'s index', () => {
    // A fresh process: in this one, other tests may have loaded undici's index already.
    const script = [
      `await import(${JSON.stringify(new URL('undici.ts', slimDir).href)});`,
      `const { createRequire } = await import('node:module');`,
      `const req = createRequire(${JSON.stringify(require.resolve('@kubernetes/client-node'))});`,
      `const index = req.resolve('undici');`,
      `const dispatcher = req('undici/lib/dispatcher/dispatcher.js');`,
      `console.log(JSON.stringify({ connect: typeof dispatcher.prototype.connect, index: index in req.cache }));`,
    ].join('\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ connect: 'function', index: false });
  });

  it('the slim serializer passes selector strings through and refuses anything else', async () => {
    const { ObjectSerializer } = await import('../../../src/k8s/client-node-slim/cache-serializer.js');
    expect(ObjectSerializer.serialize('app=x,tier!=db', 'string')).toBe('app=x,tier!=db');
    expect(() => ObjectSerializer.serialize({}, 'V1ObjectMeta')).toThrow(/not supported/);
  });
});
