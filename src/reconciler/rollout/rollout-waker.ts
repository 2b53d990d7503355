/**
 * Wakes the next wave of a rollout when the one before it is decided (docs/adr/0061), so CRs that
 * wait need not each look at every health window of the wave under way: each look was a reconcile
 * (a GET of the CR, a LIST of its release records, often a status write) and made waved rollouts
 * cost a third more API requests than all at once. The decision is read from the controller's
 * cache (nextTurn); the timer is only when to read it, kept per watch in memory. Both go through
 * the controller's request source ({@link Wakeups}, docs/adr/0073): the timer runs on its clock and
 * is cancelled when the controller stops, and a woken CR is a request the controller queues, never
 * a call into it. Losing the timer (a restart) costs latency, not correctness: a new leader
 * reconciles every CR, and a waiting CR still looks again after WAITING_FALLBACK_MS.
 */
import type { RolloutPolicy } from '../../config/rollout-policy.js';
import { parseRequestKey } from '../../runtime/reconcile.js';
import type { Wakeups } from '../../runtime/requeue-source.js';
import type { Timer } from '../../util/clock.js';
import { memberState, nextTurn, type Member } from './rollout-gate.js';

export interface WaveWakerOptions {
  readonly policy: RolloutPolicy;
  readonly wakeups: Wakeups;
  /** Every CR of the kind as the gate sees it, read from the controller's cache when a timer fires. */
  readonly members: () => readonly Member[];
  readonly now: () => number;
}

export class WaveWaker {
  #timer: { atMs: number; timer: Timer } | undefined;
  #woken: { target: string; keys: Set<string> } = { target: '', keys: new Set() };

  constructor(private readonly o: WaveWakerOptions) {}

  /**
   * After a reconcile noted `self`: when it is decided now (healthy or failed on the target, as
   * `members` already say), wakes whom nextTurn names; a failure wakes the rest once, to say halted
   * (`newlyFailed`). `decideInMs`: when this CR's health window ends (read then from the cache).
   * Sharded (docs/adr/0096), a wake of a CR another replica owns is dropped by the controller: that
   * replica wakes it, having seen the same CR decided in its own cache (Rollout.observe).
   */
  after(members: () => readonly Member[], self: Member, o: { target: string; newlyFailed: boolean; decideInMs?: number }): void {
    const { target } = o;
    const nowMs = this.o.now();
    if (o.decideInMs !== undefined) this.#arm(target, nowMs + o.decideInMs);
    const state = memberState(self, target, this.o.policy, nowMs).kind;
    if (self.attempt?.fleetRevision !== target || (state !== 'healthy' && state !== 'failed')) return;
    // Read only now: walking the cache is O(CRs), and most looks end above.
    this.#turn(members(), { target, nowMs, tellHalted: o.newlyFailed });
  }

  #turn(members: readonly Member[], o: { target: string; nowMs: number; tellHalted: boolean }): void {
    const { target, nowMs, tellHalted } = o;
    const turn = nextTurn(members, target, this.o.policy, nowMs);
    if (turn.kind === 'none' || (turn.kind === 'halted' && !tellHalted)) return;
    if (turn.kind === 'next' && turn.atMs > nowMs) {
      this.#arm(target, turn.atMs);
      return;
    }
    // Once per CR and target: the timer and the last CR decided often see the same turn, and a CR
    // queued again while it upgrades would be reconciled once more for nothing.
    if (this.#woken.target !== target) this.#woken = { target, keys: new Set() };
    for (const m of turn.wake) {
      if (this.#woken.keys.has(m.key)) continue;
      this.#woken.keys.add(m.key);
      this.o.wakeups.request(parseRequestKey(m.key));
    }
  }

  /** One timer per watch, at the earliest time asked; when it fires it reads the cache and re-arms at the next health window end. */
  #arm(target: string, atMs: number): void {
    if (this.#timer !== undefined && this.#timer.atMs <= atMs && this.#timer.atMs > this.o.now()) return;
    this.#timer?.timer.cancel();
    const timer = this.o.wakeups.at(atMs, () => {
      this.#timer = undefined;
      this.#fire(target);
    });
    this.#timer = { atMs, timer };
  }

  #fire(target: string): void {
    const nowMs = this.o.now();
    const members = this.o.members();
    this.#turn(members, { target, nowMs, tellHalted: false });
    const next = Math.min(
      ...members.map((m) => memberState(m, target, this.o.policy, nowMs)).map((s) => (s.kind === 'progressing' ? s.untilMs : Infinity)),
    );
    if (Number.isFinite(next)) this.#arm(target, next + DECIDE_MARGIN_MS);
  }
}

/** After a health window ends, so the look then finds it decided. */
export const DECIDE_MARGIN_MS = 500;
