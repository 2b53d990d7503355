/**
 * What an Event recorder writes for each event it is given, as client-go's EventCorrelator decides
 * it (docs/adr/0063-event-correlation.md), in memory and pure (the clock is passed in):
 *
 * 1. **aggregate**: past `maxSimilar` distinct messages of one (object, type, reason) within the
 *    window, further ones share one Event whose message says it is combined;
 * 2. **deduplicate**: a repeat of an (object, type, reason, message) within the window updates the
 *    count of its Event instead of creating one;
 * 3. **spam filter**: a token bucket per object (`burst`, one token per `refillMs`) takes a token
 *    for every write, create or update; without one the write is dropped. The count still goes
 *    up, so the next update that gets through carries every repeat.
 *
 * Each map is bounded (`maxKeys`, least recently used first out) and drops what the window has
 * left behind, so a CR long deleted (its UID is in every key) is not kept for the process's life.
 */

export interface CorrelatorLimits {
  /** A repeat within this long of the last one updates the same Event. */
  readonly windowMs: number;
  /** Entries each map keeps at most. */
  readonly maxKeys: number;
  /** Writes one object may make in a burst. */
  readonly burst: number;
  /** A write more per this long, once the burst is spent. */
  readonly refillMs: number;
  /** Distinct messages of one (object, type, reason) within the window before they are combined. */
  readonly maxSimilar: number;
}

/** client-go's defaults: 10 minutes, 4096 entries, 25 writes then one per 5 minutes, 10 similar. */
export const CLIENT_GO_LIMITS: CorrelatorLimits = { windowMs: 10 * 60_000, maxKeys: 4096, burst: 25, refillMs: 5 * 60_000, maxSimilar: 10 };

export const COMBINED_PREFIX = '(combined from similar events): ';

export interface EventRef {
  readonly name: string;
  readonly namespace: string;
}

export type Verdict =
  | { readonly write: 'create'; readonly key: string; readonly message: string; readonly count: number }
  | { readonly write: 'update'; readonly key: string; readonly message: string; readonly event: EventRef; readonly count: number }
  | { readonly write: 'drop'; readonly why: 'rate-limited' };

interface Seen {
  event?: EventRef;
  count: number;
  lastAt: number;
}

interface Similar {
  readonly messages: Set<string>;
  lastAt: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class EventCorrelator {
  readonly #seen = new Map<string, Seen>();
  readonly #similar = new Map<string, Similar>();
  readonly #buckets = new Map<string, Bucket>();

  constructor(private readonly limits: CorrelatorLimits = CLIENT_GO_LIMITS) {}

  /** What to write for this event about `object` (its UID, or a name when it has none). */
  correlate(
    e: { readonly object: string; readonly type: string; readonly reason: string; readonly message: string },
    now: number,
  ): Verdict {
    const { object, type, reason, message } = e;
    this.#expire(now);
    const combined = this.#combined([object, type, reason].join('\u0000'), message, now);
    const key = [object, type, reason, combined ? COMBINED_PREFIX : message].join('\u0000');
    const text = combined ? `${COMBINED_PREFIX}${message}` : message;
    const seen = touch(this.#seen, key, (s) => now - s.lastAt < this.limits.windowMs) ?? { count: 0, lastAt: now };
    seen.count++;
    seen.lastAt = now;
    this.#seen.set(key, seen);
    bound(this.#seen, this.limits.maxKeys);
    if (!this.#take(object, now)) return { write: 'drop', why: 'rate-limited' };
    const { count, event } = seen;
    return event === undefined ? { write: 'create', key, message: text, count } : { write: 'update', key, message: text, event, count };
  }

  /** The Event `key` now exists as `event`: its repeats update it. */
  created(key: string, event: EventRef): void {
    const seen = this.#seen.get(key);
    if (seen !== undefined) seen.event = event;
  }

  /** A write for `key` failed: its next occurrence starts a new Event. */
  forget(key: string): void {
    this.#seen.delete(key);
  }

  /** Events a repeat could still update. */
  get events(): number {
    return this.#seen.size;
  }

  /** Entries kept, in all maps (a bound on memory, for tests). */
  get size(): number {
    return this.#seen.size + this.#similar.size + this.#buckets.size;
  }

  /** Whether `message` goes into the combined Event: its (object, type, reason) showed `maxSimilar` others. */
  #combined(similarKey: string, message: string, now: number): boolean {
    const similar = touch(this.#similar, similarKey, (s) => now - s.lastAt < this.limits.windowMs) ?? {
      messages: new Set<string>(),
      lastAt: now,
    };
    similar.lastAt = now;
    this.#similar.set(similarKey, similar);
    bound(this.#similar, this.limits.maxKeys);
    if (similar.messages.has(message)) return false;
    if (similar.messages.size < this.limits.maxSimilar) {
      similar.messages.add(message);
      return false;
    }
    return true;
  }

  /** Takes a token of `object`'s bucket; false when it has none. */
  #take(object: string, now: number): boolean {
    const { burst, refillMs } = this.limits;
    const bucket = touch(this.#buckets, object, () => true) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + (now - bucket.at) / refillMs);
    bucket.at = now;
    this.#buckets.set(object, bucket);
    bound(this.#buckets, this.limits.maxKeys);
    if (bucket.tokens < 1) return false;
    bucket.tokens--;
    return true;
  }

  /** Drops what the window left behind: each map is in last-use order, so the stale are first. */
  #expire(now: number): void {
    const { windowMs, burst, refillMs } = this.limits;
    dropWhile(this.#seen, (s) => now - s.lastAt >= windowMs);
    dropWhile(this.#similar, (s) => now - s.lastAt >= windowMs);
    // A bucket that has filled up again is the same as none.
    dropWhile(this.#buckets, (b) => b.tokens + (now - b.at) / refillMs >= burst);
  }
}

/** The entry at `key` if `live` says it still counts, moved out (the caller sets it again, last). */
function touch<V>(map: Map<string, V>, key: string, live: (v: V) => boolean): V | undefined {
  const v = map.get(key);
  map.delete(key);
  return v !== undefined && live(v) ? v : undefined;
}

function bound<V>(map: Map<string, V>, max: number): void {
  for (const k of map.keys()) {
    if (map.size <= max) return;
    map.delete(k);
  }
}

function dropWhile<V>(map: Map<string, V>, stale: (v: V) => boolean): void {
  for (const [k, v] of map) {
    if (!stale(v)) return;
    map.delete(k);
  }
}
