/**
 * Benchmarks against the local test control plane (started if it is not running) and the real
 * helm. Every figure is reported next to a reference measured in the same invocation, as a ratio,
 * so machine speed cancels out.
 *
 *   npm run bench            (or: make bench)
 *   npm run bench -- --compare [...]   (or: make bench-compare): side by side with operator-sdk's
 *                            helm-operator, see bench/compare/main.ts
 *   npm run bench -- --churn [...]     the same CRs deleted and created again, cycle after cycle:
 *                            releases left behind and the operator's memory, see bench/churn.ts
 *   npm run bench -- --fairness [...]  a second tenant's CR while one tenant floods CRs or its hooks
 *                            hang, against an idle operator, see bench/fairness.ts
 *   npm run bench -- --rollout [...]   chart v2 over N CRs at the default rollout policy and all at
 *                            once: time and the API server's peak request rate, see bench/rollout.ts
 *   npm run bench -- --approval-idle [...]  the comparison's scenarios with a watch's `approval`
 *                            never against risky: idle CPU and requests, see bench/approval-idle.ts
 *   npm run bench -- --shards [...]    N CRs over many namespaces converged by 1, 2, 4 sharded replicas
 *                            and by operator-sdk, each under a pod's CPU limit, see bench/shards.ts
 *   npm run bench -- --scale [...]     (or: make bench-scale) steady state at N=10,000 CRs of a light
 *                            chart beside operator-sdk: CPU, API requests, RSS, see bench/scale.ts
 *
 * 1. Drift repair latency: delete the release's Deployment, time until it is back (20 tries);
 *    reference: the API round trip of creating a Deployment ourselves and seeing it in a watch.
 * 2. "Is an upgrade needed?": our decision (release Secrets' metadata + fingerprint) against
 *    operator-sdk's (a `helm upgrade --dry-run` render of the same release), 20 tries each.
 * 3. Drift repair of each kind of hand edit (test/fixtures/charts/drift-zoo, edited with JSON
 *    patches as `kubectl patch` sends them): time until the object is back to the manifest.
 * 4. Idle writes: with a 1 s reconcile period, the release objects written in 10 s of steady
 *    state (resourceVersions before and after), for a chart full of values the API server
 *    defaults or normalises. The target is 0.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  HttpMethod,
  KubeConfig,
  PatchStrategy,
  loadYaml,
  Watch,
  type V1CustomResourceDefinition,
  type V1Deployment,
} from '@kubernetes/client-node';
import { loadChartInfo } from '../src/config/chart.js';
import { loadWatches } from '../src/config/watches.js';
import { HelmClient } from '../src/helm/index.js';
import { ReleaseStorage } from '../src/helm/storage.js';
import { isStatus } from '../src/k8s/errors.js';
import { ObjectClient } from '../src/k8s/objects.js';
import { RawClient, resourcePath } from '../src/k8s/raw-client.js';
import { RestMapper } from '../src/k8s/restmapper.js';
import { parseApiVersion } from '../src/util/group-kind.js';
import { Operator } from '../src/operator/operator.js';
import { determineReleaseState, RELEASE_LABELS } from '../src/reconciler/decide/state.js';
import { fingerprint, mergeValues } from '../src/reconciler/desired/values.js';
import { makeLogger } from '../src/telemetry/logger.js';
import { churn } from './churn.js';
import { approvalIdle } from './approval-idle.js';
import { compare } from './compare/main.js';
import { fairness } from './fairness.js';
import { rollout } from './rollout.js';
import { scale } from './scale.js';
import { shards } from './shards.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const TRIES = 20;

async function hack(script: string, args: string[]): Promise<string> {
  const { stdout } = await run('bash', [path.join(ROOT, 'hack', script), ...args], { cwd: ROOT });
  return stdout.trim();
}

const percentile = (xs: readonly number[], p: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`timed out after ${ms}ms waiting for ${what}`));
    }, ms);
  });
  try {
    return await Promise.race([p, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves with the time an ADDED event for `name` arrives (Deployments in `ns`). */
function watchAdded(kc: KubeConfig, ns: string): { next(name: string, notUid?: string): Promise<number>; stop(): void } {
  const waiters = new Map<string, { notUid?: string; resolve: (t: number) => void }>();
  let req: { abort(): void } | undefined;
  void new Watch(kc)
    .watch(
      `/apis/apps/v1/namespaces/${ns}/deployments`,
      {},
      (type: string, obj: V1Deployment) => {
        const name = obj.metadata?.name ?? '';
        const w = waiters.get(name);
        if (type === 'ADDED' && w !== undefined && obj.metadata?.uid !== w.notUid) {
          waiters.delete(name);
          w.resolve(performance.now());
        }
      },
      () => undefined,
    )
    .then((r) => (req = r));
  return {
    next: (name, notUid) => new Promise((resolve) => waiters.set(name, { ...(notUid === undefined ? {} : { notUid }), resolve })),
    stop: () => req?.abort(),
  };
}

function report(title: string, subject: readonly number[], reference: readonly number[], unit = 'ms'): void {
  const row = (label: string, xs: readonly number[]): string =>
    `  ${label.padEnd(28)} p50 ${percentile(xs, 50).toFixed(1).padStart(8)} ${unit}   p95 ${percentile(xs, 95).toFixed(1).padStart(8)} ${unit}`;
  process.stdout.write(`\n${title}\n${row('subject', subject)}\n${row('reference', reference)}\n`);
  process.stdout.write(
    `  ratio subject/reference      p50 ${(percentile(subject, 50) / percentile(reference, 50)).toFixed(2)}x   p95 ${(percentile(subject, 95) / percentile(reference, 95)).toFixed(2)}x\n`,
  );
}

interface Bench {
  readonly kc: KubeConfig;
  readonly kubeconfig: string;
  readonly helmBin: string;
  readonly ns: string;
  readonly chart: string;
  readonly dir: string;
  readonly spec: Record<string, unknown>;
}

/** Resolves with the reference round trips, which later rows are compared with. */
async function benchDriftRepair(b: Bench): Promise<number[]> {
  const apps = b.kc.makeApiClient(AppsV1Api);
  const watch = watchAdded(b.kc, b.ns);
  try {
    const repair: number[] = [];
    for (let i = 0; i < TRIES; i++) {
      const uid = (await apps.readNamespacedDeployment({ namespace: b.ns, name: 'web-nginx' })).metadata?.uid;
      const back = watch.next('web-nginx', uid);
      const t0 = performance.now();
      await apps.deleteNamespacedDeployment({ namespace: b.ns, name: 'web-nginx' });
      repair.push((await withTimeout(back, 30_000, 'the Deployment to come back')) - t0);
    }
    const reference: number[] = [];
    for (let i = 0; i < TRIES; i++) {
      const name = `ref-${i}`;
      const seen = watch.next(name);
      const t0 = performance.now();
      const labels = { app: name };
      await apps.createNamespacedDeployment({
        namespace: b.ns,
        body: {
          metadata: { name },
          spec: {
            replicas: 0,
            selector: { matchLabels: labels },
            template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
          },
        },
      });
      reference.push((await withTimeout(seen, 30_000, 'the created Deployment in the watch')) - t0);
    }
    report(`Drift repair: delete the release's Deployment until it is back (${TRIES} tries)`, repair, reference);
    process.stdout.write('  (reference: create a Deployment directly and see it in a watch)\n');
    return reference;
  } finally {
    watch.stop();
  }
}

async function benchUpgradeDecision(b: Bench): Promise<void> {
  const storage = new ReleaseStorage(b.kc);
  const digest = (await loadChartInfo(b.chart)).digest;
  const ours: number[] = [];
  for (let i = 0; i < TRIES; i++) {
    const t0 = performance.now();
    const records = await storage.records(b.ns, 'web');
    const fp = fingerprint({ chartDigest: digest, values: mergeValues(b.spec, {}), helmMajor: 4 });
    const state = determineReleaseState(records, { fingerprint: fp, ownerKind: records[0]?.labels[RELEASE_LABELS.ownerKind] ?? '' });
    if (state.kind !== 'InSync') throw new Error(`expected InSync, got ${state.kind}`);
    ours.push(performance.now() - t0);
  }
  const valuesFile = path.join(b.dir, 'values.json');
  await writeFile(valuesFile, JSON.stringify(b.spec));
  const dryRun: number[] = [];
  for (let i = 0; i < TRIES; i++) {
    const t0 = performance.now();
    await run(b.helmBin, ['upgrade', 'web', b.chart, '--namespace', b.ns, '--dry-run', '--values', valuesFile, '--output', 'json'], {
      env: { ...process.env, KUBECONFIG: b.kubeconfig },
      maxBuffer: 64 * 1024 * 1024,
    });
    dryRun.push(performance.now() - t0);
  }
  report(`"Is an upgrade needed?" in the steady state (${TRIES} tries)`, ours, dryRun);
  process.stdout.write("  (subject: release Secrets metadata + fingerprint; reference: operator-sdk's helm upgrade --dry-run render)\n");
}

const ZOO_TRIES = 10;

interface Edit {
  readonly row: string;
  readonly kind: 'Deployment' | 'Service' | 'ConfigMap' | 'ClusterRole';
  /** `kubectl patch --type=json` operations. */
  readonly ops: readonly unknown[];
  /** Whether the live object is back to the manifest. */
  readonly repaired: (obj: unknown) => boolean;
}

/** The value at `path` in arbitrary JSON, or undefined. */
const at = (obj: unknown, ...path: readonly (string | number)[]): unknown =>
  path.reduce<unknown>((o, k) => (typeof o === 'object' && o !== null ? (o as Record<string | number, unknown>)[k] : undefined), obj);
const length = (xs: unknown): number => (Array.isArray(xs) ? xs.length : -1);

const EDITS: readonly Edit[] = [
  {
    row: "Deployment's image changed",
    kind: 'Deployment',
    ops: [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'nginx:evil' }],
    repaired: (d) => at(d, 'spec', 'template', 'spec', 'containers', 0, 'image') === 'nginx:1.27.3',
  },
  {
    row: 'unnamed Service port renumbered',
    kind: 'Service',
    ops: [{ op: 'replace', path: '/spec/ports/0/port', value: 9999 }],
    repaired: (s) => length(at(s, 'spec', 'ports')) === 1 && at(s, 'spec', 'ports', 0, 'port') === 8080,
  },
  {
    row: 'container renamed',
    kind: 'Deployment',
    ops: [{ op: 'replace', path: '/spec/template/spec/containers/0/name', value: 'web' }],
    repaired: (d) =>
      length(at(d, 'spec', 'template', 'spec', 'containers')) === 1 && at(d, 'spec', 'template', 'spec', 'containers', 0, 'name') === 'app',
  },
  {
    row: 'env var removed',
    kind: 'Deployment',
    ops: [{ op: 'remove', path: '/spec/template/spec/containers/0/env/1' }],
    repaired: (d) => length(at(d, 'spec', 'template', 'spec', 'containers', 0, 'env')) === 2,
  },
  {
    row: 'ConfigMap data key changed',
    kind: 'ConfigMap',
    ops: [{ op: 'replace', path: '/data/greeting', value: 'hacked' }],
    repaired: (c) => at(c, 'data', 'greeting') === 'hello',
  },
  {
    row: 'cluster-scoped object edited',
    kind: 'ClusterRole',
    ops: [{ op: 'replace', path: '/rules/0/verbs', value: ['get', 'list', 'delete'] }],
    repaired: (r) => length(at(r, 'rules', 0, 'verbs')) === 2,
  },
];

async function benchDriftEdits(b: Bench, release: string, reference: readonly number[]): Promise<void> {
  const mapper = new RestMapper(b.kc);
  const objects = new ObjectClient(b.kc, mapper);
  const raw = b.kc.makeApiClient(RawClient);
  const refs = {
    Deployment: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: b.ns, name: `${release}-app` },
    Service: { apiVersion: 'v1', kind: 'Service', namespace: b.ns, name: `${release}-svc` },
    ConfigMap: { apiVersion: 'v1', kind: 'ConfigMap', namespace: b.ns, name: `${release}-config` },
    ClusterRole: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', namespace: '', name: `${b.ns}-${release}-zoo` },
  };
  process.stdout.write(
    `\nDrift repair of hand edits, JSON patch as kubectl-patch until repaired (${ZOO_TRIES} tries each; ratio to the reference above)\n`,
  );
  for (const edit of EDITS) {
    const ref = refs[edit.kind];
    const times: number[] = [];
    for (let i = 0; i < ZOO_TRIES; i++) {
      const t0 = performance.now();
      const m = await mapper.mapping({ ...parseApiVersion(ref.apiVersion), kind: ref.kind });
      const at = `${resourcePath({ group: m.group, version: m.version, plural: m.plural, namespace: ref.namespace })}/${ref.name}`;
      await raw.request(HttpMethod.PATCH, at, {
        query: { fieldManager: 'kubectl-patch' },
        body: edit.ops,
        contentType: PatchStrategy.JsonPatch,
      });
      await until(
        `${edit.row} to be repaired`,
        async () => {
          const obj = await objects.get(ref);
          return obj !== undefined && edit.repaired(obj) ? true : undefined;
        },
        30_000,
      );
      times.push(performance.now() - t0);
    }
    const ratio = (p: number): string => (percentile(times, p) / percentile(reference, p)).toFixed(2);
    process.stdout.write(
      `  ${edit.row.padEnd(32)} p50 ${percentile(times, 50).toFixed(1).padStart(7)} ms  p95 ${percentile(times, 95).toFixed(1).padStart(7)} ms   ratio p50 ${ratio(50)}x  p95 ${ratio(95)}x\n`,
    );
  }
}

/** Release objects written during `ms` of steady state: their resourceVersions before and after. */
async function benchIdleWrites(b: Bench, release: string, ms: number): Promise<void> {
  const objects = new ObjectClient(b.kc, new RestMapper(b.kc));
  const refs = [
    { apiVersion: 'apps/v1', kind: 'Deployment', namespace: b.ns, name: `${release}-app` },
    { apiVersion: 'v1', kind: 'Service', namespace: b.ns, name: `${release}-svc` },
    { apiVersion: 'v1', kind: 'ConfigMap', namespace: b.ns, name: `${release}-config` },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', namespace: '', name: `${b.ns}-${release}-zoo` },
  ];
  const versions = async (): Promise<(string | undefined)[]> =>
    Promise.all(refs.map(async (r) => (await objects.get(r))?.metadata?.resourceVersion));
  await new Promise((r) => setTimeout(r, 3_000));
  const before = await versions();
  await new Promise((r) => setTimeout(r, ms));
  const after = await versions();
  const written = before.filter((v, i) => v !== after[i]).length;
  process.stdout.write(
    `\nIdle writes: release objects written in ${ms / 1000} s of steady state, reconcile period 1 s: ${written} of ${refs.length} (target 0)\n`,
  );
}

async function installRelease(b: Bench, operator: Operator): Promise<void> {
  await operator.start(await loadWatches(path.join(b.dir, 'watches.yaml')));
  await createAndWait(b, {
    kind: { group: 'example.com', version: 'v1alpha1', plural: 'nginxes', kind: 'Nginx' },
    name: 'web',
    spec: b.spec,
  });
}

interface NewCR {
  readonly kind: { group: string; version: string; plural: string; kind: string };
  readonly name: string;
  readonly spec: Record<string, unknown>;
  readonly annotations?: Record<string, string>;
}

async function createAndWait(b: Bench, { kind, name, spec, annotations = {} }: NewCR): Promise<void> {
  const custom = b.kc.makeApiClient(CustomObjectsApi);
  const ref = { group: kind.group, version: kind.version, plural: kind.plural, namespace: b.ns };
  await custom.createNamespacedCustomObject({
    ...ref,
    body: { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name, annotations }, spec },
  });
  await until(`${kind.kind} ${name} to be ready`, async () => {
    const cr = (await custom.getNamespacedCustomObject({ ...ref, name })) as {
      status?: { conditions?: { type: string; status: string }[] };
    };
    return cr.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true ? true : undefined;
  });
}

async function main(): Promise<void> {
  const kubeconfig = (await hack('cluster.sh', ['up'])).split('\n').pop() ?? '';
  const tools: Record<string, string> = {};
  for (const m of (await hack('tools.sh', ['env'])).matchAll(/^export (\w+)="([^"]*)"$/gm)) tools[m[1] ?? ''] = m[2] ?? '';
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const crd = loadYaml<V1CustomResourceDefinition>(await readFile(path.join(ROOT, 'config/crd/bases/example.com_nginxes.yaml'), 'utf8'));
  await kc
    .makeApiClient(ApiextensionsV1Api)
    .createCustomResourceDefinition({ body: crd })
    .catch((err: unknown) => {
      if (!isStatus(err, 409)) throw err;
    });
  const ns = `bench-${Date.now().toString(36)}`;
  await core.createNamespace({ body: { metadata: { name: ns } } });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-'));
  const chart = path.join(ROOT, 'helm-charts/nginx');
  const zooCrd: V1CustomResourceDefinition = {
    metadata: { name: 'zoos.bench.example.com' },
    spec: {
      group: 'bench.example.com',
      scope: 'Namespaced',
      names: { kind: 'Zoo', plural: 'zoos', singular: 'zoo', listKind: 'ZooList' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
                status: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
              },
            },
          },
        },
      ],
    },
  };
  await kc
    .makeApiClient(ApiextensionsV1Api)
    .createCustomResourceDefinition({ body: zooCrd })
    .catch((err: unknown) => {
      if (!isStatus(err, 409)) throw err;
    });
  await until('the Zoo CRD to be served', async () => {
    const got = await kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: 'zoos.bench.example.com' });
    return got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true ? true : undefined;
  });
  const zooChart = path.join(ROOT, 'test/fixtures/charts/drift-zoo');
  await writeFile(
    path.join(dir, 'watches.yaml'),
    `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${chart}}\n- {group: bench.example.com, version: v1, kind: Zoo, chart: ${zooChart}}\n`,
  );
  const helmBin = tools.HELM_BIN ?? 'helm';
  const b: Bench = { kc, kubeconfig, helmBin, ns, chart, dir, spec: { replicaCount: 1 } };
  const operator = new Operator({
    kubeConfig: kc,
    helm: new HelmClient({ binary: helmBin, kubeconfig }),
    log: makeLogger({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' }),
    defaultReconcilePeriodMs: 3_600_000,
    // The idle-writes bench resyncs a CR every second through its annotation.
    annotationPeriodFloorMs: 1_000,
    maxConcurrentReconciles: 2,
    namespaces: [ns],
  });
  process.stderr.write(`bench: cluster ${kubeconfig}, namespace ${ns}\n`);
  try {
    await installRelease(b, operator);
    const reference = await benchDriftRepair(b);
    await benchUpgradeDecision(b);
    const zoo = { group: 'bench.example.com', version: 'v1', plural: 'zoos', kind: 'Zoo' };
    await createAndWait(b, { kind: zoo, name: 'edits', spec: {} });
    await benchDriftEdits(b, 'edits', reference);
    await createAndWait(b, { kind: zoo, name: 'idle', spec: {}, annotations: { 'helm.sdk.operatorframework.io/reconcile-period': '1s' } });
    await benchIdleWrites(b, 'idle', 10_000);
  } finally {
    await operator.stop();
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}

const modes = {
  '--compare': compare,
  '--churn': churn,
  '--fairness': fairness,
  '--rollout': rollout,
  '--approval-idle': approvalIdle,
  '--shards': shards,
  '--scale': scale,
} as const;
const mode = Object.entries(modes).find(([flag]) => process.argv.includes(flag))?.[1];
const entry = mode === undefined ? main() : mode(process.argv.slice(2));
entry.then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
