/**
 * A gate whose width can change while work runs: the concurrency tuner resizes it, every
 * controller's reconciles pass through it (docs/adr/0059-self-tuning-concurrency.md). A narrower
 * width takes effect as running work finishes: nothing already started is interrupted.
 */
export class AdaptiveGate {
  #limit: number;
  #running = 0;
  readonly #waiting: (() => void)[] = [];
  /** Whether anything had to wait since the last {@link takeSaturated}. */
  #waited = false;

  constructor(limit: number) {
    this.#limit = checked(limit);
  }

  get limit(): number {
    return this.#limit;
  }

  set limit(limit: number) {
    this.#limit = checked(limit);
    this.#admit();
  }

  /** Work holding a slot now. */
  get running(): number {
    return this.#running;
  }

  /** Resolves with the slot's release once fewer than `limit` hold one; call the release exactly once. */
  async acquire(): Promise<() => void> {
    if (this.#running >= this.#limit || this.#waiting.length > 0) {
      this.#waited = true;
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#running++;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running--;
      this.#admit();
    };
  }

  /** Whether work waited for a slot since the last call (or waits now): more width could be used. */
  takeSaturated(): boolean {
    const saturated = this.#waited || this.#waiting.length > 0;
    this.#waited = false;
    return saturated;
  }

  #admit(): void {
    while (this.#running < this.#limit) {
      const next = this.#waiting.shift();
      if (next === undefined) return;
      this.#running++;
      next();
    }
  }
}

function checked(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`a gate's limit must be a positive integer, got ${limit}`);
  return limit;
}
