import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    reporters: ['default', './test/support/plain-summary-reporter.ts'],
    coverage: { provider: 'v8', include: ['src/**/*.ts'], reporter: ['text', 'json-summary'] },
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // One shared control plane: files run one after another.
          fileParallelism: false,
        },
      },
      {
        // Opt-in (`make test-olm`): OLM built from source and run against its own control plane.
        extends: true,
        test: {
          name: 'olm',
          include: ['test/olm/**/*.test.ts'],
          globalSetup: ['test/support/olm-global-setup.ts'],
          testTimeout: 300_000,
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
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          // Fault injection on its own control plane (it stops the apiserver and etcd): `make test-chaos`.
          name: 'chaos',
          // The unit tier's seeded fuzzers run here too, so the report counts every fuzzed input.
          include: ['test/chaos/**/*.test.ts', 'test/unit/fuzz/**/*.test.ts'],
          globalSetup: ['test/chaos/global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
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
          fileParallelism: false,
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
