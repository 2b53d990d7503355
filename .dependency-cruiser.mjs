// @ts-check
/**
 * The import rules of src/ (docs/adr/0048-import-rules.md), checked by `make lint`
 * (`npm run lint:imports`). Imports point down:
 *
 *   cli -> operator -> reconciler -> {helm, runtime} -> {k8s, config} -> telemetry -> util
 *   cli -> {scaffold -> bundle, olm} -> machinery -> util     (the authoring commands: build time)
 *
 * Each layer lists what it may import besides itself; anything else in src/ is an error named
 * `layer-<layer>`. test/unit/import-rules.test.ts proves every rule fires on a fixture tree.
 */

/** @type {Record<string, readonly string[]>} */
export const LAYERS = {
  // Small pure helpers any layer may use; a leaf (see util-imports-nothing).
  util: [],
  telemetry: ['util'],
  // The API client: the bottom of the operator's layers.
  k8s: ['telemetry', 'util'],
  // watches.yaml and charts as data. reload.ts retries with the runtime's backoff (a leaf module; the
  // clock is util's): the one sideways import, because reload is the runtime loop that lives in config.
  config: ['telemetry', 'util', 'src/runtime/backoff.ts'],
  // helm's release storage reads Secrets through the API client; helm never imports the runtime.
  helm: ['k8s', 'telemetry', 'util'],
  // Informers and leases call the API; the runtime never runs helm.
  runtime: ['k8s', 'telemetry', 'util'],
  reconciler: ['helm', 'runtime', 'k8s', 'config', 'telemetry', 'util'],
  operator: ['reconciler', 'helm', 'runtime', 'k8s', 'config', 'telemetry', 'util'],
  cli: ['operator', 'reconciler', 'helm', 'runtime', 'k8s', 'config', 'telemetry', 'util', 'scaffold', 'bundle', 'olm', 'machinery'],

  // Build time: never the operator, the reconciler, the runtime or helm's runtime parts.
  machinery: ['util'],
  bundle: ['machinery', 'util'],
  olm: ['k8s', 'config', 'telemetry', 'util'],
  // scaffold runs helm (pull, template, dependency build) through helm's entry point, as the operator
  // does; helm's release storage, process table and verbs' internals stay the operator's.
  // chart-helm.ts: the port helm's split per verb gives scaffold (issue 34 item 3).
  scaffold: ['bundle', 'machinery', 'k8s', 'config', 'telemetry', 'util', ...['index', 'chart-helm', 'locate', 'errors', 'types'].map((m) => `src/helm/${m}.ts`)],
};

const escape = (/** @type {string} */ s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A layer name is its directory; a path with a `/` is that one file. */
const target = (/** @type {string} */ t) => (t.includes('/') ? `^${escape(t)}$` : `^src/${t}/`);
const list = (/** @type {readonly string[]} */ may) => (may.length === 0 ? 'nothing else in src' : may.join(', '));

/** @type {import('dependency-cruiser').IForbiddenRuleType[]} */
const layerRules = Object.entries(LAYERS).map(([layer, may]) => ({
  name: `layer-${layer}`,
  comment: `src/${layer} may import only ${list(may)}: imports point down (docs/adr/0048-import-rules.md)`,
  severity: 'error',
  from: { path: `^src/${layer}/` },
  to: { path: '^src/', pathNot: [`^src/${layer}/`, ...may.map(target)] },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    ...layerRules,
    {
      name: 'no-circular',
      comment: 'no import cycles in src, type-only imports included: move the shared part into a module both import',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'reconciler-not-controller',
      comment:
        'src/reconciler never calls up into its controller (docs/adr/0073): it is handed its request, the cached object, a read-only cache and a request source (runtime/reconcile.ts, runtime/requeue-source.ts), never the controller, its queue or the manager',
      severity: 'error',
      from: { path: '^src/reconciler/' },
      to: { path: '^src/runtime/(controller|controller-set|manager|workqueue|fair-queue)\\.ts$' },
    },
    {
      name: 'util-imports-nothing',
      comment: 'src/util is a leaf every layer may import: it imports no module, package or other util (node: builtins only)',
      severity: 'error',
      from: { path: '^src/util/' },
      to: { dependencyTypesNot: ['core'] },
    },
    {
      name: 'known-layer',
      comment: `every directory of src is a layer of .dependency-cruiser.mjs (${Object.keys(LAYERS).join(', ')}): add a new one there with what it may import`,
      severity: 'error',
      from: { path: '^src/', pathNot: `^src/(${Object.keys(LAYERS).join('|')})/` },
      to: {},
    },
  ],
  options: {
    // Type-only imports count: a type is as much a dependency of the code that names it.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.d\\.ts$' },
  },
};
