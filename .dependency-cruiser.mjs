// @ts-check
/**
 * The import rules of src/ (docs/adr/0048-import-rules.md), checked by `make lint`
 * (`npm run lint:imports`). Imports point down:
 *
 *   cli -> operator -> reconciler -> {helm, runtime} -> {k8s, config} -> telemetry -> util
 *   cli -> {scaffold -> bundle, olm} -> machinery -> util     (the authoring commands: build time)
 *
 * Each layer lists what it may import besides itself; anything else in src/ is an error named
 * `layer-<layer>`. Inside src/reconciler, its folders have rules of their own (docs/adr/0087):
 * the layers above import its index alone, only core/ runs actions, decide/ calls no port. Build-time
 * code never reaches the runtime or helm's release verbs through any path (`reachable`).
 * test/unit/import-rules.test.ts proves every rule fires on a fixture tree.
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
  scaffold: [
    'bundle',
    'machinery',
    'k8s',
    'config',
    'telemetry',
    'util',
    ...['chart-helm', 'locate', 'errors', 'types'].map((m) => `src/helm/${m}.ts`),
  ],
};

/** The folders of src/reconciler (src/reconciler/index.ts says what each holds). */
export const RECONCILER_FOLDERS = ['core', 'decide', 'actions', 'desired', 'objects', 'drift', 'rollout', 'plan', 'status'];

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
      name: 'reconciler-index-only',
      comment:
        'src/operator and src/cli see the reconciler through src/reconciler/index.ts alone: what it exports is what the layers above may use, and its folders stay free to change',
      severity: 'error',
      from: { path: '^src/(operator|cli)/' },
      to: { path: '^src/reconciler/', pathNot: '^src/reconciler/index\\.ts$' },
    },
    {
      name: 'reconciler-known-folder',
      comment: `every module of src/reconciler sits in one of its folders (${RECONCILER_FOLDERS.join(', ')}; src/reconciler/index.ts says what each holds): add a new folder there and in index.ts`,
      severity: 'error',
      from: { path: '^src/reconciler/', pathNot: `^src/reconciler/(index\\.ts$|(${RECONCILER_FOLDERS.join('|')})/)` },
      to: {},
    },
    {
      name: 'reconciler-actions-from-core',
      comment:
        'only the core runs actions (src/reconciler/core/reconciler.ts picks one through decide/next-action.ts); an action or a decision never runs another action',
      severity: 'error',
      from: { path: '^src/reconciler/', pathNot: '^src/reconciler/(core/|actions/|index\\.ts$)' },
      to: { path: '^src/reconciler/actions/' },
    },
    {
      name: 'reconciler-decisions-call-no-port',
      comment:
        'src/reconciler/decide holds pure decisions over what a reconcile observed: it may name the data a port returns (type-only imports) but imports no port, client, runtime loop or action to call (docs/adr/0073)',
      severity: 'error',
      from: { path: '^src/reconciler/decide/' },
      to: {
        path: ['^src/(k8s|helm|runtime)/', '^src/reconciler/(core|actions)/'],
        pathNot: ['^src/helm/types\\.ts$', '^src/runtime/(reconcile|backoff)\\.ts$', '^src/reconciler/core/outcome\\.ts$'],
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'build-time-never-reaches-the-runtime',
      comment:
        "build-time code (scaffold, bundle, olm, machinery) never reaches the operator's runtime, its reconciler, or helm's release verbs and storage, through any path: a scaffolded project or a bundle must not install, upgrade or uninstall a release",
      severity: 'error',
      from: { path: '^src/(scaffold|bundle|olm|machinery)/' },
      to: {
        path: [
          '^src/(operator|reconciler)/',
          '^src/runtime/',
          '^src/helm/(client|storage|orphans|index)\\.ts$',
          '^src/helm/verbs/(install|upgrade|uninstall|rollback|history|status|server-dry-run|apply-chart)\\.ts$',
        ],
        pathNot: '^src/runtime/backoff\\.ts$',
        reachable: true,
      },
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
