/**
 * Sharding's metrics (docs/adr/0085), per replica, on the operator's registry: a file of their own
 * beside metrics.ts, registered only when `--sharding` is on.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export type ShardHandoff = 'acquired' | 'released' | 'lost';

export class ShardMetrics {
  readonly #owned: Gauge;
  readonly #handoffs: Counter<'kind'>;
  readonly #filter: Gauge<'mode'>;
  readonly #rebalances: Counter;

  constructor(registry: Registry) {
    this.#owned = new Gauge({
      name: 'helm_operator_shard_buckets_owned',
      help: 'Namespace buckets this replica owns now (of 64), draining ones excluded',
      registers: [registry],
    });
    this.#handoffs = new Counter({
      name: 'helm_operator_shard_handoffs_total',
      help: 'Namespace buckets this replica took (acquired), handed off (released), or found taken (lost)',
      labelNames: ['kind'],
      registers: [registry],
    });
    for (const kind of ['acquired', 'released', 'lost'] as const) this.#handoffs.inc({ kind }, 0);
    this.#owned.set(0);
    this.#rebalances = new Counter({
      name: 'helm_operator_shard_rebalances_total',
      help: 'Times this replica, as the group balancer, published new CRs per bucket, moving the shares to balance them (docs/adr/0113)',
      registers: [registry],
    });
    this.#filter = new Gauge({
      name: 'helm_operator_shard_watch_filter',
      help: "Where this replica's informers drop the objects outside its share: 1 for the mode the start-up probe chose (server: KEP-5866 shardSelector; client: in the informer)",
      labelNames: ['mode'],
      registers: [registry],
    });
  }

  watchFilter(mode: 'server' | 'client'): void {
    this.#filter.set({ mode }, 1);
    this.#filter.set({ mode: mode === 'server' ? 'client' : 'server' }, 0);
  }

  owned(buckets: number): void {
    this.#owned.set(buckets);
  }

  handoff(kind: ShardHandoff): void {
    this.#handoffs.inc({ kind });
  }

  rebalanced(): void {
    this.#rebalances.inc();
  }
}
