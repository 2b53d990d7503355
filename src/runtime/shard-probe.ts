/**
 * Does this API server filter LIST and WATCH by KEP-5866's `shardSelector` (Kubernetes 1.36+ with
 * the `ShardedListAndWatch` gate)? Asked once, when a sharded replica starts (docs/adr/0103).
 *
 * A server without the gate, or older than 1.36, ignores the parameter and answers with every
 * object: its verdict must come from what is listed, not from what the server says of itself
 * (versions and gates are not readable by a client). So the probe lists the group's Leases in the
 * leader election namespace, where this replica's own peer Lease already is, twice: once with a
 * selector that excludes that namespace's hash (a filtering server returns none of them) and once
 * with one that includes it (it returns them). Only that pair proves filtering; anything else
 * (Leases returned by the excluding list, none by the including one, an error) means `client`,
 * which is correct on every server, merely heavier.
 *
 * Why not the `metadata.shardInfo` a filtered list echoes: kube-apiserver v1.36.3 filters custom
 * resources' lists without echoing it, so an echo cannot be asked of every list either.
 */
import { HttpMethod, type KubeConfig } from '../k8s/client-node.js';
import { RawClient } from '../k8s/raw-client.js';
import { rangesAround, shardSelectorOf } from './shard-selector.js';
import type { ShardFilterMode } from './watch-share.js';

export interface ShardProbeVerdict {
  readonly mode: ShardFilterMode;
  /** Why, for the log. */
  readonly reason: string;
}

/** Lists the probed collection with `shardSelector` and counts its items. */
export type ProbeList = (shardSelector: string) => Promise<number>;

/** The verdict from two LISTs of a collection of `namespace` holding at least one object (pure but for `list`). */
export async function probeShardFilter(list: ProbeList, namespace: string): Promise<ShardProbeVerdict> {
  const around = rangesAround(namespace);
  const excluding = shardSelectorOf(around.excluding);
  const including = shardSelectorOf(around.including);
  try {
    const leaked = await list(excluding);
    if (leaked > 0) return { mode: 'client', reason: `a selector excluding ${namespace} still listed ${leaked} of its objects` };
    const kept = await list(including);
    if (kept === 0) return { mode: 'client', reason: `nothing listed in ${namespace} to tell filtering by` };
    return { mode: 'server', reason: `the server lists ${namespace}'s objects only for a selector that includes it` };
  } catch (err) {
    return { mode: 'client', reason: `a sharded list failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** {@link probeShardFilter} over the Leases of `namespace` (the leader election's: our peer Lease is there). */
export function leaseProbeList(kubeConfig: KubeConfig, namespace: string): ProbeList {
  const client = kubeConfig.makeApiClient(RawClient);
  const path = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  return async (shardSelector) => {
    const body = (await client.request(HttpMethod.GET, path, { query: { shardSelector } })) as { items?: unknown };
    return Array.isArray(body.items) ? body.items.length : 0;
  };
}
