/**
 * Bundles the operator executable for the image: `npm run bundle [-- <outdir>]` writes
 * <outdir>/helm-operator.js (default dist/bundle/), one ES module with every dependency in it, plus
 * chunks for the commands the CLI loads on demand. Why: docs/adr/0023-bundled-executable.md (one
 * module instead of ~575 files: ~8 MiB less RSS at start, and no node_modules/ in the image).
 *
 * What the CLI entry point does with module hooks (src/k8s/client-node-hooks.ts) is done here at
 * build time, from the same table: client-node's imports of its generated index, of undici and of
 * node:http go to the slim modules of src/k8s/client-node-slim/.
 */
import { readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild';
import { REDIRECTS } from '../src/k8s/client-node-hooks.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const SLIM_DIR = path.join(ROOT, 'src/k8s/client-node-slim');
const NODE_MODULES = '/node_modules/';
/** client-node's own directory: its undici is the one the slim module must take its parts from. */
const CLIENT_NODE_DIR = path.dirname(createRequire(import.meta.url).resolve('@kubernetes/client-node/package.json'));

/**
 * src/k8s/client-node-slim/undici.ts finds client-node's undici at run time, which a bundle cannot
 * do; this is the same module with static imports, resolved from client-node's directory.
 */
const SLIM_UNDICI = `
import dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import api from 'undici/lib/api/index.js';
import Agent from 'undici/lib/dispatcher/agent.js';
import ProxyAgent from 'undici/lib/dispatcher/proxy-agent.js';
import fetchModule from 'undici/lib/web/fetch/index.js';
Object.assign(dispatcher.prototype, api);
export { Agent, ProxyAgent };
export const fetch = fetchModule.fetch;
`;

const slimClientNode: Plugin = {
  name: 'slim-client-node',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      const at = args.importer.lastIndexOf(NODE_MODULES);
      if (at < 0) return undefined;
      const target = REDIRECTS[args.importer.slice(at + NODE_MODULES.length)]?.[args.path];
      if (target === undefined) return undefined;
      if (target === 'undici') return { path: 'slim-undici', namespace: 'slim' };
      return { path: path.join(SLIM_DIR, `${target}.ts`) };
    });
    b.onLoad({ filter: /.*/, namespace: 'slim' }, () => ({ contents: SLIM_UNDICI, loader: 'js', resolveDir: CLIENT_NODE_DIR }));
  },
};

export function bundleOptions(outdir: string): BuildOptions {
  const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  return {
    entryPoints: { 'helm-operator': path.join(ROOT, 'src/cli/program.ts') },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node24',
    // Whitespace and syntax only: names stay, so stack traces and error names read as in the source.
    minifyWhitespace: true,
    minifySyntax: true,
    // Licence comments go to <chunk>.LEGAL.txt beside each chunk. In the code, one non-ASCII letter
    // of one (a name) made V8 hold the whole 1.4 MB chunk as a two-byte string: 1.3 MiB more RSS.
    legalComments: 'external',
    define: { HELM_OPERATOR_VERSION: JSON.stringify(version) },
    // Optional native add-ons of chokidar and ws, loaded only where they are installed.
    external: ['fsevents', 'bufferutil', 'utf-8-validate'],
    // The CommonJS dependencies' require() of node's builtins, from an ES module.
    banner: {
      js: "import { createRequire as __helmOperatorRequire } from 'node:module'; const require = __helmOperatorRequire(import.meta.url);",
    },
    plugins: [slimClientNode],
    logLevel: 'warning',
  };
}

/** Writes the bundle to `outdir` and returns what went into it (the tests read the metafile). */
export async function bundle(outdir: string): Promise<Metafile> {
  // Chunk names carry content hashes: those of an earlier build would stay behind.
  rmSync(outdir, { recursive: true, force: true });
  return (await build({ ...bundleOptions(outdir), metafile: true })).metafile;
}

if (path.resolve(process.argv[1] ?? '') === import.meta.filename)
  await bundle(path.resolve(process.argv[2] ?? path.join(ROOT, 'dist/bundle')));
