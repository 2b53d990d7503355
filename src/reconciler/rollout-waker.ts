/**
 * Wakes the next wave of a rollout when the one before it is decided (docs/adr/0061), so CRs that
 * wait need not each look at every health window of the wave under way: each look was a reconcile
 * (a GET of the CR, a LIST of its release records, often a status write) and made waved rollouts
 * cost a third more API requests than all at once. The decision is read from the controller's
 * cache (nextTurn); the timer is only when to read it, kept per watch in memory. Losing it (a
 * restart) costs latency, not correctness: a new leader reconciles every CR, and a waiting CR
 * still looks again after WAITING_FALLBACK_MS.
 */
import type { RolloutPolicy } from '../config/rollout-policy.js';
import { parseRequestKey, type ControllerHandle } from '../runtime/reconcile.js';
import { memberState, nextTurn, type Member } from './rollout-gate.js';
import { cachedMembers } from './rollout-members.js';

export class WaveWaker {
  #timer: { atMs: number; handle: NodeJS.Timeout } | undefined;
  #woken: { target: string; keys: Set<string> } = { target: '', keys: new Set() };

  constructor(
    private readonly policy: RolloutPolicy,
    private readonly now: () => number,
  ) {}

  /**
   * After a reconcile noted `self`: when it is decided now (healthy or failed on the target, as
   * `members` already say), wakes whom nextTurn names; a failure wakes the rest once, to say halted
   * (`newlyFailed`). `decideInMs`: when this CR's health window ends (read then from the cache).
   */
  after(controller: ControllerHandle, members: readonly Member[], self: Member, o: { target: string; newlyFailed: boolean; decideInMs?: number }): void {
    const { target } = o;
    const nowMs = this.now();
    if (o.decideInMs !== undefined) this.#arm(controller, target, nowMs + o.decideInMs);
    const state = memberState(self, target, this.policy, nowMs).kind;
    if (self.attempt?.fleetRevision !== target || (state !== 'healthy' && state !== 'failed')) return;
    this.#turn(controller, members, { target, nowMs, tellHalted: o.newlyFailed });
  }

  #turn(controller: ControllerHandle, members: readonly Member[], o: { target: string; nowMs: number; tellHalted: boolean }): void {
    const { target, nowMs, tellHalted } = o;
    const turn = nextTurn(members, target, this.policy, nowMs);
    if (turn.kind === 'none' || (turn.kind === 'halted' && !tellHalted)) return;
    if (turn.kind === 'next' && turn.atMs > nowMs) {
      this.#arm(controller, target, turn.atMs);
      return;
    }
    // Once per CR and target: the timer and the last CR decided often see the same turn, and a CR
    // queued again while it upgrades would be reconciled once more for nothing.
    if (this.#woken.target !== target) this.#woken = { target, keys: new Set() };
    for (const m of turn.wake) {
      if (this.#woken.keys.has(m.key)) continue;
      this.#woken.keys.add(m.key);
      controller.enqueue(parseRequestKey(m.key));
    }
  }

  /** One timer per watch, at the earliest time asked; when it fires it reads the cache and re-arms at the next health window end. */
  #arm(controller: ControllerHandle, target: string, atMs: number): void {
    if (this.#timer !== undefined && this.#timer.atMs <= atMs && this.#timer.atMs > this.now()) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer.handle);
    const handle = setTimeout(() => {
      this.#timer = undefined;
      this.#fire(controller, target);
    }, Math.max(0, atMs - this.now()));
    handle.unref();
    this.#timer = { atMs, handle };
  }

  #fire(controller: ControllerHandle, target: string): void {
    const nowMs = this.now();
    const members = cachedMembers(controller);
    this.#turn(controller, members, { target, nowMs, tellHalted: false });
    const next = Math.min(...members.map((m) => memberState(m, target, this.policy, nowMs)).map((s) => (s.kind === 'progressing' ? s.untilMs : Infinity)));
    if (Number.isFinite(next)) this.#arm(controller, target, next + DECIDE_MARGIN_MS);
  }
}

/** After a health window ends, so the look then finds it decided. */
export const DECIDE_MARGIN_MS = 500;
