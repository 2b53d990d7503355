/**
 * Runs the real operator in-process against the test cluster and the real helm binary, plus small
 * helpers to drive CRs and read their status. Nothing here fakes Kubernetes or helm.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  loadYaml,
  PatchStrategy,
  setHeaderOptions,
  type CoreV1Event,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { inject } from 'vitest';
import { HelmClient } from '../../src/helm/index.js';
import { isStatus } from '../../src/k8s/errors.js';
import { assembleOperator, type AssembledOperator, type LeaderElectionSettings } from '../../src/operator/assemble.js';
import { LeadershipLostError } from '../../src/runtime/manager.js';
import type { Operator } from '../../src/operator/operator.js';
import type { Condition } from '../../src/reconciler/status/conditions.js';
import { makeLogger, type Logger } from '../../src/telemetry/logger.js';
import { OperatorMetrics } from '../../src/telemetry/metrics.js';
import { waitFor, type WaitOptions } from './kube.js';
import { total } from './prometheus.js';
import { TEST_RETRY_DELAYS } from './timings.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const NGINX_CHART = path.join(ROOT, 'helm-charts/nginx');
export const fixtureChart = (name: string): string => path.join(ROOT, 'test/fixtures/charts', name);

export interface TestKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  /** A CRD without the status subresource (a user mistake the operator must report). */
  readonly noStatusSubresource?: boolean;
}

export const NGINX: TestKind = { group: 'example.com', version: 'v1alpha1', kind: 'Nginx', plural: 'nginxes' };
/** The kind of test/fixtures/charts/slow-upgrade: pre-upgrade hook Jobs, about a second each; installs are fast. */
export const SLOW_UPGRADE: TestKind = {
  group: 'prod.helm-operator.example.com',
  version: 'v1',
  kind: 'SlowUpgrade',
  plural: 'slowupgrades',
};

/** Installs the CRD of `kind` (status subresource, schemaless spec) unless it exists, and waits until it is served. */
export async function ensureCrd(kc: KubeConfig, kind: TestKind): Promise<void> {
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const name = `${kind.plural}.${kind.group}`;
  const body: V1CustomResourceDefinition =
    kind === NGINX
      ? loadYaml<V1CustomResourceDefinition>(await readFile(path.join(ROOT, 'config/crd/bases/example.com_nginxes.yaml'), 'utf8'))
      : {
          metadata: { name },
          spec: {
            group: kind.group,
            scope: 'Namespaced',
            names: { kind: kind.kind, plural: kind.plural, singular: kind.kind.toLowerCase(), listKind: `${kind.kind}List` },
            versions: [
              {
                name: kind.version,
                served: true,
                storage: true,
                ...(kind.noStatusSubresource === true ? {} : { subresources: { status: {} } }),
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
  try {
    await ext.createCustomResourceDefinition({ body });
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
    // A kept cluster may hold an older config/crd (printer columns, schema): tests read this one.
    if (kind === NGINX) await replaceUnlessSame(ext, body);
  }
  await waitFor(`CRD ${name} to be established`, async () => {
    const crd = await ext.readCustomResourceDefinition({ name });
    return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
  });
}

/**
 * Replaces the CRD `body` names unless its spec is already `body`'s. Files run side by side: another
 * may replace it between our read and our write (409), and then we read again.
 */
async function replaceUnlessSame(ext: ApiextensionsV1Api, body: V1CustomResourceDefinition): Promise<void> {
  const name = body.metadata?.name ?? '';
  for (let attempt = 1; ; attempt++) {
    const current = await ext.readCustomResourceDefinition({ name });
    if (isDeepStrictEqual(pick(current.spec, body.spec), body.spec)) return;
    body.metadata = Object.assign(body.metadata ?? {}, { name, resourceVersion: current.metadata?.resourceVersion });
    try {
      await ext.replaceCustomResourceDefinition({ name, body });
      return;
    } catch (err) {
      if (!isStatus(err, 409) || attempt >= 5) throw err;
    }
  }
}

/** `actual` reduced to the keys `wanted` sets, recursively: what the API server defaults is not a difference. */
function pick(actual: unknown, wanted: unknown): unknown {
  if (Array.isArray(wanted) && Array.isArray(actual)) return actual.map((a, i) => pick(a, wanted[i]));
  if (typeof wanted !== 'object' || wanted === null || typeof actual !== 'object' || actual === null || Array.isArray(actual))
    return actual;
  const a = actual as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(wanted)
      .filter((k) => k in a)
      .map((k) => [k, pick(a[k], (wanted as Record<string, unknown>)[k])]),
  );
}

export interface RunningOperator {
  readonly operator: Operator;
  readonly helm: HelmClient;
  /** The operator's Prometheus registry, as `/metrics` would serve it. */
  readonly metrics: OperatorMetrics;
  /** How many times leadership was lost and the operator started again (`restartOnLostLeadership`). */
  readonly restarts: number;
  /** What the operators before the last restart did: {@link activity} counts from the first start. */
  readonly earlier: Activity;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** watches.yaml text; `chart:` paths should be absolute. */
  readonly watches: string;
  readonly namespaces?: readonly string[];
  readonly reconcilePeriodMs?: number;
  /** The shortest reconcile-period a CR's annotation may ask for; the operator's default (30 s) when unset. */
  readonly annotationPeriodFloorMs?: number;
  readonly maxConcurrentReconciles?: number;
  /** `--max-concurrent-reconciles` left unset: reconciles in flight tune themselves (ADR 0059). */
  readonly selfTuningConcurrency?: boolean;
  /** `--max-concurrent-reconciles-per-namespace`; the operator's default when unset. */
  readonly maxConcurrentReconcilesPerNamespace?: number;
  /** `--helm-timeout`; helm's 5 minutes when unset. */
  readonly helmTimeoutMs?: number;
  /** `--min-retry-delay`; the tests' 200 ms when unset (timings.ts), production's 1 s on request. */
  readonly minRetryDelayMs?: number;
  /** `--max-retry-delay`; the tests' 30 s when unset. */
  readonly maxRetryDelayMs?: number;
  /** `--progress-delay`; the operator's 2 s when unset. */
  readonly progressDelayMs?: number;
  readonly helmBin?: string;
  /** How long a controller a reload stops lets its reconciles run; the operator's default when unset. */
  readonly gracefulShutdownTimeoutMs?: number;
  /** Where the operator logs; silent (or TEST_LOG_LEVEL) by default. */
  readonly log?: Logger;
  /** `--default-service-account`. */
  readonly defaultServiceAccount?: string;
  /** The key of the fingerprint status shows; the operator's per-process default when unset. */
  readonly fingerprintKey?: Uint8Array;
  /** `--leader-elect` and its settings: the controllers start once this process holds the Lease. */
  readonly leaderElection?: LeaderElectionSettings;
  /** `--sharding` (with `leaderElection`): replicas share the namespaces (docs/adr/0085). */
  readonly sharding?: boolean;
  /**
   * Start the operator again when it loses leadership, as its Deployment would: on a loaded
   * machine a short lease can lapse, and a test would otherwise wait on an operator that exited.
   * Tests of losing leadership leave this unset.
   */
  readonly restartOnLostLeadership?: boolean;
}

/**
 * The operator as `helm-operator run` builds it from these settings (operator/assemble.ts), not
 * yet started; `cleanup` removes its watches file. The whole operator ({@link startOperator}) and
 * the middle tier's reconcilers (reconciler-harness.ts) are both built here.
 */
export async function assembleForTest(options: StartOptions): Promise<{ assembled: AssembledOperator; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'operator-test-'));
  const file = path.join(dir, 'watches.yaml');
  await writeFile(file, options.watches);
  const log = options.log ?? makeLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  try {
    const assembled = await assembleOperator(
      {
        watchesFile: file,
        kubeconfig: inject('kubeconfigPath'),
        helmBinary: options.helmBin ?? inject('helmBin'),
        helmTimeoutMs: options.helmTimeoutMs,
        minRetryDelayMs: options.minRetryDelayMs ?? TEST_RETRY_DELAYS.minRetryDelayMs,
        maxRetryDelayMs: options.maxRetryDelayMs ?? TEST_RETRY_DELAYS.maxRetryDelayMs,
        progressDelayMs: options.progressDelayMs,
        reconcilePeriodMs: options.reconcilePeriodMs ?? 60_000,
        annotationReconcilePeriodFloorMs: options.annotationPeriodFloorMs,
        maxConcurrentReconciles: options.maxConcurrentReconciles ?? 2,
        selfTuningConcurrency: options.selfTuningConcurrency,
        maxConcurrentReconcilesPerNamespace: options.maxConcurrentReconcilesPerNamespace,
        namespaces: options.namespaces ?? [],
        gracefulShutdownTimeoutMs: options.gracefulShutdownTimeoutMs,
        defaultServiceAccount: options.defaultServiceAccount,
        leaderElection: options.leaderElection,
        sharding: options.sharding,
        fingerprintKey: options.fingerprintKey,
      },
      { log, version: 'test', processMetrics: false },
    );
    return { assembled, cleanup: () => rm(dir, { recursive: true, force: true }) };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Builds the operator as `helm-operator run` does (operator/assemble.ts: helm's version probe, the
 * clean-up of a killed predecessor's helm, queue metrics, the elector when asked) and runs it with
 * its manager until `stop()`, which shuts down as SIGTERM would.
 */
export async function startOperator(options: StartOptions): Promise<RunningOperator> {
  const cleanups: (() => Promise<void>)[] = [];
  const assemble = async (): Promise<AssembledOperator> => {
    const { assembled, cleanup } = await assembleForTest(options);
    cleanups.push(cleanup);
    return assembled;
  };
  const stopping = new AbortController();
  let current = await assemble();
  let restarts = 0;
  let earlier: Activity = { reconciles: new Map(), helmExecutions: 0 };
  // The process exits when it loses leadership and its Deployment starts it again (cli/run.ts);
  // in-process, with `restartOnLostLeadership`, this is that restart.
  const runUntilStopped = async (): Promise<void> => {
    for (;;) {
      try {
        await current.manager.run(stopping.signal);
        return;
      } catch (err) {
        if (!(err instanceof LeadershipLostError) || options.restartOnLostLeadership !== true || stopping.signal.aborted) throw err;
        earlier = sum(earlier, await activityOf(current));
        current = await assemble();
        restarts++;
      }
    }
  };
  const running = runUntilStopped();
  await Promise.race([current.manager.started, running]);
  return {
    get operator() {
      return current.operator;
    },
    get helm() {
      return current.helm;
    },
    get metrics() {
      return current.metrics;
    },
    get restarts() {
      return restarts;
    },
    get earlier() {
      return earlier;
    },
    stop: async () => {
      stopping.abort();
      await running;
      for (const cleanup of cleanups) await cleanup();
    },
  };
}

export interface CR {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    generation?: number;
    finalizers?: string[];
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    uid?: string;
    resourceVersion?: string;
  };
  spec?: Record<string, unknown>;
  status?: {
    conditions?: Condition[];
    deployedRelease?: { name: string; revision: number; chart: string; chartVersion: string; appVersion?: string };
    inventory?: { apiVersion: string; kind: string; namespace: string; name: string }[];
    observedGeneration?: number;
  };
}

export class CRs {
  readonly #api: CustomObjectsApi;
  readonly #core: CoreV1Api;

  constructor(
    kc: KubeConfig,
    readonly kind: TestKind,
  ) {
    this.#api = kc.makeApiClient(CustomObjectsApi);
    this.#core = kc.makeApiClient(CoreV1Api);
  }

  #ref(namespace: string) {
    return { group: this.kind.group, version: this.kind.version, plural: this.kind.plural, namespace };
  }

  async create(namespace: string, name: string, spec: Record<string, unknown>, annotations?: Record<string, string>): Promise<CR> {
    const body = {
      apiVersion: `${this.kind.group}/${this.kind.version}`,
      kind: this.kind.kind,
      metadata: { name, namespace, ...(annotations === undefined ? {} : { annotations }) },
      spec,
    };
    return (await this.#api.createNamespacedCustomObject({ ...this.#ref(namespace), body })) as CR;
  }

  async get(namespace: string, name: string): Promise<CR | undefined> {
    try {
      return (await this.#api.getNamespacedCustomObject({ ...this.#ref(namespace), name })) as CR;
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  }

  /** JSON merge patch of the whole object (spec, metadata.annotations, …). */
  async patch(namespace: string, name: string, body: Record<string, unknown>): Promise<CR> {
    return (await this.#api.patchNamespacedCustomObject(
      { ...this.#ref(namespace), name, body },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as CR;
  }

  /** JSON merge patch of the status subresource: a status as some earlier write left it. */
  async patchStatus(namespace: string, name: string, status: Record<string, unknown>): Promise<CR> {
    return (await this.#api.patchNamespacedCustomObjectStatus(
      { ...this.#ref(namespace), name, body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as CR;
  }

  /** `propagationPolicy`: as `kubectl delete --cascade=orphan|foreground|background`. */
  async delete(namespace: string, name: string, propagationPolicy?: 'Orphan' | 'Foreground' | 'Background'): Promise<void> {
    await this.#api.deleteNamespacedCustomObject({
      ...this.#ref(namespace),
      name,
      ...(propagationPolicy === undefined ? {} : { propagationPolicy }),
    });
  }

  /** Deletes every CR of the namespace with one request, as `kubectl delete <kind> --all` marks them all at once. */
  async deleteAll(namespace: string): Promise<void> {
    await this.#api.deleteCollectionNamespacedCustomObject(this.#ref(namespace));
  }

  async list(namespace: string): Promise<CR[]> {
    return ((await this.#api.listNamespacedCustomObject(this.#ref(namespace))) as { items: CR[] }).items;
  }

  /** Waits until condition `type` has `status` (and `reason`, if given); returns the CR. */
  async waitForCondition(
    namespace: string,
    name: string,
    want: { type: string; status: 'True' | 'False'; reason?: string },
    options?: WaitOptions,
  ): Promise<CR> {
    return waitFor(
      `${this.kind.kind} ${namespace}/${name} to have ${want.type}=${want.status}${want.reason === undefined ? '' : `/${want.reason}`}`,
      async () => {
        const cr = await this.get(namespace, name);
        const c = cr?.status?.conditions?.find((x) => x.type === want.type);
        return c?.status === want.status && (want.reason === undefined || c.reason === want.reason) ? cr : undefined;
      },
      { timeoutMs: Number(process.env.TEST_WAIT_MS ?? 90_000), ...options },
    );
  }

  async waitForGone(namespace: string, name: string, options?: WaitOptions): Promise<void> {
    await waitFor(`${this.kind.kind} ${namespace}/${name} to be deleted`, async () => (await this.get(namespace, name)) === undefined, {
      timeoutMs: 90_000,
      ...options,
    });
  }

  /**
   * Waits for an Event about the named object that `match` accepts (a reason, or a predicate):
   * the operator writes Events in the background, so one may land just after the status that
   * reports the same step.
   */
  async waitForEvent(
    namespace: string,
    name: string,
    match: string | ((e: CoreV1Event) => boolean),
    options?: WaitOptions,
  ): Promise<CoreV1Event> {
    const accepts = typeof match === 'string' ? (e: CoreV1Event) => e.reason === match : match;
    const what = typeof match === 'string' ? `a ${match} event` : 'a matching event';
    return waitFor(`${what} about ${this.kind.kind} ${namespace}/${name}`, async () => (await this.events(namespace, name)).find(accepts), {
      timeoutMs: 30_000,
      ...options,
    });
  }

  /** Events recorded about the named object, oldest first. */
  async events(namespace: string, name: string): Promise<CoreV1Event[]> {
    const list = await this.#core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
    return list.items
      .filter((e) => e.involvedObject.kind === this.kind.kind)
      .sort((a, b) => String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp)));
  }
}

export const condition = (cr: CR | undefined, type: string): Condition | undefined => cr?.status?.conditions?.find((c) => c.type === type);

/**
 * What the operator has done so far, read from its registry: the reconciles each controller
 * finished and the helm processes it ran. A "nothing happens" test takes one before and proves a
 * reconcile ran after it ({@link waitForReconciles}) before asserting nothing was done, so the
 * assertion can fail instead of passing because the operator never looked.
 */
export interface Activity {
  readonly reconciles: ReadonlyMap<string, number>;
  readonly helmExecutions: number;
}

export async function activity(op: RunningOperator): Promise<Activity> {
  return sum(op.earlier, await activityOf(op));
}

async function activityOf(op: Pick<RunningOperator, 'metrics' | 'operator'>): Promise<Activity> {
  const text = await op.metrics.metrics();
  const controllers = op.operator.manager.names();
  return {
    reconciles: new Map(controllers.map((c) => [c, total(text, 'controller_runtime_reconcile_total', { controller: c })])),
    helmExecutions: total(text, 'helm_operator_helm_executions_total'),
  };
}

function sum(a: Activity, b: Activity): Activity {
  const reconciles = new Map(a.reconciles);
  for (const [c, n] of b.reconciles) reconciles.set(c, (reconciles.get(c) ?? 0) + n);
  return { reconciles, helmExecutions: a.helmExecutions + b.helmExecutions };
}

/** helm processes the operator ran since `since`. */
export async function helmExecutionsSince(op: RunningOperator, since: Activity): Promise<number> {
  return (await activity(op)).helmExecutions - since.helmExecutions;
}

/**
 * Waits until `controller` has nothing queued and no reconcile running, twice in a row: what a
 * change brought, and what those reconciles brought in turn, has been reconciled (periodic
 * requeues wait on timers, outside the queue).
 */
export async function waitForQuiet(op: RunningOperator, controller: string): Promise<void> {
  let quietBefore = false;
  await waitFor(
    `${controller} to have nothing queued nor running`,
    async () => {
      const text = await op.metrics.metrics();
      const quiet =
        total(text, 'workqueue_depth', { name: controller }) === 0 &&
        total(text, 'controller_runtime_active_workers', { controller }) === 0;
      const twice = quiet && quietBefore;
      quietBefore = quiet;
      return twice;
    },
    { timeoutMs: 60_000 },
  );
}

/**
 * Waits until `controller` (`<kind>-controller`) has finished at least `count` reconciles since
 * `since`. With one CR per controller and `count` >= 2, the last of them started after `since`
 * (a controller reconciles one key at a time), so it saw whatever the test changed before.
 */
export async function waitForReconciles(op: RunningOperator, controller: string, since: Activity, count: number): Promise<void> {
  if (!since.reconciles.has(controller))
    throw new Error(`no controller ${controller}; running: ${[...since.reconciles.keys()].join(', ')}`);
  const from = since.reconciles.get(controller) ?? 0;
  await waitFor(
    `${count} reconciles of ${controller}`,
    async () => ((await activity(op)).reconciles.get(controller) ?? 0) - from >= count,
    { timeoutMs: 60_000 },
  );
}
