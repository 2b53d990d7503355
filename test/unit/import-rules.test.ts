/**
 * The import rules of .dependency-cruiser.mjs (docs/adr/0048-import-rules.md) fire: a fixture tree
 * with one allowed and one forbidden import per layer is cruised with the real configuration, and
 * exactly the forbidden ones are reported, each under its rule. A rule weakened in the config (a
 * layer allowed more, the cycle check dropped) leaves a violation unreported and fails here.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseConfig from 'dependency-cruiser/config-utl/extract-depcruise-config';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CONFIG = path.resolve(import.meta.dirname, '../../.dependency-cruiser.mjs');

/** Fixture modules: path under the fixture root → what it imports. */
const TREE: Record<string, readonly string[]> = {
  'src/util/plain.ts': ['node:path'],
  'src/util/up.ts': ['../telemetry/log.js'],
  'src/telemetry/log.ts': ['../util/plain.js'],
  'src/telemetry/up.ts': ['../helm/run.js', '../runtime/queue.js'],
  'src/k8s/api.ts': ['../telemetry/log.js'],
  'src/k8s/up.ts': ['../config/watches.js'],
  'src/k8s/cycle-a.ts': ['type ./cycle-b.js'],
  'src/k8s/cycle-b.ts': ['type ./cycle-a.js'],
  'src/config/watches.ts': ['../util/plain.js'],
  'src/config/reload.ts': ['../runtime/backoff.js'],
  'src/config/up.ts': ['../runtime/queue.js'],
  'src/helm/index.ts': ['../k8s/api.js', './verbs/upgrade.js'],
  'src/helm/chart-helm.ts': ['./run.js'],
  // An allowed entry point of scaffold's that reaches a release verb (the reachable rule).
  'src/helm/errors.ts': ['./verbs/upgrade.js'],
  'src/helm/verbs/upgrade.ts': ['../run.js'],
  'src/helm/run.ts': ['../telemetry/log.js'],
  'src/helm/storage.ts': ['../k8s/api.js'],
  'src/helm/up.ts': ['../runtime/queue.js', '../config/watches.js'],
  'src/runtime/backoff.ts': [],
  'src/runtime/queue.ts': ['../k8s/api.js', './backoff.js'],
  'src/runtime/up.ts': ['../helm/run.js'],
  'src/reconciler/index.ts': ['./core/reconcile.js'],
  'src/reconciler/core/reconcile.ts': [
    '../../helm/index.js',
    '../../runtime/queue.js',
    '../../config/watches.js',
    '../../k8s/api.js',
    '../actions/install.js',
    '../decide/pure.js',
  ],
  'src/reconciler/core/up.ts': ['../../operator/operator.js'],
  'src/reconciler/core/calls-up.ts': ['../../runtime/controller.js', '../../runtime/requeue-source.js'],
  'src/reconciler/core/ports.ts': ['../../k8s/api.js'],
  'src/reconciler/actions/install.ts': ['../core/ports.js', '../decide/pure.js'],
  'src/reconciler/decide/pure.ts': ['type ../core/ports.js', '../status/status.js', '../../runtime/backoff.js'],
  'src/reconciler/decide/calls.ts': ['../core/ports.js', '../../k8s/api.js', '../actions/install.js'],
  'src/reconciler/status/status.ts': [],
  'src/reconciler/rollout/runs-action.ts': ['../actions/install.js'],
  'src/reconciler/loose.ts': ['./status/status.js'],
  'src/runtime/controller.ts': ['./queue.js'],
  'src/runtime/requeue-source.ts': [],
  'src/operator/operator.ts': ['../reconciler/index.js'],
  'src/operator/inside.ts': ['../reconciler/core/reconcile.js'],
  'src/operator/up.ts': ['../scaffold/init.js'],
  'src/cli/main.ts': ['../operator/operator.js', '../scaffold/init.js', '../olm/install.js', '../reconciler/index.js'],
  'src/cli/up.ts': ['../extras/stray.js'],
  'src/machinery/plan.ts': ['../util/plain.js'],
  'src/machinery/up.ts': ['../scaffold/init.js'],
  'src/bundle/csv.ts': ['../machinery/plan.js'],
  'src/bundle/up.ts': ['../scaffold/init.js'],
  'src/olm/install.ts': ['../k8s/api.js', '../config/watches.js'],
  'src/olm/up.ts': ['../runtime/queue.js'],
  'src/scaffold/init.ts': ['../bundle/csv.js', '../machinery/plan.js', '../helm/chart-helm.js', '../k8s/api.js'],
  'src/scaffold/up.ts': ['../reconciler/index.js', '../helm/storage.js'],
  'src/scaffold/through.ts': ['../helm/errors.js'],
  'src/extras/stray.ts': ['../util/plain.js'],
};

/** Exactly what the rules must report: rule, from, to. */
const FORBIDDEN = [
  'build-time-never-reaches-the-runtime: src/olm/up.ts → src/runtime/queue.ts',
  'build-time-never-reaches-the-runtime: src/scaffold/through.ts → src/helm/verbs/upgrade.ts',
  'build-time-never-reaches-the-runtime: src/scaffold/up.ts → src/helm/index.ts',
  'build-time-never-reaches-the-runtime: src/scaffold/up.ts → src/helm/storage.ts',
  'build-time-never-reaches-the-runtime: src/scaffold/up.ts → src/helm/verbs/upgrade.ts',
  'build-time-never-reaches-the-runtime: src/scaffold/up.ts → src/reconciler/actions/install.ts',
  'build-time-never-reaches-the-runtime: src/scaffold/up.ts → src/reconciler/core/ports.ts',
  'build-time-never-reaches-the-runtime: src/scaffold/up.ts → src/reconciler/core/reconcile.ts',
  'build-time-never-reaches-the-runtime: src/scaffold/up.ts → src/reconciler/decide/pure.ts',
  'build-time-never-reaches-the-runtime: src/scaffold/up.ts → src/reconciler/index.ts',
  'build-time-never-reaches-the-runtime: src/scaffold/up.ts → src/reconciler/status/status.ts',
  'build-time-never-reaches-the-runtime: src/scaffold/up.ts → src/runtime/queue.ts',
  'known-layer: src/extras/stray.ts → src/util/plain.ts',
  'layer-bundle: src/bundle/up.ts → src/scaffold/init.ts',
  'layer-cli: src/cli/up.ts → src/extras/stray.ts',
  'layer-config: src/config/up.ts → src/runtime/queue.ts',
  'layer-helm: src/helm/up.ts → src/config/watches.ts',
  'layer-helm: src/helm/up.ts → src/runtime/queue.ts',
  'layer-k8s: src/k8s/up.ts → src/config/watches.ts',
  'layer-machinery: src/machinery/up.ts → src/scaffold/init.ts',
  'layer-olm: src/olm/up.ts → src/runtime/queue.ts',
  'layer-operator: src/operator/up.ts → src/scaffold/init.ts',
  'layer-reconciler: src/reconciler/core/up.ts → src/operator/operator.ts',
  'layer-runtime: src/runtime/up.ts → src/helm/run.ts',
  'layer-scaffold: src/scaffold/up.ts → src/helm/storage.ts',
  'layer-scaffold: src/scaffold/up.ts → src/reconciler/index.ts',
  'layer-telemetry: src/telemetry/up.ts → src/helm/run.ts',
  'layer-telemetry: src/telemetry/up.ts → src/runtime/queue.ts',
  'layer-util: src/util/up.ts → src/telemetry/log.ts',
  // A cycle is reported once, at the import that closes it.
  'no-circular: src/k8s/cycle-a.ts → src/k8s/cycle-b.ts',
  // A decision may name a port's types, never import one to call it, nor an action, nor a client.
  'reconciler-actions-from-core: src/reconciler/decide/calls.ts → src/reconciler/actions/install.ts',
  'reconciler-actions-from-core: src/reconciler/rollout/runs-action.ts → src/reconciler/actions/install.ts',
  'reconciler-decisions-call-no-port: src/reconciler/decide/calls.ts → src/k8s/api.ts',
  'reconciler-decisions-call-no-port: src/reconciler/decide/calls.ts → src/reconciler/actions/install.ts',
  'reconciler-decisions-call-no-port: src/reconciler/decide/calls.ts → src/reconciler/core/ports.ts',
  'reconciler-index-only: src/operator/inside.ts → src/reconciler/core/reconcile.ts',
  'reconciler-known-folder: src/reconciler/loose.ts → src/reconciler/status/status.ts',
  // The reconciler may take the request source's ports, never the controller itself.
  'reconciler-not-controller: src/reconciler/core/calls-up.ts → src/runtime/controller.ts',
  'util-imports-nothing: src/util/up.ts → src/telemetry/log.ts',
];

const importLine = (spec: string): string =>
  spec.startsWith('type ') ? `import type * as _${spec.length} from '${spec.slice(5)}';` : `import '${spec}';`;

let root = '';
let ruleNames: string[] = [];
let reported: string[] = [];

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'import-rules-'));
  for (const [file, imports] of Object.entries(TREE)) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), [...imports.map(importLine), 'export const here = 1;', ''].join('\n'));
  }
  const config = await extractDepcruiseConfig(CONFIG);
  ruleNames = (config.forbidden ?? []).map((r) => r.name ?? '');
  const { output } = await cruise(['src'], {
    validate: true,
    ruleSet: { forbidden: config.forbidden ?? [] },
    baseDir: root,
    tsPreCompilationDeps: true,
  });
  reported = (output as ICruiseResult).summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort();
}, 60_000);

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('the import rules (.dependency-cruiser.mjs)', () => {
  it('report exactly the forbidden imports of the fixture tree, each under its rule', () => {
    expect(reported).toEqual(FORBIDDEN);
  });

  it('each rule of the configuration fires on the fixture tree (a new rule needs a fixture)', () => {
    const fired = new Set(reported.map((r) => r.slice(0, r.indexOf(':'))));
    expect(ruleNames.filter((name) => !fired.has(name))).toEqual([]);
  });
});
