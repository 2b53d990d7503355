/**
 * The share of the namespaces a sharded replica's informers hold (docs/adr/0103, 0110): the buckets
 * it owns now, and how the watches are cut to them. `server`: the API server filters LIST and WATCH
 * by a `shardSelector` (KEP-5866, found by the one-time probe, shard-probe.ts) that names the owned
 * namespaces among those the replica knows (its CRs' namespaces, which every replica sees);
 * `client`: every object arrives. Either way the informers drop what is not the share's before
 * caching it, so a replica's caches hold its share only and their memory falls with the replicas.
 */
import { shareRanges, rangesInclude, shardSelectorOf, type HashRange } from './shard-selector.js';

/** Where objects outside the share are dropped: on the API server, or in the informer. */
export type ShardFilterMode = 'server' | 'client';

/** What an informer needs of the share it watches. */
export interface WatchShare {
  /** Where the filtering happens; fixed before the first informer starts. */
  mode(): ShardFilterMode;
  /** The `shardSelector` of the share now (`server` mode); undefined: everything. */
  selector(): string | undefined;
  /** Whether the informers hold objects of `namespace` once listed for the share as it is now. */
  covers(namespace: string): boolean;
  /** Called after each change of the share; returns the function that unsubscribes. */
  onChange(listener: () => void): () => void;
}

/** The operator's view of a share: it is also told which namespaces hold CRs. */
export interface LearningShare extends WatchShare {
  /** A namespace holding a CR of a watched kind (every replica sees every CR). */
  learn(namespace: string): void;
}

export interface BucketShareOptions {
  /** The bucket of a namespace: the coordinator's, so the share is exactly what it owns. */
  readonly bucketOf: (namespace: string) => number;
  /** Until {@link BucketShare.setMode}: `client`, which is right on every server. */
  readonly mode?: ShardFilterMode;
  /** At most this many ranges per selector (default shard-selector.ts's). */
  readonly maxRanges?: number;
}

/**
 * A share of namespace buckets, set by the coordinator's rounds (`set`), and the namespaces known to
 * hold CRs (`learn`), which the server-side selector names. Starts empty.
 */
export class BucketShare implements LearningShare {
  readonly #o: BucketShareOptions;
  #mode: ShardFilterMode;
  #owned = new Set<number>();
  readonly #known = new Set<string>();
  /** A namespace learnt since the selector was written is owned and not in it: rewrite at the next `set`. */
  #stale = false;
  #ranges: HashRange[] = [];
  #selector: string;
  readonly #listeners = new Set<() => void>();

  constructor(options: BucketShareOptions) {
    this.#o = options;
    this.#mode = options.mode ?? 'client';
    this.#selector = shardSelectorOf([]);
  }

  mode(): ShardFilterMode {
    return this.#mode;
  }

  /** The probe's verdict; set before informers start (a change later would need every informer relisted). */
  setMode(mode: ShardFilterMode): void {
    this.#mode = mode;
  }

  selector(): string {
    return this.#selector;
  }

  covers(namespace: string): boolean {
    if (!this.#owned.has(this.#o.bucketOf(namespace))) return false;
    return this.#mode === 'client' || rangesInclude(this.#ranges, namespace);
  }

  /** The buckets held now, ascending. */
  buckets(): number[] {
    return [...this.#owned].sort((a, b) => a - b);
  }

  /**
   * A namespace holding a CR: the selector will name it if it is owned. Not applied at once: a
   * namespace's first CRs arrive in bursts, and each rewrite relists every sharded informer; the
   * next `set` (every coordinator round) applies what was learnt. Meanwhile `covers` says no, so
   * readers ask the API server. In `client` mode every object arrives anyway: nothing to rewrite.
   */
  learn(namespace: string): void {
    if (namespace === '' || this.#known.has(namespace)) return;
    this.#known.add(namespace);
    if (this.#mode === 'server' && this.#owned.has(this.#o.bucketOf(namespace)) && !rangesInclude(this.#ranges, namespace)) {
      this.#stale = true;
    }
  }

  /** The buckets owned now; listeners hear of it only when the share (or its selector) differs. */
  set(buckets: Iterable<number>): void {
    const next = new Set(buckets);
    const same = next.size === this.#owned.size && [...next].every((b) => this.#owned.has(b));
    if (same && !this.#stale) return;
    this.#owned = next;
    this.#stale = false;
    const owned = [...this.#known].filter((ns) => next.has(this.#o.bucketOf(ns)));
    const others = [...this.#known].filter((ns) => !next.has(this.#o.bucketOf(ns)));
    this.#ranges = shareRanges(owned, others, this.#o.maxRanges);
    const selector = shardSelectorOf(this.#ranges);
    const moved = selector !== this.#selector;
    this.#selector = selector;
    // A client-mode informer lists everything: only the owned buckets matter to it.
    if (same && (this.#mode === 'client' || !moved)) return;
    for (const listener of [...this.#listeners]) listener();
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }
}
