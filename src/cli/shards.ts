/**
 * `helm-operator shards [--id GROUP] [--operator-namespace NS] [-n NAMESPACE] [-o json]`: who owns
 * what when replicas share the namespaces (docs/adr/0085, 0096). It reads the group's Leases only,
 * once, and decodes them as the coordinator does (runtime/shard-view.ts): the live replicas, the
 * buckets each holds, the handoffs under way, the peers gone; with `-n`, a namespace's bucket and
 * its owner.
 */
import { Command, Option } from 'commander';
import { loadKubeConfig } from '../k8s/kubeconfig.js';
import { KubeShardLeaseStore } from '../runtime/shard-lease-store.js';
import { SHARD_HASH } from '../runtime/shard-assignment.js';
import { bucketRanges, liveByRecord, shardGroupView, type ShardGroupView } from '../runtime/shard-view.js';
import { RolloutError } from './rollout.js';

export interface ShardsFlags {
  /** The group: `--leader-election-id` of the replicas. */
  readonly id?: string;
  /** Where their Leases are: `--leader-election-namespace`. */
  readonly operatorNamespace?: string;
  readonly namespace?: string;
  readonly output: 'text' | 'json';
  readonly kubeconfig?: string;
}

export function defineShardsCommand(action: (f: ShardsFlags) => Promise<void>): Command {
  return new Command('shards')
    .description('Show which replica owns which namespaces with --sharding: replicas, buckets, handoffs (docs/adr/0085)')
    .addOption(new Option('--id <name>', "the replicas' --leader-election-id").env('OPERATOR_NAME'))
    .addOption(
      new Option('--operator-namespace <namespace>', "the replicas' --leader-election-namespace, where their Leases are").env(
        'OPERATOR_NAMESPACE',
      ),
    )
    .addOption(new Option('-n, --namespace <namespace>', 'also say which bucket this namespace hashes to, and its owner'))
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    .addOption(new Option('--kubeconfig <file>', 'path to the kubeconfig file to use for CLI requests'))
    .action((o: ShardsFlags) => action(o));
}

export async function shardsCommand(f: ShardsFlags, nowMs = Date.now()): Promise<string> {
  if (f.id === undefined || f.id === '') throw new RolloutError("shards needs --id (or OPERATOR_NAME): the replicas' --leader-election-id");
  if (f.operatorNamespace === undefined || f.operatorNamespace === '')
    throw new RolloutError("shards needs --operator-namespace (or OPERATOR_NAMESPACE): where the replicas' Leases are");
  const store = new KubeShardLeaseStore(loadKubeConfig(f.kubeconfig), f.operatorNamespace, f.id);
  const leases = await store.list();
  if (leases.length === 0)
    throw new RolloutError(
      `no shard Leases of group ${f.id} in namespace ${f.operatorNamespace}: is the operator running with --sharding?`,
    );
  const view = shardGroupView({
    group: f.id,
    leases,
    live: liveByRecord(nowMs),
    ...(f.namespace === undefined ? {} : { namespace: f.namespace }),
  });
  return f.output === 'json' ? JSON.stringify(view, null, 2) : shardsText(view, nowMs);
}

/** Pure: the report `shards` prints. */
export function shardsText(v: ShardGroupView, nowMs: number): string {
  const live = v.peers.filter((p) => p.state === 'live');
  const held = new Set(v.peers.flatMap((p) => p.holds)).size;
  const lines = [
    `shard group ${v.group}: ${live.length} live replica${live.length === 1 ? '' : 's'}, ${held} of ${v.buckets} buckets held, ${v.handoffs.length} handoff${v.handoffs.length === 1 ? '' : 's'} under way, shares balanced by ${v.balancedBy === 'crs' ? 'CRs (docs/adr/0113)' : 'bucket count'}`,
    'REPLICA  STATE  RENEWED  HOLDS  CRS  BUCKETS',
    ...v.peers.map(
      (p) =>
        `${p.identity === '' ? '-' : p.identity}  ${p.state}  ${ago(p.renewed, nowMs)}  ${p.holds.length}  ${p.load ?? '-'}  ${p.holds.length === 0 ? '-' : bucketRanges(p.holds)}`,
    ),
  ];
  const strangers = live.filter((p) => p.hash !== SHARD_HASH);
  if (strangers.length > 0) {
    lines.push(
      `bucket functions differ: ${strangers.map((p) => `${p.identity} runs ${p.hash}`).join(', ')}; replicas on ${SHARD_HASH} own nothing until they leave (docs/adr/0110)`,
    );
  }
  for (const h of v.handoffs) {
    const from = h.state === 'free' ? 'free' : `${h.state} from ${h.holder} (epoch ${h.epoch})`;
    lines.push(`handoff: bucket ${h.bucket} ${from}, to ${h.to ?? 'nobody (no live replica)'}`);
  }
  const ns = v.namespace;
  if (ns !== undefined) {
    const holder = ns.holder === '' ? 'nobody' : `${ns.holder} (epoch ${ns.epoch})`;
    const moving = ns.owner !== undefined && ns.owner !== ns.holder ? `, moving to ${ns.owner}` : '';
    lines.push(`namespace ${ns.namespace}: bucket ${ns.bucket}, held by ${holder}${moving}`);
  }
  return lines.join('\n');
}

function ago(iso: string, nowMs: number): string {
  const s = Math.max(0, Math.round((nowMs - Date.parse(iso)) / 1000));
  return `${s}s ago`;
}
