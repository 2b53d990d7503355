/**
 * The share of the namespaces a sharded replica's informers hold (docs/adr/0103): the buckets it
 * owns now, and how the watches are cut to them. `server`: the API server filters LIST and WATCH
 * by the share's `shardSelector` (KEP-5866, found by the one-time probe, shard-probe.ts);
 * `client`: every object still arrives, and the informers drop the others' before caching them.
 * Either way a replica's caches hold its share only, so their memory falls with the replicas.
 */
import { SHARD_BUCKETS } from './shard-assignment.js';
import { shardSelectorOf } from './shard-selector.js';

/** Where objects outside the share are dropped: on the API server, or in the informer. */
export type ShardFilterMode = 'server' | 'client';

/** What an informer needs of the share it watches. */
export interface WatchShare {
  /** Where the filtering happens; fixed before the first informer starts. */
  mode(): ShardFilterMode;
  /** The `shardSelector` of the share now (`server` mode); undefined: everything. */
  selector(): string | undefined;
  /** Whether objects of `namespace` belong to the share now. */
  covers(namespace: string): boolean;
  /** Called after each change of the share; returns the function that unsubscribes. */
  onChange(listener: () => void): () => void;
}

export interface BucketShareOptions {
  /** The bucket of a namespace: the coordinator's, so the share is exactly what it owns. */
  readonly bucketOf: (namespace: string) => number;
  readonly buckets?: number;
  /** Until {@link BucketShare.setMode}: `client`, which is right on every server. */
  readonly mode?: ShardFilterMode;
}

/** A share of namespace buckets, set by the coordinator's rounds (`set`). Starts empty. */
export class BucketShare implements WatchShare {
  readonly #o: BucketShareOptions;
  readonly #total: number;
  #mode: ShardFilterMode;
  #owned = new Set<number>();
  #selector: string | undefined;
  readonly #listeners = new Set<() => void>();

  constructor(options: BucketShareOptions) {
    this.#o = options;
    this.#total = options.buckets ?? SHARD_BUCKETS;
    this.#mode = options.mode ?? 'client';
    this.#selector = shardSelectorOf([], this.#total);
  }

  mode(): ShardFilterMode {
    return this.#mode;
  }

  /** The probe's verdict; set before informers start (a change later would need every informer relisted). */
  setMode(mode: ShardFilterMode): void {
    this.#mode = mode;
  }

  selector(): string | undefined {
    return this.#selector;
  }

  covers(namespace: string): boolean {
    return this.#owned.has(this.#o.bucketOf(namespace));
  }

  /** The buckets held now, ascending. */
  buckets(): number[] {
    return [...this.#owned].sort((a, b) => a - b);
  }

  /** The buckets owned now; listeners hear of it only when the set differs. */
  set(buckets: Iterable<number>): void {
    const next = new Set(buckets);
    if (next.size === this.#owned.size && [...next].every((b) => this.#owned.has(b))) return;
    this.#owned = next;
    this.#selector = shardSelectorOf(next, this.#total);
    for (const listener of [...this.#listeners]) listener();
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }
}
