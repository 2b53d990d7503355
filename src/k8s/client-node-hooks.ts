/**
 * Module resolution hooks that keep client-node's generated API and model index, and most of
 * undici, out of the operator process (see client-node.ts). Two of the package's own files import
 * the generated index for one or two names: `config.js` (KubeConfig) wants `createConfiguration`
 * and `ServerConfiguration` from `./gen/index.js`, and `cache.js` (ListWatch) wants
 * `ObjectSerializer` from `./serializer.js` only to pass label and field selector strings through
 * unchanged. `config.js`, `watch.js` and the generated clients' `isomorphic-fetch.js` want
 * `Agent`, `ProxyAgent` and `fetch` from `undici`, whose index loads the whole package. And any
 * ES module import of `node:http` loads node's own bundled undici too (see
 * client-node-slim/node-http.ts). The hooks send exactly those imports to small modules that
 * provide the same names (client-node-slim/); every other import, and the index itself when
 * something asks for it, resolves as usual.
 *
 * Registered by the CLI entry point before anything imports client-node (static imports are all
 * resolved before any module runs, so the registration and the rest of the program are two steps).
 * Library users who do not register them get the whole package, and the same behaviour.
 */
import { registerHooks } from 'node:module';

/**
 * importer (its path under node_modules/) → specifier → the slim module in client-node-slim/ (no
 * extension). agent-base is client-node's too: config.js → socks-proxy-agent → agent-base.
 */
export const REDIRECTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  '@kubernetes/client-node/dist/config.js': { './gen/index.js': 'config-gen', undici: 'undici', 'node:http': 'node-http' },
  '@kubernetes/client-node/dist/cache.js': { './serializer.js': 'cache-serializer' },
  '@kubernetes/client-node/dist/watch.js': { undici: 'undici', 'node:http': 'node-http' },
  '@kubernetes/client-node/dist/gen/http/isomorphic-fetch.js': { undici: 'undici' },
  'agent-base/dist/index.js': { http: 'node-http' },
  'agent-base/dist/helpers.js': { http: 'node-http' },
};

const NODE_MODULES = '/node_modules/';

/**
 * Pure: the slim module's URL for `specifier` imported from `parentURL`, or undefined to resolve as
 * usual. `ext` is this module's own extension: `.js` compiled, `.ts` under tsx (tests).
 */
export function redirect(specifier: string, parentURL: string | undefined, slimDir: URL, ext: string): string | undefined {
  if (parentURL === undefined) return undefined;
  const at = parentURL.lastIndexOf(NODE_MODULES);
  if (at < 0) return undefined;
  const target = REDIRECTS[parentURL.slice(at + NODE_MODULES.length)]?.[specifier];
  return target === undefined ? undefined : new URL(`${target}${ext}`, slimDir).href;
}

let registered = false;

/** Idempotent. */
export function trimClientNode(): void {
  if (registered) return;
  registered = true;
  const slimDir = new URL('./client-node-slim/', import.meta.url);
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  registerHooks({
    resolve(specifier, context, next) {
      const url = redirect(specifier, context.parentURL, slimDir, ext);
      return url === undefined ? next(specifier, context) : { url, shortCircuit: true };
    },
  });
}
