/**
 * Whether a CR may take a fleet change now (docs/adr/0056): a pure function of the watch's policy
 * and what the cluster says of every CR of the kind (each one's fleet revision, Ready condition,
 * and last attempt), so a restarted operator or a new leader decides exactly as the old one would
 * have. Nothing here is remembered between calls.
 */
import type { Amount, RolloutPolicy } from '../../config/rollout-policy.js';
import { selectorMatches } from '../../config/selector.js';
import type { Reason } from '../status/conditions.js';
import type { ApprovedPlan } from '../status/status.js';

/** One CR of the kind as the gate sees it (rollout-members.ts reads it from the controller's cache). */
export interface Member {
  /** `namespace/name`: the rollout order. */
  readonly key: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The fleet revision of its deployed release; undefined: unknown (deployed before rollouts). */
  readonly fleetRevision?: string;
  readonly attempt?: {
    readonly fleetRevision: string;
    readonly atMs: number;
    readonly failed: boolean;
    /** The plan approved for the move (rollout-approval.ts); absent: it went without an approval. */
    readonly approvedPlan?: ApprovedPlan;
  };
  readonly ready?: { readonly status: string; readonly sinceMs: number };
}

export type MemberState =
  /** Not on the target yet. */
  | { readonly kind: 'pending' }
  /** On the target, not yet healthy for long enough; `untilMs`: when that is decided either way. */
  | { readonly kind: 'progressing'; readonly untilMs: number }
  | { readonly kind: 'healthy'; readonly stableAtMs: number }
  | { readonly kind: 'failed' };

export function memberState(m: Member, target: string, policy: RolloutPolicy, nowMs: number): MemberState {
  const attempt = m.attempt?.fleetRevision === target ? m.attempt : undefined;
  if (attempt?.failed === true) return { kind: 'failed' };
  if (m.fleetRevision !== target) return { kind: 'pending' };
  // On the target by an install or its own change, not moved by the rollout: nothing to gate on.
  if (attempt === undefined) return { kind: 'healthy', stableAtMs: 0 };
  if (m.ready?.status === 'True') {
    const stableAtMs = Math.max(m.ready.sinceMs, attempt.atMs) + policy.stableForMs;
    return stableAtMs <= nowMs ? { kind: 'healthy', stableAtMs } : { kind: 'progressing', untilMs: stableAtMs };
  }
  const untilMs = attempt.atMs + policy.healthTimeoutMs;
  return untilMs < nowMs ? { kind: 'failed' } : { kind: 'progressing', untilMs };
}

/** The CRs in rollout order, wave by wave: the canaries, then waves of the policy's size. */
export function waves(members: readonly Member[], policy: RolloutPolicy): Member[][] {
  const sorted = [...members].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const c = policy.canary;
  const canaries = 'selector' in c ? sorted.filter((m) => selectorMatches(c.selector, m.labels)) : sorted.slice(0, c.count);
  const rest = sorted.filter((m) => !canaries.includes(m));
  const size = Math.max(1, share(policy.waveSize, members.length, Math.ceil));
  const out: Member[][] = canaries.length > 0 ? [canaries] : [];
  for (let i = 0; i < rest.length; i += size) out.push(rest.slice(i, i + size));
  return out;
}

const share = (a: Amount, total: number, round: (n: number) => number): number =>
  'count' in a ? a.count : round((a.percent * total) / 100);

export interface Progress {
  readonly total: number;
  readonly onTarget: number;
  readonly failed: number;
  readonly halted: boolean;
}

export function progress(members: readonly Member[], target: string, policy: RolloutPolicy, nowMs: number): Progress {
  const states = members.map((m) => memberState(m, target, policy, nowMs));
  const failed = states.filter((s) => s.kind === 'failed').length;
  const onTarget = states.filter((s) => s.kind === 'healthy' || s.kind === 'progressing').length;
  return { total: members.length, onTarget, failed, halted: failed > share(policy.failureBudget, members.length, Math.floor) };
}

export interface GateInput {
  readonly policy: RolloutPolicy;
  readonly target: string;
  readonly members: readonly Member[];
  /** The CR asking; it is among `members`. */
  readonly self: string;
  readonly paused: boolean;
  readonly nowMs: number;
  /** How often a CR waiting on others looks again (per wave between it and the one under way). */
  readonly pollMs: number;
}

/** How long a CR waiting for earlier waves goes without looking, unless their last CR wakes it. */
export const WAITING_FALLBACK_MS = 30_000;

/** The rollout's reasons of conditions.ts: `rollout status` and the status read them by these names. */
export type WaitReason = (typeof Reason)['RolloutPaused' | 'RolloutFailed' | 'RolloutHalted' | 'RolloutWaiting'];

export type Verdict =
  | { readonly kind: 'go' }
  | { readonly kind: 'wait'; readonly reason: WaitReason; readonly message: string; readonly retryAfterMs?: number };

export function gate(g: GateInput): Verdict {
  const { policy, target, nowMs } = g;
  const p = progress(g.members, target, policy, nowMs);
  const all = waves(g.members, policy);
  const w = all.findIndex((wave) => wave.some((m) => m.key === g.self));
  const self = all[w]?.find((m) => m.key === g.self);
  if (self === undefined) return { kind: 'go' };
  if (memberState(self, target, policy, nowMs).kind === 'failed') {
    return {
      kind: 'wait',
      reason: 'RolloutFailed',
      message: `this CR failed fleet revision ${target}; it is not retried until a newer chart, or \`helm-operator rollout undo\``,
    };
  }
  if (g.paused)
    return {
      kind: 'wait',
      reason: 'RolloutPaused',
      message: `the rollout of fleet revision ${target} is paused (\`helm-operator rollout resume\`)`,
      retryAfterMs: g.pollMs,
    };
  if (p.halted) {
    const message = `the rollout of fleet revision ${target} halted: ${p.failed} of ${p.total} CRs failed it, beyond the failure budget; this CR keeps its release (see \`helm-operator rollout status\`)`;
    return { kind: 'wait', reason: 'RolloutHalted', message, retryAfterMs: g.pollMs };
  }
  return earlierWaves(g, all, w);
}

/** Every CR of the waves before `w` must be healthy (or failed within the budget), then the pause must pass. */
function earlierWaves(g: GateInput, all: readonly Member[][], w: number): Verdict {
  let releaseAtMs = 0;
  for (let i = 0; i < w; i++) {
    const wave = all[i] ?? [];
    const states = wave.map((m) => memberState(m, g.target, g.policy, g.nowMs));
    const notDone = states.filter((s) => s.kind === 'pending' || s.kind === 'progressing');
    if (notDone.length > 0) {
      const healthy = states.filter((s) => s.kind === 'healthy').length;
      // The last CR of the waves before wakes this one (nextTurn): this is only the fallback.
      const retryAfterMs = Math.max(WAITING_FALLBACK_MS, g.pollMs * (w - i));
      const message = `waiting for wave ${i + 1} of ${all.length} (${healthy} of ${wave.length} healthy on fleet revision ${g.target}); this CR is in wave ${w + 1}`;
      return { kind: 'wait', reason: 'RolloutWaiting', message, retryAfterMs };
    }
    for (const s of states) if (s.kind === 'healthy') releaseAtMs = Math.max(releaseAtMs, s.stableAtMs);
  }
  const startAtMs = w > 0 ? releaseAtMs + g.policy.pauseBetweenWavesMs : 0;
  if (startAtMs > g.nowMs) {
    return {
      kind: 'wait',
      reason: 'RolloutWaiting',
      message: `wave ${w + 1} of ${all.length} starts after the pause between waves`,
      retryAfterMs: Math.max(1_000, startAtMs - g.nowMs),
    };
  }
  return { kind: 'go' };
}

/** Whom a decided CR wakes (docs/adr/0061): the CRs the rollout may move next, or tell it halted. */
export type Turn =
  | { readonly kind: 'none' }
  | { readonly kind: 'halted'; readonly wake: readonly Member[] }
  /** Every earlier wave is decided: `wake` (the next wave's CRs not yet moved) may start at `atMs`. */
  | { readonly kind: 'next'; readonly wake: readonly Member[]; readonly atMs: number };

/**
 * The next wave, once the last CR of the ones before it is decided (healthy or failed): woken then
 * by that CR's reconcile, the waiting CRs need not look at every health window of the wave under
 * way, which cost each of them a reconcile (a GET, a LIST, often a status write) per window.
 */
export function nextTurn(members: readonly Member[], target: string, policy: RolloutPolicy, nowMs: number): Turn {
  const pendingOf = (ms: readonly Member[]): Member[] => ms.filter((m) => memberState(m, target, policy, nowMs).kind === 'pending');
  if (progress(members, target, policy, nowMs).halted) return { kind: 'halted', wake: pendingOf(members) };
  let releaseAtMs = 0;
  for (const wave of waves(members, policy)) {
    const states = wave.map((m) => memberState(m, target, policy, nowMs));
    if (states.some((s) => s.kind === 'progressing')) return { kind: 'none' };
    const wake = pendingOf(wave);
    if (wake.length > 0) return { kind: 'next', wake, atMs: releaseAtMs === 0 ? 0 : releaseAtMs + policy.pauseBetweenWavesMs };
    for (const s of states) if (s.kind === 'healthy') releaseAtMs = Math.max(releaseAtMs, s.stableAtMs);
  }
  return { kind: 'none' };
}

/** What a metrics sink is told after each look at the rollout. */
export interface RolloutProgress extends Progress {
  readonly target: string;
  readonly chartVersion: string;
  readonly paused: boolean;
}
