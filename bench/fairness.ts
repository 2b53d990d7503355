/**
 * Fair to tenants (issue 32 item 6, ADR 0041): how long a second tenant's trivial CR takes to be
 * deployed while one tenant floods N CRs, and while four of its installs hang on a post-install
 * hook that never completes, next to the same CR's time on an idle operator in the same invocation.
 * Target: within 3x of idle.
 *
 *   npm run bench -- --fairness [--n 500] [--tries 3] [--workers <cores>]
 *
 * Each scenario runs its own operator (in-process, real helm, the default per-namespace share)
 * watching only its two namespaces, so one scenario's leftovers do not load the next. The chart is
 * test/fixtures/charts/hanging-hook: a ConfigMap, plus with `hang: true` a hook Job whose pod no node
 * takes, so helm waits on it until its 5-minute timeout. A victim CR is created only once the
 * previous one is deployed; each row also says how much of the flood was still waiting then.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { ApiextensionsV1Api, BatchV1Api, HttpMethod, KubeConfig, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { loadWatches } from '../src/config/watches.js';
import { HelmClient } from '../src/helm/index.js';
import { isStatus } from '../src/k8s/errors.js';
import { RawClient, resourcePath } from '../src/k8s/raw-client.js';
import { Operator } from '../src/operator/operator.js';
import { mapBounded } from '../src/runtime/bounded.js';
import { namespaceShare } from '../src/runtime/controller.js';
import { Informer } from '../src/runtime/informer.js';
import { makeLogger } from '../src/telemetry/logger.js';
import { isDeployed } from './compare/cluster.js';
import { positive } from './compare/main.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const TENANT = { group: 'bench.example.com', version: 'v1', plural: 'tenants', kind: 'Tenant' } as const;
const CHART = path.join(ROOT, 'test/fixtures/charts/hanging-hook');
const HANGS = 4;
const VICTIM_TIMEOUT_MS = 240_000;

const say = (msg: string): void => {
  process.stderr.write(`[bench-fairness ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

interface Setup {
  readonly kc: KubeConfig;
  readonly kubeconfig: string;
  readonly helmBin: string;
  readonly workers: number;
  readonly dir: string;
}

interface Row {
  readonly scenario: string;
  readonly ms: readonly number[];
  /** Per try: the noisy tenant's CRs not yet deployed when the victim was. */
  readonly backlog?: readonly number[];
}

/** Deployed CRs of one namespace, through a watch; `deployed(name)` resolves when that CR is. */
class DeployedWatch {
  readonly #informer: Informer;
  readonly #waiters = new Map<string, (t: number) => void>();

  constructor(kc: KubeConfig, namespace: string) {
    this.#informer = new Informer(kc, { resource: { ...TENANT, namespace } });
    const seen = (obj: KubernetesObject): void => {
      const name = obj.metadata?.name ?? '';
      const resolve = this.#waiters.get(name);
      if (resolve === undefined || !isDeployed(obj)) return;
      this.#waiters.delete(name);
      resolve(performance.now());
    };
    this.#informer.onAdd(seen);
    this.#informer.onUpdate(seen);
  }

  start = (): Promise<void> => this.#informer.start();
  stop = (): Promise<void> => this.#informer.stop();

  /** Resolves with performance.now() when `name` is seen deployed (register before creating it). */
  deployed(name: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`timed out after ${VICTIM_TIMEOUT_MS / 1000} s waiting for ${name} to be deployed`));
      }, VICTIM_TIMEOUT_MS);
      this.#waiters.set(name, (t) => {
        clearTimeout(timer);
        resolve(t);
      });
    });
  }

  notDeployed(): number {
    return this.#informer.list().filter((cr) => !isDeployed(cr)).length;
  }
}

const crs = (ns: string): string => resourcePath({ ...TENANT, namespace: ns });

async function createCR(s: Setup, ns: string, name: string, spec: Record<string, unknown>): Promise<void> {
  const body = { apiVersion: `${TENANT.group}/${TENANT.version}`, kind: TENANT.kind, metadata: { name }, spec };
  await s.kc.makeApiClient(RawClient).request(HttpMethod.POST, crs(ns), { body });
}

async function createNamespace(s: Setup, prefix: string): Promise<string> {
  const ns = `${prefix}-${Date.now().toString(36)}`;
  await s.kc
    .makeApiClient(RawClient)
    .request(HttpMethod.POST, '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } });
  return ns;
}

/** Drops the finalizers no operator will remove any more, then deletes the namespace (not waited for). */
async function deleteNamespace(s: Setup, ns: string): Promise<void> {
  const raw = s.kc.makeApiClient(RawClient);
  const left = ((await raw.request(HttpMethod.GET, crs(ns))) as { items?: { metadata?: { name?: string } }[] }).items ?? [];
  await mapBounded(left, 8, (cr) =>
    raw
      .request(HttpMethod.PATCH, `${crs(ns)}/${cr.metadata?.name ?? ''}`, {
        body: { metadata: { finalizers: null } },
        contentType: PatchStrategy.MergePatch,
      })
      .catch(() => undefined),
  );
  await raw.request(HttpMethod.DELETE, `/api/v1/namespaces/${ns}`).catch(() => undefined);
}

/**
 * Starts an operator on `namespaces`, lets `noise` load it, then times `tries` victim CRs in the
 * last namespace, one after the other. Stops the operator at once afterwards.
 */
interface Scenario {
  readonly name: string;
  /** The noisy tenant's namespace first, the victim's last. */
  readonly namespaces: readonly string[];
  readonly tries: number;
  /** Loads the operator before the victims are timed. */
  readonly noise: () => Promise<void>;
  /** The noisy tenant's CRs, to report how many still wait. */
  readonly noisy?: DeployedWatch;
}

async function scenario(s: Setup, { name, namespaces, tries, noise, noisy }: Scenario): Promise<Row> {
  const victimNs = namespaces.at(-1) ?? '';
  const operator = new Operator({
    kubeConfig: s.kc,
    helm: new HelmClient({ binary: s.helmBin, kubeconfig: s.kubeconfig }),
    log: makeLogger({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' }),
    defaultReconcilePeriodMs: 3_600_000,
    maxConcurrentReconciles: s.workers,
    namespaces,
    gracefulShutdownTimeoutMs: 0,
  });
  const victims = new DeployedWatch(s.kc, victimNs);
  await victims.start();
  await operator.start(await loadWatches(path.join(s.dir, 'watches.yaml')));
  try {
    await noise();
    const ms: number[] = [];
    const backlog: number[] = [];
    for (let i = 0; i < tries; i++) {
      const cr = `victim-${i}`;
      const seen = victims.deployed(cr);
      const t0 = performance.now();
      await createCR(s, victimNs, cr, { hang: false });
      ms.push((await seen) - t0);
      if (noisy !== undefined) backlog.push(noisy.notDeployed());
      say(
        `${name}: victim ${i + 1}/${tries} deployed in ${Math.round(ms.at(-1) ?? 0)} ms${noisy === undefined ? '' : `, ${backlog.at(-1)} of the noisy tenant's CRs not deployed yet`}`,
      );
    }
    return { scenario: name, ms, ...(noisy === undefined ? {} : { backlog }) };
  } finally {
    await operator.stop();
    await victims.stop();
  }
}

const median = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN;
};

function report(rows: readonly Row[], idle: Row, s: Setup, n: number): void {
  const share = namespaceShare(s.workers, ['a', 'b']);
  process.stdout.write(
    `\nFairness: a second tenant's trivial CR, create to Deployed (${s.workers} workers, ${share} per namespace; target: within 3x of idle)\n`,
  );
  for (const r of rows) {
    const ratio = median(r.ms) / median(idle.ms);
    const backlog = r.backlog === undefined ? '' : `   noisy CRs still waiting: ${r.backlog.join(', ')}`;
    process.stdout.write(
      `  ${r.scenario.padEnd(34)} median ${median(r.ms).toFixed(0).padStart(6)} ms   max ${Math.max(...r.ms)
        .toFixed(0)
        .padStart(6)} ms   ratio ${ratio.toFixed(2)}x${r === idle ? ' (reference)' : ''}${backlog}\n`,
    );
  }
  process.stdout.write(
    `  (flood: ${n} CRs of one namespace created just before; hooks: ${HANGS} installs waiting on a hook that never completes)\n`,
  );
}

async function ensureCrd(kc: KubeConfig): Promise<void> {
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const name = `${TENANT.plural}.${TENANT.group}`;
  const openAPIV3Schema = {
    type: 'object',
    properties: {
      spec: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
      status: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
    },
  };
  await ext
    .createCustomResourceDefinition({
      body: {
        metadata: { name },
        spec: {
          group: TENANT.group,
          scope: 'Namespaced',
          names: { kind: TENANT.kind, plural: TENANT.plural, singular: 'tenant', listKind: 'TenantList' },
          versions: [{ name: TENANT.version, served: true, storage: true, subresources: { status: {} }, schema: { openAPIV3Schema } }],
        },
      },
    })
    .catch((err: unknown) => {
      if (!isStatus(err, 409)) throw err;
    });
  for (let i = 0; i < 100; i++) {
    const crd = await ext.readCustomResourceDefinition({ name });
    if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`CRD ${name} not established within 10 s`);
}

/** Resolves once a hook Job exists in `namespace`: a hanging install holds a worker. */
async function hookRunning(kc: KubeConfig, namespace: string): Promise<void> {
  const batch = kc.makeApiClient(BatchV1Api);
  for (let i = 0; (await batch.listNamespacedJob({ namespace })).items.length === 0; i++) {
    if (i > 600) throw new Error('no hook Job appeared within 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function fairness(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv.filter((a) => a !== '--fairness'),
    options: {
      n: { type: 'string', default: '500' },
      tries: { type: 'string', default: '3' },
      workers: { type: 'string', default: String(os.availableParallelism()) },
    },
  });
  const n = positive('n', values.n);
  const tries = positive('tries', values.tries);
  const workers = positive('workers', values.workers);
  const hack = async (script: string, args: string[]): Promise<string> =>
    (await run('bash', [path.join(ROOT, 'hack', script), ...args], { cwd: ROOT })).stdout.trim();
  const kubeconfig = (await hack('cluster.sh', ['up'])).split('\n').pop() ?? '';
  const helmBin = /^export HELM_BIN="([^"]*)"$/m.exec(await hack('tools.sh', ['env']))?.[1] ?? 'helm';
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  await ensureCrd(kc);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-fairness-'));
  await writeFile(
    path.join(dir, 'watches.yaml'),
    `- {group: ${TENANT.group}, version: ${TENANT.version}, kind: ${TENANT.kind}, chart: ${CHART}}\n`,
  );
  const s: Setup = { kc, kubeconfig, helmBin, workers, dir };
  const created: string[] = [];
  const ns = async (prefix: string): Promise<string> => {
    const name = await createNamespace(s, prefix);
    created.push(name);
    return name;
  };
  say(`cluster ${kubeconfig}, ${workers} workers, flood of ${n}`);
  try {
    const idle = await scenario(s, { name: 'idle operator', namespaces: [await ns('fair-idle')], tries, noise: () => Promise.resolve() });

    const floodNs = await ns('fair-flood');
    const flood = new DeployedWatch(kc, floodNs);
    await flood.start();
    const flooded = await scenario(s, {
      name: `while one tenant floods ${n} CRs`,
      namespaces: [floodNs, await ns('fair-victim-a')],
      tries,
      noise: async () => {
        await mapBounded(
          Array.from({ length: n }, (_, i) => i),
          8,
          (i) => createCR(s, floodNs, `flood-${i}`, { hang: false }),
        );
      },
      noisy: flood,
    });
    await flood.stop();

    const hangNs = await ns('fair-hang');
    const hooks = await scenario(s, {
      name: `while ${HANGS} hooks hang`,
      namespaces: [hangNs, await ns('fair-victim-b')],
      tries,
      noise: async () => {
        for (let i = 0; i < HANGS; i++) await createCR(s, hangNs, `hang-${i}`, { hang: true });
        await hookRunning(kc, hangNs);
      },
    });
    report([idle, flooded, hooks], idle, s, n);
  } finally {
    for (const name of created) await deleteNamespace(s, name).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
}
