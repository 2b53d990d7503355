/**
 * A fleet of CRs over many namespaces and the operators that share it, for the benchmarks that run
 * more than one namespace (bench/shards.ts, bench/scale.ts): one cluster-wide watch of the CRs,
 * sharded replicas of ours (or operator-sdk's single process) over a comma-separated
 * WATCH_NAMESPACE, and the shard group's settling read from its Leases as `helm-operator shards`
 * reads them.
 */
import { HttpMethod, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { RawClient, resourcePath } from '../src/k8s/raw-client.js';
import { mapBounded } from '../src/runtime/bounded.js';
import { Informer } from '../src/runtime/informer.js';
import { KubeShardLeaseStore } from '../src/runtime/shard-lease-store.js';
import { liveByRecord, shardGroupView } from '../src/runtime/shard-view.js';
import { NGINX, untilHolds } from './compare/cluster.js';
import { startOperator, type OperatorName, type OperatorSetup, type RunningOperator } from './compare/operators.js';
import { createNamespace, createNamedNamespace, deleteNamespace, type ScenarioSetup } from './compare/scenarios.js';

/** The replicas' --leader-election-id: their shard group. */
export const GROUP = 'bench-fleet';

/** Pure: N CR names, each with its namespace, round-robin over the namespaces. */
export function spread(n: number, namespaces: readonly string[]): { readonly name: string; readonly namespace: string }[] {
  if (namespaces.length === 0) throw new Error('spread: no namespaces');
  return Array.from({ length: n }, (_, i) => ({ name: `s-${i + 1}`, namespace: namespaces[i % namespaces.length] ?? '' }));
}

/** Every CR of the fleet's namespaces, through one cluster-wide watch (waiting costs no polling requests). */
export class FleetWatch {
  readonly #informer: Informer;
  readonly #namespaces: ReadonlySet<string>;
  readonly #waiters = new Set<() => void>();

  constructor(kc: KubeConfig, namespaces: readonly string[]) {
    this.#namespaces = new Set(namespaces);
    this.#informer = new Informer(kc, { resource: { ...NGINX } });
    const wake = (): void => {
      for (const w of this.#waiters) w();
    };
    this.#informer.onAdd(wake);
    this.#informer.onUpdate(wake);
    this.#informer.onDelete(wake);
  }

  start = (): Promise<void> => this.#informer.start();
  stop = (): Promise<void> => this.#informer.stop();

  crs(): readonly KubernetesObject[] {
    return this.#informer.list().filter((cr) => this.#namespaces.has(cr.metadata?.namespace ?? ''));
  }

  until(what: string, holds: () => boolean, timeoutMs: number): Promise<number> {
    return untilHolds(this.#waiters, what, holds, timeoutMs);
  }
}

/** Until the group's Leases show `replicas` live peers and no handoff under way. */
async function groupSettled(kc: KubeConfig, home: string, replicas: number, timeoutMs = 300_000): Promise<void> {
  const store = new KubeShardLeaseStore(kc, home, GROUP);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = shardGroupView({ group: GROUP, leases: await store.list(), live: liveByRecord(Date.now()) });
    const live = view.peers.filter((p) => p.state === 'live').length;
    if (live === replicas && view.handoffs.length === 0) return;
    if (Date.now() > deadline)
      throw new Error(
        `shard group ${GROUP} in ${home}: ${live} of ${replicas} replicas live, ${view.handoffs.length} handoffs after ${timeoutMs / 1000} s`,
      );
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** A fleet's namespaces, its operators and its watch; `remove()` stops and deletes everything. */
export interface Fleet {
  readonly tenants: readonly string[];
  readonly operators: readonly RunningOperator[];
  readonly watch: FleetWatch;
  /** Creates the CRs (10 requests in flight). */
  create(crs: readonly { name: string; namespace: string }[], spec: unknown): Promise<void>;
  /** Deletes the CRs (10 requests in flight). */
  delete(crs: readonly { name: string; namespace: string }[]): Promise<void>;
  remove(): Promise<void>;
}

/**
 * `namespaces` fresh namespaces named after `tag`, then the operators over them: ours as `replicas`
 * replicas with `--leader-elect --sharding` (their Leases in a home namespace of their own), settled
 * before this returns; operator-sdk as one process.
 */
export async function startFleet(
  s: ScenarioSetup,
  setup: OperatorSetup,
  o: { readonly tag: string; readonly namespaces: number; readonly operator: OperatorName; readonly replicas: number },
): Promise<Fleet> {
  const home = await createNamespace(s, `${o.tag}-home`);
  const tenants: string[] = [];
  const operators: RunningOperator[] = [];
  let watch: FleetWatch | undefined;
  const remove = async (): Promise<void> => {
    await watch?.stop();
    await Promise.all(operators.map((op) => op.stop()));
    await mapBounded([home, ...tenants], 4, (ns) => deleteNamespace(s, ns));
  };
  try {
    // Named as platform teams name them, differing only at the end (`…-tenant-001`, `…-tenant-002`):
    // the names a weak bucket hash crowds onto one replica (docs/adr/0110).
    const stamp = `${o.tag}${Date.now().toString(36)}`;
    for (let i = 1; i <= o.namespaces; i++) tenants.push(await createNamedNamespace(s, `${stamp}-tenant-${String(i).padStart(3, '0')}`));
    const sharding = ['--leader-elect', '--sharding', '--leader-election-id', GROUP, '--leader-election-namespace', home];
    for (let r = 0; r < o.replicas; r++)
      operators.push(
        await startOperator(o.operator, tenants.join(','), setup, {
          id: `${o.tag}-${r}`,
          ...(o.operator === 'ours' ? { args: sharding } : {}),
        }),
      );
    if (o.operator === 'ours') await groupSettled(s.kc, home, o.replicas);
    watch = new FleetWatch(s.kc, tenants);
    await watch.start();
  } catch (err) {
    await remove();
    throw err;
  }
  const raw = s.kc.makeApiClient(RawClient);
  return {
    tenants,
    operators,
    watch,
    create: (crs, spec) =>
      mapBounded(crs, 10, async ({ name, namespace }) => {
        await raw.request(HttpMethod.POST, resourcePath({ ...NGINX, namespace }), {
          body: { apiVersion: `${NGINX.group}/${NGINX.version}`, kind: NGINX.kind, metadata: { name }, spec },
        });
      }).then(() => undefined),
    delete: (crs) =>
      mapBounded(crs, 10, async ({ name, namespace }) => {
        await raw.request(HttpMethod.DELETE, `${resourcePath({ ...NGINX, namespace })}/${name}`);
      }).then(() => undefined),
    remove,
  };
}
