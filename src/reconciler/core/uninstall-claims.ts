/**
 * Which CRs' releases a batched uninstall (one `helm uninstall a b c` for the CRs of a namespace
 * deleted together) holds right now, so that their own reconciles wait for it instead of running
 * helm alongside. In memory by nature: a claim lives only as long as the helm process it stands
 * for; after a restart every finalizer finds its release as it is.
 *
 * A claim is keyed by `namespace/name` (the release's name: a CR created again under the same name
 * shares it, so it must wait too) and belongs to one CR instance, its UID: the batch completes
 * (reports, removes the finalizer of) only that instance. Every claim is gone when its batch ends
 * (`Batch.end`), so nothing here outlives the batch: a held CR is queued again when the batch
 * ends and reads the release's storage, never an earlier batch's outcome, and the map holds at
 * most the CRs of the batches running now.
 */

/** The claims one batch made, all dropped when it ends. */
export interface Batch {
  /** The names (in the batch's namespace) this batch claimed, in claim order. */
  readonly names: readonly string[];
  /** Claims `name` (CR `uid`) unless a batch holds it or its finalizer is running; whether it did. */
  claim(name: string, uid: string): boolean;
  /** Whether this batch claimed `name` for CR instance `uid` (not another instance of that name). */
  holds(name: string, uid: string | undefined): boolean;
  /** Drops every claim of the batch; returns the names it held, for their CRs to be queued again. */
  end(): readonly string[];
}

export class UninstallClaims {
  /** `namespace/name` → the UID of the CR instance claimed. */
  readonly #claims = new Map<string, string>();
  readonly #finalizing = new Set<string>();

  /** Whether a batch running now holds the release `key` (`namespace/name`). */
  isHeld(key: string): boolean {
    return this.#claims.has(key);
  }

  /** How many claims are held now (a bound on memory, for tests). */
  get size(): number {
    return this.#claims.size;
  }

  /**
   * Runs the finalizer of the CR at `key`: no batch can claim `key` while it runs. `key` is marked
   * before any await, so no batch starting meanwhile takes it.
   */
  async finalizing<T>(key: string, finalizer: () => Promise<T>): Promise<T> {
    this.#finalizing.add(key);
    try {
      return await finalizer();
    } finally {
      this.#finalizing.delete(key);
    }
  }

  /** A new batch for releases of `namespace`; the caller must `end()` it whatever happens. */
  begin(namespace: string): Batch {
    const mine = new Map<string, string>();
    const key = (name: string): string => `${namespace}/${name}`;
    return {
      get names() {
        return [...mine.keys()];
      },
      claim: (name, uid) => {
        if (this.#claims.has(key(name)) || this.#finalizing.has(key(name))) return false;
        this.#claims.set(key(name), uid);
        mine.set(name, uid);
        return true;
      },
      holds: (name, uid) => uid !== undefined && mine.get(name) === uid,
      end: () => {
        const names = [...mine.keys()];
        for (const name of names) this.#claims.delete(key(name));
        mine.clear();
        return names;
      },
    };
  }
}
