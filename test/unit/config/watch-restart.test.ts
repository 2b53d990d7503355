/**
 * A reload restarts a kind's controller only for a change of a field classified `restart`, and
 * every field a parsed watch has is classified: a field added to `Watch` and produced by the
 * parser fails here until it is.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_ROLLOUT } from '../../../src/config/rollout-policy.js';
import type { Watch } from '../../../src/config/watch.js';
import { restartingChanges, WATCH_FIELD_CHANGES } from '../../../src/config/watch-restart.js';
import { parseWatches } from '../../../src/config/watches.js';
import { FIELDS, type FieldName } from '../../../src/config/watches-schema.js';

/** Every key of a watches.yaml entry set, each to a value other than its default. */
const EVERY_KEY: Record<FieldName, string> = {
  group: 'example.com',
  version: 'v1alpha1',
  kind: 'App',
  chart: 'helm-charts/app',
  watchDependentResources: 'false',
  adoptReleases: 'true',
  overrideValues: '{ image.tag: "1.2" }',
  sensitiveValues: '[auth.password]',
  selector: '{ matchLabels: { tier: web } }',
  reconcilePeriod: '1m',
  maxConcurrentReconciles: '2',
  dryRunOption: 'server',
  serviceAccountName: 'deployer',
  confineToNamespace: 'true',
  allowClusterScoped: '[ClusterRole.rbac.authorization.k8s.io]',
  allowKinds: '[ConfigMap, ClusterRole.rbac.authorization.k8s.io]',
  allowSchemaRefs: 'true',
  rollout: '{ canary: 2, waveSize: "10%" }',
  driftIgnore: '[{ paths: [/spec/replicas] }]',
  allowDriftIgnoreAnnotation: 'true',
  conflictPolicy: 'fail',
  crds: 'CreateReplace',
  healthChecks: '[{ apiVersion: example.com/v1, kind: Thing, current: "status.ready == true" }]',
  test: '{ enable: true }',
  approval: 'risky',
  approvedBy: 'cr',
};

describe('WATCH_FIELD_CHANGES', () => {
  let tmp: string;

  beforeEach(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'watch-restart-'));
    await mkdir(join(tmp, 'helm-charts', 'app', 'templates'), { recursive: true });
    await writeFile(join(tmp, 'helm-charts', 'app', 'Chart.yaml'), 'apiVersion: v2\nname: app\nversion: 0.1.0\n');
  });

  afterEach(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  it('classifies every field of a watch parsed from an entry that sets every key', async () => {
    expect(Object.keys(EVERY_KEY).sort()).toEqual([...FIELDS].sort());
    const text = Object.entries(EVERY_KEY)
      .map(([key, value], i) => `${i === 0 ? '-' : ' '} ${key}: ${value}`)
      .join('\n');
    const [watch] = await parseWatches(`${text}\n`, { file: 'watches.yaml', env: {}, baseDir: tmp });
    const unclassified = Object.keys(watch ?? {}).filter((field) => !Object.hasOwn(WATCH_FIELD_CHANGES, field));
    expect(unclassified).toEqual([]);
  });

  it('restarts for a change of any field but where the entry sits in the file', () => {
    const ignored = Object.entries(WATCH_FIELD_CHANGES).filter(([, change]) => change === 'ignore');
    expect(ignored.map(([field]) => field)).toEqual(['source']);
  });
});

const chart = { path: '/charts/app', format: 'directory', name: 'app', version: '0.1.0', digest: 'sha256:aa' } as const;

/** A watch with every field set, and one whose every field differs from it. */
const RUNNING: Required<Watch> = {
  group: 'example.com',
  version: 'v1alpha1',
  kind: 'App',
  chart: { ...chart, appVersion: '1.0', schemaRefs: [] },
  watchDependentResources: true,
  adoptReleases: true,
  overrideValues: { a: '1', 'a.b': '2' },
  selector: { matchLabels: { tier: 'web' } },
  labelSelector: 'tier=web',
  reconcilePeriodMs: 60_000,
  maxConcurrentReconciles: 1,
  dryRunOption: 'client',
  serviceAccountName: 'deployer',
  confineToNamespace: false,
  allowClusterScoped: [],
  allowKinds: ['ConfigMap'],
  sensitiveValues: [],
  allowSchemaRefs: false,
  rollout: DEFAULT_ROLLOUT,
  driftIgnore: [{ paths: ['/spec/replicas'] }],
  allowDriftIgnoreAnnotation: false,
  conflictPolicy: 'force',
  crds: 'Create',
  healthChecks: [{ apiVersion: 'example.com/v1', kind: 'Thing', current: 'status.ready == true' }],
  test: { enable: true, ignoreFailures: false },
  approval: 'risky',
  approvedBy: 'cr',
  source: { file: 'watches.yaml', index: 0, line: 1 },
};
const OTHER: Required<Watch> = {
  group: 'other.example.com',
  version: 'v1',
  kind: 'Other',
  chart: { ...chart, digest: 'sha256:bb' },
  watchDependentResources: false,
  adoptReleases: false,
  overrideValues: { 'a.b': '2', a: '1' },
  selector: { matchLabels: { tier: 'db' } },
  labelSelector: 'tier=db',
  reconcilePeriodMs: 120_000,
  maxConcurrentReconciles: 2,
  dryRunOption: 'server',
  serviceAccountName: 'other',
  confineToNamespace: true,
  allowClusterScoped: ['ClusterRole.rbac.authorization.k8s.io'],
  allowKinds: ['Secret'],
  sensitiveValues: ['auth.password'],
  allowSchemaRefs: true,
  rollout: { ...DEFAULT_ROLLOUT, canary: { count: 0 } },
  driftIgnore: [{ paths: ['/spec/replicas'], target: { kind: 'Deployment' } }],
  allowDriftIgnoreAnnotation: true,
  conflictPolicy: 'fail',
  crds: 'CreateReplace',
  healthChecks: [{ apiVersion: 'example.com/v1', kind: 'Thing', current: 'status.ready == true', failed: 'status.failed == true' }],
  test: { enable: true, ignoreFailures: true, timeoutMs: 60_000 },
  approval: 'always',
  approvedBy: 'platform',
  source: { file: 'watches.yaml', index: 3, line: 12 },
};

describe('restartingChanges', () => {
  it('keeps a controller whose watch is unchanged (a fresh parse of the same entry)', () => {
    expect(restartingChanges(RUNNING, structuredClone(RUNNING))).toEqual([]);
  });

  it.each(Object.keys(RUNNING) as (keyof Watch)[])('a change of %s alone restarts exactly when it is classified so', (field) => {
    const next: Watch = { ...RUNNING, [field]: OTHER[field] };
    expect(restartingChanges(RUNNING, next)).toEqual(WATCH_FIELD_CHANGES[field] === 'restart' ? [field] : []);
  });

  it('restarts when an optional field appears or goes', () => {
    const { adoptReleases: _a, serviceAccountName: _s, ...without } = RUNNING;
    expect(restartingChanges(without, RUNNING)).toEqual(['adoptReleases', 'serviceAccountName']);
    expect(restartingChanges(RUNNING, without)).toEqual(['adoptReleases', 'serviceAccountName']);
  });

  it('restarts when only overrideValues are reordered: a later path may overwrite part of an earlier one', () => {
    expect(restartingChanges(RUNNING, { ...RUNNING, overrideValues: { 'a.b': '2', a: '1' } })).toEqual(['overrideValues']);
  });

  it('restarts when only the chart content changed (its digest)', () => {
    expect(restartingChanges(RUNNING, { ...RUNNING, chart: { ...RUNNING.chart, digest: 'sha256:cc' } })).toEqual(['chart']);
  });
});
