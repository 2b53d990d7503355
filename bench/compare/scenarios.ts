/**
 * The scenarios, run the same way against either operator in a fresh namespace:
 *
 * 1. converge: create N CRs at once (10 requests in flight) → every CR `Deployed=True`;
 *    then, not measured, the cluster settles: every Deployment has its Pods, all available
 *    (phases 3 to 5 also start from a settled cluster, each latency try too);
 * 2. idle: `idleSeconds` of steady state once settled (the peer's 1 min resync included);
 * 3. spec change: `replicaCount` of one CR 2 → 3 → its Deployment's `spec.replicas` is 3 (one CR per try);
 * 4. drift: delete one CR's Deployment → a Deployment of that name with another uid exists;
 * 5. delete-all: delete every CR → every CR, Deployment and Service gone (finalizers: the releases
 *    are uninstalled).
 *
 * Settling is not the operator's work: at N=1000 the controller-manager (20 requests/s by default)
 * is still creating Pods minutes after the last CR is Deployed, and an operator whose later phases
 * come sooner would otherwise share the API server with that backlog while the other does not.
 *
 * Each phase records wall time, the process tree's CPU and memory, API requests and helm processes.
 * The lower bound applies the same objects, pre-rendered by `helm template`, with one
 * `kubectl apply --server-side`, and deletes them with one `kubectl delete`.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { HttpMethod, PatchStrategy, type KubeConfig } from '@kubernetes/client-node';
import { RawClient, resourcePath } from '../../src/k8s/raw-client.js';
import { mapBounded } from '../../src/runtime/bounded.js';
import { apiRequests, delta, deploymentSettled, isDeployed, NamespaceWatch, NGINX, total } from './cluster.js';
import { usageBetween, type CgroupUsage } from './cgroup.js';
import type { RunningOperator } from './operators.js';
import type { Window } from './procs.js';

const run = promisify(execFile);

export interface ScenarioSetup {
  readonly kc: KubeConfig;
  readonly kubeconfig: string;
  readonly kubectl: string;
  readonly helmBin: string;
  readonly chart: string;
  readonly n: number;
  readonly idleSeconds: number;
  readonly tries: number;
  readonly workDir: string;
}

/** The sample CR's spec (config/samples). */
export const SPEC = { config: { workerConnections: 512 }, replicaCount: 2, service: { port: 8080, type: 'ClusterIP' } };
/** Pods a run at `n` makes at most: the sample spec's replicas per CR, plus one more per spec-change try. */
export function podsNeeded(n: number, tries: number): number {
  return n * SPEC.replicaCount + tries;
}

export const crName = (i: number): string => `b-${i}`;
/** The chart names its objects `<release>-nginx`. */
const deploymentOf = (cr: string): string => `${cr}-nginx`;

export interface Phase {
  readonly seconds: number;
  readonly process: Window;
  readonly apiRequests: number;
  readonly apiRequestsByVerb: Readonly<Record<string, number>>;
  /** helm processes our operator ran in the phase (its metric); undefined for operator-sdk. */
  readonly helmExecutions?: number;
  /** Under `--cpu-limit`: the cgroup's CPU and throttling in the phase, and its memory peak so far. */
  readonly cgroup?: CgroupUsage & { readonly memoryPeakBytes: number; readonly memoryLimitHits: number };
}

export interface OperatorRound {
  readonly operator: string;
  readonly namespace: string;
  /** Operator RSS once ready, before any CR. */
  readonly rssReadyBytes: number;
  readonly converge: Phase;
  readonly idle: Phase;
  readonly specChangeMs: readonly number[];
  readonly driftMs: readonly number[];
  readonly deleteAll: Phase;
}

export interface LowerBound {
  readonly applySeconds: number;
  readonly deleteSeconds: number;
}

const names = (n: number): string[] => Array.from({ length: n }, (_, i) => crName(i + 1));

/** Measures one phase: `act` runs between two marks of the sampler and two API server scrapes. */
async function phase(s: ScenarioSetup, op: RunningOperator, act: () => Promise<void>): Promise<Phase> {
  const requestsBefore = await apiRequests(s.kubectl, s.kubeconfig);
  const helmBefore = await op.helmExecutions();
  const cgroupBefore = op.cgroup?.read();
  const from = await op.sampler.mark();
  const t0 = performance.now();
  await act();
  const seconds = (performance.now() - t0) / 1000;
  const to = await op.sampler.mark();
  const cgroupAfter = op.cgroup?.read();
  const helmAfter = await op.helmExecutions();
  const byVerb = delta(requestsBefore, await apiRequests(s.kubectl, s.kubeconfig));
  return {
    seconds,
    process: op.sampler.window(from, to),
    apiRequests: total(byVerb),
    apiRequestsByVerb: byVerb,
    ...(helmBefore === undefined || helmAfter === undefined ? {} : { helmExecutions: helmAfter - helmBefore }),
    ...(cgroupBefore === undefined || cgroupAfter === undefined
      ? {}
      : {
          cgroup: {
            ...usageBetween(cgroupBefore, cgroupAfter),
            memoryPeakBytes: cgroupAfter.memoryPeakBytes,
            memoryLimitHits: cgroupAfter.memoryLimitHits,
          },
        }),
  };
}

export async function createNamespace(s: ScenarioSetup, prefix: string): Promise<string> {
  return createNamedNamespace(s, `${prefix}-${Date.now().toString(36)}`);
}

/** A namespace of exactly this name (fails if it exists). */
export async function createNamedNamespace(s: ScenarioSetup, ns: string): Promise<string> {
  await s.kc
    .makeApiClient(RawClient)
    .request(HttpMethod.POST, '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } });
  return ns;
}

/**
 * Deletes the namespace and waits (up to 5 min) until it is gone, so its clean-up does not load the
 * next round. A slow clean-up on a loaded machine is reported, not fatal: the next round goes on.
 */
export async function deleteNamespace(s: ScenarioSetup, ns: string): Promise<void> {
  // After a failed scenario CRs may be left with finalizers and no operator to remove them.
  const raw = s.kc.makeApiClient(RawClient);
  const crs = resourcePath({ ...NGINX, namespace: ns });
  const left = ((await raw.request(HttpMethod.GET, crs)) as { items?: { metadata?: { name?: string } }[] }).items ?? [];
  for (const cr of left) {
    await raw
      .request(HttpMethod.PATCH, `${crs}/${cr.metadata?.name ?? ''}`, {
        body: { metadata: { finalizers: null } },
        contentType: PatchStrategy.MergePatch,
      })
      .catch(() => undefined);
  }
  await run(s.kubectl, ['--kubeconfig', s.kubeconfig, 'delete', 'namespace', ns, '--ignore-not-found', '--timeout=300s']).catch(
    (err: unknown) => {
      process.stderr.write(
        `[bench-compare] namespace ${ns} still terminating, going on: ${err instanceof Error ? err.message.split('\n').at(-2) : String(err)}\n`,
      );
    },
  );
}

/** Runs every scenario against an operator that is up and watching `ns` (empty). */
export async function runScenarios(s: ScenarioSetup, op: RunningOperator, ns: string): Promise<OperatorRound> {
  const raw = s.kc.makeApiClient(RawClient);
  const crs = resourcePath({ ...NGINX, namespace: ns });
  const deployments = resourcePath({ group: 'apps', version: 'v1', plural: 'deployments', namespace: ns });
  const watch = new NamespaceWatch(s.kc, ns);
  await watch.start();
  const all = names(s.n);
  // Generous: on a loaded 2-core machine our N=100 converge took over 5 minutes.
  const timeoutMs = Math.max(900_000, s.n * 9_000);
  // A spec-change or drift try can wait behind a whole resync pass over the N CRs (operator-sdk's
  // took ~70 s at N=1000 on a fast machine, over 120 s on a slower one), so it gets the same bound
  // as converge: a slow try is a measurement, and one timeout would throw away the whole run.
  const tryTimeoutMs = timeoutMs;
  // The controller-manager creates Pods at ~20 requests/s: 2000 Pods take a few minutes.
  const settleMs = Math.max(300_000, s.n * 600);
  const settled = (): Promise<number> =>
    watch.until(
      `${s.n} Deployments to have all their Pods available`,
      () => {
        const ds = watch.deployments.list();
        return ds.length === s.n && ds.every(deploymentSettled);
      },
      settleMs,
    );
  try {
    const ready = await op.sampler.sample();
    const converge = await phase(s, op, async () => {
      await mapBounded(all, 10, async (name) => {
        await raw.request(HttpMethod.POST, crs, {
          body: { apiVersion: `${NGINX.group}/${NGINX.version}`, kind: NGINX.kind, metadata: { name }, spec: SPEC },
        });
      });
      await watch.until(`${s.n} CRs Deployed=True`, () => watch.crs.list().filter(isDeployed).length === s.n, timeoutMs);
    });
    await settled();
    const idle = await phase(s, op, () => new Promise((r) => setTimeout(r, s.idleSeconds * 1000)));

    const specChangeMs: number[] = [];
    for (const name of all.slice(0, s.tries)) {
      await settled();
      const replicas = (): unknown =>
        (watch.deployments.get(deploymentOf(name), ns) as { spec?: { replicas?: number } } | undefined)?.spec?.replicas;
      const t0 = performance.now();
      await raw.request(HttpMethod.PATCH, `${crs}/${name}`, { body: { spec: { replicaCount: 3 } }, contentType: PatchStrategy.MergePatch });
      specChangeMs.push((await watch.until(`the Deployment of ${name} to have 3 replicas`, () => replicas() === 3, tryTimeoutMs)) - t0);
    }

    const driftMs: number[] = [];
    for (const name of all.slice(s.tries, 2 * s.tries)) {
      await settled();
      const uid = watch.deployments.get(deploymentOf(name), ns)?.metadata?.uid;
      const t0 = performance.now();
      await raw.request(HttpMethod.DELETE, `${deployments}/${deploymentOf(name)}`);
      const back = (): boolean => {
        const d = watch.deployments.get(deploymentOf(name), ns);
        return d !== undefined && d.metadata?.uid !== uid;
      };
      driftMs.push((await watch.until(`the Deployment of ${name} to come back`, back, tryTimeoutMs)) - t0);
    }

    await settled();
    const deleteAll = await phase(s, op, async () => {
      await mapBounded(all, 10, async (name) => {
        await raw.request(HttpMethod.DELETE, `${crs}/${name}`);
      });
      // The releases' objects too: an uninstall that left them to the garbage collector would end
      // its CRs sooner and its objects later (ADR 0066).
      const gone = (): boolean => [watch.crs, watch.deployments, watch.services].every((i) => i.list().length === 0);
      await watch.until('every CR and its Deployment and Service to be gone', gone, timeoutMs);
    });
    return {
      operator: op.name,
      namespace: ns,
      rssReadyBytes: ready?.rootRssBytes ?? NaN,
      converge,
      idle,
      specChangeMs,
      driftMs,
      deleteAll,
    };
  } finally {
    await watch.stop();
  }
}

/**
 * The same objects the operators create, rendered once by `helm template` (not timed) under a
 * placeholder release name that is then replaced per CR, applied with one server-side apply.
 */
export async function lowerBound(s: ScenarioSetup, ns: string): Promise<LowerBound> {
  const values = path.join(s.workDir, 'lower-bound-values.json');
  await writeFile(values, JSON.stringify(SPEC));
  const placeholder = 'lbrelease';
  const { stdout } = await run(s.helmBin, ['template', placeholder, s.chart, '--namespace', ns, '--values', values], {
    maxBuffer: 64 * 1024 * 1024,
  });
  const file = path.join(s.workDir, `lower-bound-${ns}.yaml`);
  await writeFile(
    file,
    names(s.n)
      .map((name) => stdout.replaceAll(placeholder, name))
      .join('\n---\n'),
  );
  const kubectl = async (...args: string[]): Promise<number> => {
    const t0 = performance.now();
    await run(s.kubectl, ['--kubeconfig', s.kubeconfig, '-n', ns, ...args, '-f', file], { maxBuffer: 64 * 1024 * 1024 });
    return (performance.now() - t0) / 1000;
  };
  const applySeconds = await kubectl('apply', '--server-side', '--field-manager=bench-lower-bound');
  // Like `helm uninstall` (no --wait): done when the API server has accepted every delete; waiting
  // for the garbage collector to remove Pods and ReplicaSets is nobody's delete-all in this table.
  const deleteSeconds = await kubectl('delete', '--wait=false');
  return { applySeconds, deleteSeconds };
}
