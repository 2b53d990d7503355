/**
 * Which CRs' releases a batched uninstall (one `helm uninstall a b c` for the CRs of a namespace
 * deleted together) holds right now, so that their own reconciles wait for it instead of running
 * helm alongside. In memory by nature: a claim lives only as long as the helm process it stands
 * for; after a restart every finalizer finds its release as it is.
 *
 * A claim is keyed by `namespace/name` (the release's name: a CR created again under the same name
 * shares it, so it must wait too) and belongs to one CR instance, its UID: only that instance may
 * take the batch's result as its own. Every claim is gone when its batch ends (`Batch.end`), so
 * nothing here outlives the batch: a later CR of the same name never reads an earlier one's
 * outcome, and the map holds at most the CRs of the batches running now.
 */
interface Claim {
  readonly uid: string;
  readonly promise: Promise<boolean>;
  readonly settle: (uninstalled: boolean) => void;
}

/** The claims one batch made: settled as helm reports each release, all dropped when it ends. */
export interface Batch {
  /** The names (in the batch's namespace) this batch claimed, in claim order. */
  readonly names: readonly string[];
  /** Claims `name` (CR `uid`) unless a batch holds it or its finalizer is running; whether it did. */
  claim(name: string, uid: string): boolean;
  /** Whether this batch claimed `name` for CR instance `uid` (not another instance of that name). */
  holds(name: string, uid: string | undefined): boolean;
  /** Settles `name`'s claim with whether its release was uninstalled (the first call counts). */
  settle(name: string, uninstalled: boolean): void;
  /**
   * Settles every claim not settled yet as not uninstalled and drops them all: from here on no
   * finalizer can read this batch's outcome. Returns the names it held.
   */
  end(): readonly string[];
}

export class UninstallClaims {
  readonly #claims = new Map<string, Claim>();
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
   * Runs the finalizer of CR `uid` at `key`, told whether a batch uninstalled its release: only
   * when a batch claimed this very instance and reported its release gone (after waiting for that
   * report). No batch can claim `key` while it runs. The claim is read and `key` marked before any
   * await, so no batch starting meanwhile takes it.
   */
  async finalize<T>(key: string, uid: string, finalizer: (uninstalledByBatch: boolean) => Promise<T>): Promise<T> {
    const claim = this.#claims.get(key);
    this.#finalizing.add(key);
    try {
      const batched = claim !== undefined && claim.uid === uid && (await claim.promise);
      return await finalizer(batched);
    } finally {
      this.#finalizing.delete(key);
    }
  }

  /** A new batch for releases of `namespace`; the caller must `end()` it whatever happens. */
  begin(namespace: string): Batch {
    const mine = new Map<string, Claim>();
    const key = (name: string): string => `${namespace}/${name}`;
    return {
      get names() {
        return [...mine.keys()];
      },
      claim: (name, uid) => {
        if (this.#claims.has(key(name)) || this.#finalizing.has(key(name))) return false;
        const { promise, resolve } = Promise.withResolvers<boolean>();
        const claim: Claim = { uid, promise, settle: resolve };
        this.#claims.set(key(name), claim);
        mine.set(name, claim);
        return true;
      },
      holds: (name, uid) => uid !== undefined && mine.get(name)?.uid === uid,
      settle: (name, uninstalled) => {
        mine.get(name)?.settle(uninstalled);
      },
      end: () => {
        for (const [name, claim] of mine) {
          claim.settle(false);
          if (this.#claims.get(key(name)) === claim) this.#claims.delete(key(name));
        }
        const names = [...mine.keys()];
        mine.clear();
        return names;
      },
    };
  }
}
