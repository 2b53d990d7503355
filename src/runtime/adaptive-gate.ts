/**
 * A gate whose width can change while work runs: the concurrency tuner resizes it, every
 * controller's reconciles pass through it (docs/adr/0059-self-tuning-concurrency.md). A narrower
 * width takes effect as running work finishes: nothing already started is interrupted.
 *
 * Work may name its flow (a reconcile's namespace). A flow that holds no slot enters past the
 * width, up to `ceiling`: the width is the tuner's trade of throughput against CPU, and must not
 * undo what the queue's share per namespace guarantees (ADR 0041): installs of one tenant that
 * hang on a hook hold every slot of a narrowed gate, and another tenant's CR would wait for helm's
 * timeout (ADR 0059, consequences).
 */
export class AdaptiveGate {
  #limit: number;
  readonly #ceiling: number;
  #running = 0;
  readonly #held = new Map<string, number>();
  readonly #waiting: { readonly flow: string | undefined; readonly admit: () => void }[] = [];
  /** Whether anything had to wait since the last {@link takeSaturated}. */
  #waited = false;

  /** `ceiling`: how many may run at most, the flows let past the width included; default the width. */
  constructor(limit: number, ceiling?: number) {
    this.#limit = checked(limit);
    this.#ceiling = ceiling === undefined ? Number.POSITIVE_INFINITY : checked(ceiling);
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

  /**
   * Resolves with the slot's release once fewer than `limit` hold one, or at once for a `flow`
   * that holds none (below the ceiling); call the release exactly once.
   */
  async acquire(flow?: string): Promise<() => void> {
    if (this.#exempt(flow) || (this.#running < this.#limit && this.#waiting.length === 0)) this.#take(flow);
    else {
      this.#waited = true;
      await new Promise<void>((resolve) => this.#waiting.push({ flow, admit: resolve }));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running--;
      if (flow !== undefined) {
        const left = (this.#held.get(flow) ?? 1) - 1;
        if (left === 0) this.#held.delete(flow);
        else this.#held.set(flow, left);
      }
      this.#admit();
    };
  }

  /** Whether work waited for a slot since the last call (or waits now): more width could be used. */
  takeSaturated(): boolean {
    const saturated = this.#waited || this.#waiting.length > 0;
    this.#waited = false;
    return saturated;
  }

  /** A flow that holds no slot, below the ceiling. */
  #exempt(flow: string | undefined): boolean {
    return flow !== undefined && !this.#held.has(flow) && this.#running < this.#ceiling;
  }

  #take(flow: string | undefined): void {
    this.#running++;
    if (flow !== undefined) this.#held.set(flow, (this.#held.get(flow) ?? 0) + 1);
  }

  /** In arrival order, those the width lets in, and past it those whose flow holds no slot. */
  #admit(): void {
    for (let i = 0; i < this.#waiting.length;) {
      const next = this.#waiting[i];
      if (next === undefined || (this.#running >= this.#limit && !this.#exempt(next.flow))) {
        i++;
        continue;
      }
      this.#waiting.splice(i, 1);
      this.#take(next.flow);
      next.admit();
    }
  }
}

/** What a controller needs of the gate: a slot per reconcile, named by its namespace. */
export type ConcurrencyGate = Pick<AdaptiveGate, 'acquire'>;

function checked(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`a gate's limit must be a positive integer, got ${limit}`);
  return limit;
}
