/**
 * Shares balanced by the work they hold (docs/adr/0113). Bucket counts alone leave one replica of
 * four with about 0.30 of the CRs, and at worst 0.39: namespaces do not hash evenly into buckets.
 * So the group publishes what each bucket holds (its CRs), and the assignment counts a peer's room
 * in CRs (shard-assignment.ts). The figures must be the same on every replica, or two replicas
 * would each think a bucket the other's and nobody would take it: one replica, the live peer with
 * the smallest identity, measures and writes them into one Lease (`<group>-balance`), and every
 * replica reads them from there. It writes at most once per rebalance period, and only when the
 * new figures would lighten the busiest share enough to pay for the buckets that move.
 *
 * Pure: the coordinator decides by it every round, `helm-operator shards` prints by it.
 */
import { assignment } from './shard-assignment.js';

/**
 * Names the rule on every Lease a replica writes: it assigns by the published weights when every
 * live peer does. A peer without it (a release before docs/adr/0113) assigns by bucket count, and
 * while one lives every replica does, so a rolling upgrade never splits the group's answer.
 */
export const SHARD_BALANCE = 'crs';

/** How often the balancer may measure and publish, unless `--shard-rebalance-period` says otherwise. */
export const DEFAULT_REBALANCE_PERIOD_MS = 30_000;

/** The name of the Lease the weights are published in. */
export const balanceLeaseName = (group: string): string => `${group}-balance`;

/**
 * Publishing pays when the busiest share would fall by at least this part of the ideal share (and
 * by one CR at least): smaller gains are not worth the reconciles a handoff cancels.
 */
export const WORTHWHILE_GAIN = 0.05;

/** `3,0,12,…`: one non-negative integer per bucket. */
export function encodeWeights(weights: readonly number[]): string {
  return weights.join(',');
}

/** The weights `encodeWeights` wrote; undefined for anything else (another bucket count, a hand edit). */
export function decodeWeights(text: string | undefined, buckets: number): number[] | undefined {
  if (text === undefined) return undefined;
  const parts = text.split(',');
  if (parts.length !== buckets) return undefined;
  const weights = parts.map((p) => (/^\d{1,9}$/.test(p) ? Number(p) : NaN));
  return weights.every(Number.isInteger) ? weights : undefined;
}

/** The CRs in each bucket, from the CRs in each namespace. */
export function bucketLoads(byNamespace: ReadonlyMap<string, number>, bucketOf: (namespace: string) => number, buckets: number): number[] {
  const loads = new Array<number>(buckets).fill(0);
  for (const [namespace, crs] of byNamespace) {
    const b = bucketOf(namespace);
    if (b >= 0 && b < buckets) loads[b] = (loads[b] ?? 0) + crs;
  }
  return loads;
}

/** What the balance rule needs of a Lease of the group. */
export interface BalanceLease {
  readonly role: string;
  readonly record: { readonly holderIdentity: string };
  /** The writer's rule; undefined on a Lease from before docs/adr/0113. */
  readonly balance?: string;
  /** On the balance Lease: the published weights. */
  readonly weights?: readonly number[];
}

/**
 * The weights the group assigns by: the published ones, when every live peer's Lease says it
 * assigns by them; otherwise none (bucket count). A released or expired peer does not count.
 */
export function weightsInUse(leases: Iterable<BalanceLease>, live: ReadonlySet<string>): readonly number[] | undefined {
  let published: readonly number[] | undefined;
  let everyPeerBalances = true;
  for (const l of leases) {
    if (l.role === 'balance') published = l.weights;
    else if (l.role === 'peer' && live.has(l.record.holderIdentity) && l.balance !== SHARD_BALANCE) everyPeerBalances = false;
  }
  return everyPeerBalances ? published : undefined;
}

/** The peer that measures and publishes: the smallest live identity. */
export function balancer(live: ReadonlySet<string>): string | undefined {
  return [...live].sort()[0];
}

/** The CRs of each peer's share under `owners`, by `weights`. */
export function shareLoads(owners: ReadonlyMap<number, string>, weights: readonly number[]): Map<string, number> {
  const loads = new Map<string, number>();
  for (const [bucket, peer] of owners) loads.set(peer, (loads.get(peer) ?? 0) + (weights[bucket] ?? 0));
  return loads;
}

const busiest = (owners: ReadonlyMap<number, string>, weights: readonly number[]): number =>
  Math.max(0, ...shareLoads(owners, weights).values());

/**
 * Whether `measured` should replace the weights in use: it names some CRs, differs, and the
 * busiest share by it, assigned as now, would be lighter by at least {@link WORTHWHILE_GAIN} of the
 * ideal share assigned by it.
 */
export function worthPublishing(o: {
  readonly peers: readonly string[];
  readonly buckets: number;
  readonly inUse: readonly number[] | undefined;
  readonly measured: readonly number[];
}): boolean {
  const total = o.measured.reduce((sum, w) => sum + w, 0);
  if (total === 0 || o.peers.length === 0) return false;
  if (o.inUse !== undefined && encodeWeights(o.inUse) === encodeWeights(o.measured)) return false;
  const now = busiest(assignment(o.peers, o.buckets, o.inUse), o.measured);
  const next = busiest(assignment(o.peers, o.buckets, o.measured), o.measured);
  return now - next >= Math.max(1, (WORTHWHILE_GAIN * total) / o.peers.length);
}
