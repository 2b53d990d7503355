/**
 * The releases a helm process of this operator may still be changing. A process counts from its
 * spawn until it has exited and closed its output (execa settles only then), whether or not its
 * caller still waits: a controller that gave up on a cancelled helm (Controller.stop's grace is
 * shorter than helm's SIGTERM-to-SIGKILL delay) leaves it here until it is really gone, so the
 * next controller can tell a live operation from an abandoned `pending-*` revision (ADR 0036).
 */
export class LiveReleases {
  readonly #count = new Map<string, number>();

  /** Counts one more process for the release; the returned function uncounts it (once). */
  track(namespace: string, release: string): () => void {
    const key = `${namespace}/${release}`;
    this.#count.set(key, (this.#count.get(key) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.#count.get(key) ?? 1) - 1;
      if (left > 0) this.#count.set(key, left);
      else this.#count.delete(key);
    };
  }

  has(namespace: string, release: string): boolean {
    return this.#count.has(`${namespace}/${release}`);
  }
}
