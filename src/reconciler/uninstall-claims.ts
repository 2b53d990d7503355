/**
 * Which CRs' releases a batched uninstall (one `helm uninstall a b c` for the CRs of a namespace
 * deleted together) has taken along, so that their own finalizers wait for it instead of running
 * helm alongside. Keys are `namespace/name`. In memory by nature: a claim lives only as long as
 * the helm process it stands for; after a restart every finalizer finds its release as it is.
 */
interface Claim {
  readonly promise: Promise<boolean>;
  done: boolean;
}

export class UninstallClaims {
  readonly #claims = new Map<string, Claim>();
  readonly #finalizing = new Set<string>();

  /** Whether a batch still running holds `key`'s release. */
  isHeld(key: string): boolean {
    return this.#claims.get(key)?.done === false;
  }

  /**
   * Runs `key`'s finalizer, told whether a batch uninstalled its release (after waiting for that
   * batch); no batch can claim `key` while it runs. The claim is read and `key` marked before any
   * await, so no batch starting meanwhile takes it.
   */
  async finalize<T>(key: string, finalizer: (batched: boolean) => Promise<T>): Promise<T> {
    const claim = this.#claims.get(key);
    this.#finalizing.add(key);
    try {
      const batched = (await claim?.promise) === true;
      this.#claims.delete(key);
      return await finalizer(batched);
    } finally {
      this.#finalizing.delete(key);
    }
  }

  /**
   * Claims `key` for a batch, unless a batch holds it already or its finalizer is running; the
   * returned function settles the claim with whether its release was uninstalled (once; later
   * calls change nothing).
   */
  claim(key: string): ((uninstalled: boolean) => void) | undefined {
    if (this.#claims.has(key) || this.#finalizing.has(key)) return undefined;
    const { promise, resolve } = Promise.withResolvers<boolean>();
    const claim: Claim = { promise, done: false };
    this.#claims.set(key, claim);
    return (uninstalled) => {
      claim.done = true;
      resolve(uninstalled);
    };
  }
}
