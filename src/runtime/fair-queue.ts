/**
 * Keys in one FIFO per flow (a namespace), handed out round-robin across flows, one key per turn:
 * fair queuing with a quantum of one key, as the API server's priority and fairness queues requests
 * per flow. A flow that starts waiting joins the end of the round, so a key of a new flow waits for
 * at most one key of every other waiting flow, however deep their backlogs. Not a set: the caller
 * dedupes.
 */
export class FairQueue {
  /** Waiting keys per flow, FIFO; only flows with keys. */
  readonly #flows = new Map<string, string[]>();
  /** Flows with waiting keys, in turn order: the first is served next. */
  #turns: string[] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(flow: string, key: string): void {
    const keys = this.#flows.get(flow);
    if (keys === undefined) {
      this.#flows.set(flow, [key]);
      this.#turns.push(flow);
    } else {
      keys.push(key);
    }
    this.#size++;
  }

  /** Removes `key` from `flow`; whether it was there. */
  remove(flow: string, key: string): boolean {
    const keys = this.#flows.get(flow);
    const at = keys?.indexOf(key) ?? -1;
    if (keys === undefined || at < 0) return false;
    keys.splice(at, 1);
    this.#size--;
    if (keys.length === 0) this.#drop(flow);
    return true;
  }

  /**
   * The oldest key of the first flow in turn order that `eligible` accepts; that flow then goes to
   * the end of the round. Skipped flows keep their place, so they come first once eligible again.
   */
  shift(eligible: (flow: string) => boolean = () => true): string | undefined {
    const turn = this.#turns.findIndex(eligible);
    if (turn < 0) return undefined;
    const flow = this.#turns[turn] as string;
    const keys = this.#flows.get(flow) as string[];
    const key = keys.shift() as string;
    this.#size--;
    this.#turns.splice(turn, 1);
    if (keys.length === 0) this.#flows.delete(flow);
    else this.#turns.push(flow);
    return key;
  }

  clear(): void {
    this.#flows.clear();
    this.#turns = [];
    this.#size = 0;
  }

  #drop(flow: string): void {
    this.#flows.delete(flow);
    this.#turns = this.#turns.filter((f) => f !== flow);
  }
}
