import { enableCompileCache } from 'node:module';
import path from 'node:path';
import { defineConfig } from 'vitest/config';
import { toolCacheDir } from './test/support/tool-cache.js';

/**
 * Node's on-disk compile cache (Node 22+: V8 code cache per file content) for every node process of
 * a run: this one from here on, and through the environment each vitest worker and every operator,
 * CLI or tsx process the tests start. A worker otherwise compiles vitest's runtime and
 * @kubernetes/client-node's ~1,000 modules anew for each isolated file (docs/development.md, "Where
 * the CPU goes"). Keyed by file content and Node version: a changed file is compiled again.
 */
process.env.NODE_COMPILE_CACHE ??= path.join(toolCacheDir(), 'node-compile-cache');
enableCompileCache(process.env.NODE_COMPILE_CACHE);

/**
 * Integration files that cannot share the control plane with other files running at the same time
 * (docs/development.md, "Which files run alone"): they count the API server's cluster-wide requests,
 * restart or reshape the cluster, delete a CRD others use, or load the machine enough to slow every
 * file beside them. They run after the parallel files, one at a time, dev-scripts first and the
 * deploy (which deletes and reinstalls the sample CRD) last.
 */
const SERIAL_INTEGRATION = [
  'test/integration/cluster/dev-scripts.test.ts',
  'test/integration/cluster/kwok-scope.test.ts',
  'test/integration/operator/requests-per-release.test.ts',
  'test/integration/operator/rollout-requests.test.ts',
  'test/integration/operator/measure-requests.test.ts',
  'test/integration/production/leader-election.test.ts',
  'test/integration/operator/fairness.test.ts',
  'test/e2e/deploy.test.ts',
];

/**
 * The project-in-a-box path: this checkout packed and installed as a user installs it (`npm pack`,
 * `npm ci`), projects scaffolded from every kind of chart source and driven through their own make
 * (run, deploy, bundle, OLM's validators). It is a third of the integration tier's CPU, so it runs
 * with the tutorial in `make test-tutorial` (CI's tier after `make test`), not in `make test`.
 */
const SCAFFOLD_E2E = [
  'test/integration/scaffold/scaffold.test.ts',
  'test/integration/scaffold/chart-repository.test.ts',
  'test/integration/scaffold/runtime-registry.test.ts',
];

/**
 * The chaos files that run alone (after the others, which run two at a time): control-plane stops
 * and kills the API server and etcd under every file beside it; sharding's verdict bounds how long a
 * share stays ownerless by its Lease timings, which the CPU of a file beside it would stretch
 * (docs/chaos.md: replicas starved at load ~22 missed their renewals).
 */
const CHAOS_ALONE = ['test/chaos/control-plane.test.ts', 'test/chaos/sharding.test.ts'];

/** The chaos tier's own control plane (test/chaos/global-setup.ts: both chaos projects share one start). */
const chaos = { globalSetup: ['test/chaos/global-setup.ts'], testTimeout: 300_000, hookTimeout: 180_000 };

/** A shared control plane, the real helm, and each file's own temporary directory (test/support/worker-tmpdir.ts). */
const integration = {
  globalSetup: ['test/support/global-setup.ts'],
  setupFiles: ['test/support/worker-tmpdir.ts'],
  testTimeout: 120_000,
  hookTimeout: 180_000,
};

export default defineConfig({
  test: {
    reporters: ['default', './test/support/plain-summary-reporter.ts'],
    coverage: { provider: 'v8', include: ['src/**/*.ts'], reporter: ['text', 'json-summary'] },
    projects: [
      {
        extends: true,
        // CPU-bound: first and alone, on both cores. Projects of one groupOrder run together, in order.
        // Not isolated: a worker imports the shared modules once, not once per file (about 1.9 CPU-s
        // a file, two thirds of the tier's CPU; docs/development.md "Where the CPU goes"). No unit
        // file mocks a module; the few that set environment variables restore them, and the one that
        // needs a module cache of its own (client-node-hooks' undici index) spawns a fresh process.
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          isolate: false,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          exclude: [...SERIAL_INTEGRATION, ...SCAFFOLD_E2E],
          ...integration,
          // Files keep to their own namespaces, kinds and cluster-scoped names, and mostly wait on the
          // API server and helm: three at a time on the shared control plane.
          maxWorkers: 3,
          // A worker runs its files one after another in one module graph, as the unit tier does: an
          // isolated file paid about 0.9 CPU-s of its own for a fresh worker and the imports of
          // client-node and the operator (docs/development.md, "Where the CPU goes"). No file mocks a
          // module; those that set an environment variable remove it; each file's TMPDIR is its own.
          isolate: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          // The middle tier (docs/adr/0077): reconcilers with their real ports, no controller or
          // operator process; cases run concurrently inside a file, each in its own namespace.
          // In the integration files' group, on the same control plane (vitest wants one maxWorkers per group).
          name: 'middle',
          include: ['test/middle/**/*.test.ts'],
          ...integration,
          // A file's cases run at once (five at a time): on a loaded 2-core machine one that takes
          // 50 s alone waits its turn for CPU beside the others (12 lifecycle cases timed out at 120 s at load 40).
          testTimeout: 300_000,
          maxWorkers: 3,
          isolate: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-serial',
          include: SERIAL_INTEGRATION,
          ...integration,
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
      {
        // `make test-olm` (in CI): OLM built from source, its operators as local processes (kwok's nodes
        // run no containers), on its own control plane; tier.test.ts orders the suites around one install.
        extends: true,
        test: {
          name: 'olm',
          include: ['test/olm/tier.test.ts'],
          globalSetup: ['test/support/olm-global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 1_800_000,
          fileParallelism: false,
        },
      },
      {
        // In CI after chaos (`make test-sharded-apiserver`): KEP-5866's server-side sharded list and watch, on a
        // kube-apiserver with the gate on (its own control plane; docs/adr/0103).
        extends: true,
        test: {
          name: 'sharded-apiserver',
          include: ['test/sharded-apiserver/**/*.test.ts'],
          globalSetup: ['test/support/sharded-global-setup.ts'],
          setupFiles: ['test/support/worker-tmpdir.ts'],
          testTimeout: 120_000,
          hookTimeout: 1_800_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          // The README's operator-author tutorial from the npm package, on the scaffolded project's own
          // control plane (`make test-tutorial`): each step one test, in order.
          name: 'tutorial',
          include: ['test/tutorial/**/*.test.ts'],
          testTimeout: 600_000,
          hookTimeout: 600_000,
          // With the scaffold end-to-end files (one group, one maxWorkers): two files at a time.
          maxWorkers: 2,
        },
      },
      {
        extends: true,
        // With the tutorial, in `make test-tutorial`, two files at a time on the integration tier's
        // control plane (the tutorial has its own): they ran side by side in the integration project
        // (each its own namespaces and TMPDIR; one `npm pack`, under a lock, test/support/scaffold.ts),
        // and each waits on make, npm and the API server for much of its time.
        test: { name: 'scaffold-e2e', include: SCAFFOLD_E2E, ...integration, maxWorkers: 2 },
      },
      {
        extends: true,
        test: {
          // Fault injection on its own control plane: `make test-chaos`. Each file keeps to its own
          // namespaces and operator processes and judges only its own releases (support/verdict.ts),
          // so they run two at a time; CHAOS_ALONE after them.
          name: 'chaos',
          // The unit tier's seeded fuzzers run here too, so the report counts every fuzzed input.
          include: ['test/chaos/**/*.test.ts', 'test/unit/fuzz/**/*.test.ts'],
          exclude: CHAOS_ALONE,
          ...chaos,
          maxWorkers: 2,
          sequence: { groupOrder: 10 },
        },
      },
      {
        extends: true,
        // The chaos files that cannot share the control plane (CHAOS_ALONE): one at a time, after the others.
        test: { name: 'chaos-alone', include: CHAOS_ALONE, ...chaos, fileParallelism: false, maxWorkers: 1, sequence: { groupOrder: 11 } },
      },
      {
        extends: true,
        test: {
          // A hostile tenant's attacks on the operator process, on their own control plane
          // (`make test-redteam`): prints "N attacks, N held" (docs/redteam.md).
          name: 'redteam',
          include: ['test/redteam/**/*.test.ts'],
          globalSetup: ['test/redteam/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 240_000,
          // Two files at a time: the tier mostly waits (rollouts' stableFor, hooks that never end;
          // about 100 CPU-s in 8 minutes alone). Each file has its own tenants, namespaces, operator
          // process and attacker user (support/tenancy.ts), and judges only what those hold.
          maxWorkers: 2,
        },
      },
      {
        extends: true,
        test: {
          // Root: a control plane with a real node (kubelet + containerd): the tutorial's deploy path,
          // the image, leader election, rolling update, OOM kill on it (`make test-real-node`;
          // docs/real-node.md). Its own cluster: one real node per machine. tier.test.ts orders the suites.
          name: 'real-node',
          include: ['test/real-node/**/*.test.ts'],
          globalSetup: ['test/real-node/global-setup.ts'],
          testTimeout: 600_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
