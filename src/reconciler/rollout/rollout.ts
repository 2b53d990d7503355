/**
 * A watch's waved rollout, as one reconcile meets it (docs/adr/0056): `hold` asks the pure gate
 * (rollout-gate.ts) whether an upgrade that ships only a fleet change may run now; `note` writes
 * into status which fleet revision the release was made from and whether this CR failed it (helm
 * failed, or not Ready within the health timeout). Everything it decides by is in the cluster (the
 * controller's cache of the kind, the release record, the pause flag), so a restart or a new
 * leader goes on where the rollout was, and a release already on the target reads InSync. Of the
 * CRs' status it reads only what the operator sealed (`trust`, `seal`; docs/adr/0101).
 */
import { DEFAULT_ROLLOUT, type RolloutPolicy } from '../../config/rollout-policy.js';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { CacheReader, Request } from '../../runtime/reconcile.js';
import type { Wakeups } from '../../runtime/requeue-source.js';
import type { Desired } from '../core/action-context.js';
import { ConditionType, Reason } from '../status/conditions.js';
import type { Outcome, Summary } from '../core/outcome.js';
import { gate, memberState, progress, type Member, type RolloutProgress } from './rollout-gate.js';
import { cachedMembers, memberOf, memberOfView, readyConditionOf } from './rollout-members.js';
import { RolloutSeals, viewOf } from './rollout-seal.js';
import { rolloutApproval, type RolloutApproval } from './rollout-approval.js';
import { DECIDE_MARGIN_MS, WaveWaker } from './rollout-waker.js';
import { RELEASE_LABELS, type ReleaseRecord } from '../decide/state.js';
import type { RolloutAttempt, RolloutStatus, StatusDraft } from '../status/status.js';

/** Admin-only rollout switches, kept in the cluster (src/operator/rollout-control.ts). */
export interface RolloutControlPort {
  paused(): Promise<boolean>;
}

export interface RolloutOptions {
  readonly controller: string;
  /** The controller's cache of the kind, read-only: every CR's rollout status, as the gate decides by. */
  readonly cache: CacheReader;
  /** Where the waker asks for the CRs it wakes and for its look when a health window ends. */
  readonly wakeups: Wakeups;
  readonly policy: RolloutPolicy | undefined;
  readonly chartDigest: string;
  readonly chartVersion: string;
  readonly control?: RolloutControlPort;
  readonly metrics?: { rollout?(controller: string, progress: () => RolloutProgress | undefined): void };
  readonly now?: () => Date;
  /** The operator's key (the fingerprint key, docs/adr/0044): what seals the status the gate reads (docs/adr/0101). */
  readonly sealKey: Uint8Array;
}

export type Held = Extract<Outcome, { kind: 'rollout-held' }>;

/** What a reconcile tells the rollout besides its outcome: which CR, and where to wake others. */
export interface NoteContext {
  readonly fleetOnly: boolean;
  readonly event: (reason: string, message: string) => void;
  readonly at: Request;
}

/** What noting a reconcile asks for: this CR looked at again (`requeueMs`), or the waker to look when its health window ends (`decideInMs`). */
interface Step {
  readonly requeueMs?: number;
  readonly decideInMs?: number;
}

/** The longest a CR waiting on other CRs goes without looking again. */
const MAX_POLL_MS = 30_000;
const MIN_POLL_MS = 2_000;

export class Rollout {
  readonly #policy: RolloutPolicy;
  readonly #now: () => Date;
  readonly #pollMs: number;
  readonly #waker: WaveWaker;
  readonly #seals: RolloutSeals;
  #paused = false;
  /** The fleet revision this replica's reconciles roll to (the watch's chart and values): undefined until one ran. */
  #target: string | undefined;

  constructor(private readonly o: RolloutOptions) {
    this.#policy = o.policy ?? DEFAULT_ROLLOUT;
    this.#now = o.now ?? (() => new Date());
    this.#pollMs = Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, this.#policy.stableForMs));
    this.#seals = new RolloutSeals(o.sealKey, () => this.#now().getTime());
    this.#waker = new WaveWaker({
      policy: this.#policy,
      wakeups: o.wakeups,
      members: () => this.#members(),
      now: () => this.#now().getTime(),
    });
  }

  /** Whether upgrading from `from` to `desired` ships only a fleet change (the CR's own values are those of `from`). */
  static fleetOnly(from: ReleaseRecord, desired: Desired): boolean {
    const fleet = from.labels[RELEASE_LABELS.fleetRevision];
    const own = from.labels[RELEASE_LABELS.ownValues];
    // A release made before rollouts has neither label: its upgrade is taken as the fleet's.
    return fleet !== desired.fleetRevision && (own === undefined || own === desired.ownDigest);
  }

  /**
   * At the start of a reconcile: the rollout fields this reconcile carries on are the ones the
   * operator wrote (rollout-seal.ts). A status it did not seal, or an older one, is replaced by
   * the newest this process believes; with none, by a status naming no fleet revision of the
   * release, so that a release found on the target gets a health window from now (attemptOnTarget)
   * instead of counting as installed there, and a forged attempt (its approval, its failure or
   * its absence) is never sealed as the operator's.
   */
  trust(draft: StatusDraft, uid: string): void {
    const found = draft.current.rollout;
    const believed = this.#seals.believe(uid, found, readyConditionOf(draft.current.conditions));
    // Unsealed (seal() puts back the same seal when the view is the one found).
    if (believed !== undefined) {
      draft.setRollout(believed.rollout);
      // A reconcile keeps a Ready time whose status it does not change: it must be the operator's.
      if (believed.ready !== undefined) draft.restoreCondition(ConditionType.Ready, believed.ready);
    } else if (found !== undefined || draft.current.conditions.length > 0) draft.setRollout(UNTRUSTED);
  }

  /** Before a status write: the seal over the rollout fields and the Ready condition as they will be written. */
  seal(draft: StatusDraft, uid: string): void {
    const rollout = draft.current.rollout;
    if (rollout === undefined || uid === '') return;
    const seal = this.#seals.seal(uid, viewOf(rollout, readyConditionOf(draft.current.conditions)));
    if (rollout.seal !== seal) draft.setRollout({ ...rollout, seal });
  }

  /** The CR instance is gone: nothing believed of it may outlive it. */
  forget(uid: string): void {
    this.#seals.forget(uid);
  }

  /** undefined: go on with the upgrade; else why this CR waits, and when to look again. */
  async hold(draft: StatusDraft, at: Request, from: ReleaseRecord, desired: Desired): Promise<Held | undefined> {
    this.#target = desired.fleetRevision;
    if (!Rollout.fleetOnly(from, desired)) return undefined;
    const self = `${at.namespace}/${at.name}`;
    const members = this.#members();
    if (!members.some((m) => m.key === self)) members.push({ key: self, labels: {} });
    const paused = (await this.o.control?.paused()) ?? false;
    const nowMs = this.#now().getTime();
    this.report(desired.fleetRevision, paused);
    const verdict = gate({ policy: this.#policy, target: desired.fleetRevision, members, self, paused, nowMs, pollMs: this.#pollMs });
    if (verdict.kind === 'go') return undefined;
    // The release serving is `from`: status says so, whatever an undo or a failed upgrade left.
    const deployedFleet = from.labels[RELEASE_LABELS.fleetRevision];
    const prior = draft.current.rollout;
    if (deployedFleet !== prior?.fleetRevision)
      draft.setRollout(withoutUndefined({ fleetRevision: deployedFleet, attempt: prior?.attempt }));
    return {
      kind: 'rollout-held',
      reason: Reason[verdict.reason],
      message: verdict.message,
      ...(verdict.retryAfterMs === undefined ? {} : { retryAfterMs: verdict.retryAfterMs }),
    };
  }

  /**
   * What the waves before this CR's approved for the fleet revision it is moved to (rollout-approval.ts);
   * undefined when the upgrade is not the rollout's (the CR's own change needs its own approval).
   */
  approval(at: Request, from: ReleaseRecord, desired: Desired): RolloutApproval | undefined {
    if (!Rollout.fleetOnly(from, desired)) return undefined;
    const self = `${at.namespace}/${at.name}`;
    const members = this.#members();
    if (!members.some((m) => m.key === self)) members.push({ key: self, labels: {} });
    return rolloutApproval(members, this.#policy, self, desired.fleetRevision);
  }

  /**
   * Status after the reconcile's action: the fleet revision of what is deployed, and this CR's
   * attempt of the target; then the waves this CR's state lets go are woken (rollout-waker.ts).
   * Returns when to look again at a CR whose health is still undecided (to record a timeout).
   * `fleetOnly`: the action was an upgrade shipping only the fleet change (its failure is the rollout's).
   */
  note(draft: StatusDraft, outcome: Outcome, desired: Desired, how: NoteContext): number | undefined {
    const target = desired.fleetRevision;
    const before = draft.current.rollout?.attempt;
    const failedBefore = before?.fleetRevision === target && before.failure !== undefined;
    const step = this.#step(draft, outcome, target, how);
    this.#wake(draft.current.rollout, target, how, { failedBefore, decideInMs: step.decideInMs });
    return step.requeueMs;
  }

  /** Hands this CR's state, as this reconcile leaves it, to the waker. */
  #wake(
    rollout: RolloutStatus | undefined,
    target: string,
    how: NoteContext,
    o: { failedBefore: boolean; decideInMs: number | undefined },
  ): void {
    const cached = this.o.cache.get(how.at.namespace, how.at.name);
    // This reconcile's own rollout fields (not yet sealed: they are the operator's), beside the Ready condition the cache holds.
    const ready = readyConditionOf((cached as { status?: { conditions?: unknown } } | undefined)?.status?.conditions);
    const self =
      cached?.metadata === undefined || rollout === undefined ? undefined : memberOfView(cached.metadata, viewOf(rollout, ready));
    // Only a CR the rollout moved to the target can decide a wave (and walking the cache is O(CRs)).
    if (self?.attempt?.fleetRevision !== target) return;
    const members = (): Member[] => this.#members().map((m) => (m.key === self.key ? self : m));
    const newlyFailed = !o.failedBefore && self.attempt.failed;
    this.#waker.after(members, self, { target, newlyFailed, ...(o.decideInMs === undefined ? {} : { decideInMs: o.decideInMs }) });
  }

  /**
   * A CR another replica reconciles changed (sharded, docs/adr/0096). Waves, the canary and the
   * failure budget are the kind's: every replica decides them over its cache, which holds every CR
   * of the kind, while only a CR's owner moves it. So this replica looks at the other's CR as at
   * one it noted itself: decided now, it wakes the next wave (the controller keeps the wakes of
   * CRs this replica owns); in its health window, the waker looks again when it ends.
   */
  observe(obj: KubernetesObject): void {
    const target = this.#target;
    const self = target === undefined ? undefined : memberOf(obj, this.#seals);
    if (target === undefined || self?.attempt?.fleetRevision !== target) return;
    const nowMs = this.#now().getTime();
    const state = memberState(self, target, this.#policy, nowMs);
    const decideInMs = state.kind === 'progressing' ? state.untilMs - nowMs + DECIDE_MARGIN_MS : undefined;
    this.#waker.after(() => this.#members(), self, {
      target,
      newlyFailed: state.kind === 'failed',
      ...(decideInMs === undefined ? {} : { decideInMs }),
    });
  }

  #step(draft: StatusDraft, outcome: Outcome, target: string, how: NoteContext): Step {
    const now = this.#now();
    switch (outcome.kind) {
      case 'installed':
      case 'upgraded': {
        // Only a CR the rollout moved is held to its health gate: an install or the CR's own change is its own business.
        const moved = outcome.kind === 'upgraded' && how.fleetOnly;
        draft.setRollout(
          this.#onTarget(target, moved ? { fleetRevision: target, at: now.toISOString(), ...approvedPlanOf(outcome) } : undefined),
        );
        draft.removeCondition(ConditionType.Rollout);
        if (!moved) return {};
        // Ready: decided once stable (the waker looks then); else this CR looks again at its timeout.
        return outcome.deployment.ready.status === 'True'
          ? { decideInMs: this.#policy.stableForMs + DECIDE_MARGIN_MS }
          : { requeueMs: this.#policy.healthTimeoutMs + DECIDE_MARGIN_MS };
      }
      case 'in-sync':
        return this.#inSync(draft, target, outcome.deployment.ready, how.event);
      case 'helm-failed': {
        if (!how.fleetOnly || outcome.fingerprint === undefined) return {};
        const attempt = { fleetRevision: target, at: now.toISOString(), failure: outcome.failure.summary };
        draft.setRollout(withoutUndefined({ ...draft.current.rollout, attempt }));
        this.#failed(draft, target, outcome.failure.summary, how.event);
        return {};
      }
      default:
        return {};
    }
  }

  /** On the target: healthy, still within its health timeout (look again when it ends), or failed now. */
  #inSync(
    draft: StatusDraft,
    target: string,
    ready: { status: string; message: string },
    event: (reason: string, message: string) => void,
  ): Step {
    const prior = draft.current.rollout;
    const attempt = attemptOnTarget(prior, target, this.#now());
    if (attempt === undefined || attempt.failure !== undefined || ready.status === 'True') {
      draft.setRollout(this.#onTarget(target, attempt ?? prior?.attempt));
      if (attempt?.failure === undefined) draft.removeCondition(ConditionType.Rollout);
      const decideInMs = attempt === undefined || attempt.failure !== undefined ? undefined : this.#untilStable(draft, attempt);
      return decideInMs === undefined ? {} : { decideInMs };
    }
    const leftMs = Date.parse(attempt.at) + this.#policy.healthTimeoutMs - this.#now().getTime();
    if (leftMs > 0) {
      draft.setRollout(this.#onTarget(target, attempt));
      return { requeueMs: leftMs + DECIDE_MARGIN_MS };
    }
    const failure = `not Ready within ${this.#policy.healthTimeoutMs / 1000}s of the upgrade: ${ready.message}`;
    draft.setRollout(this.#onTarget(target, { ...attempt, failure }));
    this.#failed(draft, target, failure, event);
    return {};
  }

  /** Until a Ready CR has been Ready for `stableFor` since its attempt (the waker looks then, as the gate counts it); undefined: it has. */
  #untilStable(draft: StatusDraft, attempt: RolloutAttempt): number | undefined {
    const was = draft.current.conditions.find((c) => c.type === ConditionType.Ready);
    const nowMs = this.#now().getTime();
    const readySinceMs = was?.status === 'True' ? Date.parse(was.lastTransitionTime) : nowMs;
    const leftMs = Math.max(readySinceMs, Date.parse(attempt.at)) + this.#policy.stableForMs - nowMs;
    return leftMs > 0 ? leftMs + DECIDE_MARGIN_MS : undefined;
  }

  #onTarget(target: string, attempt: RolloutStatus['attempt']): RolloutStatus {
    return withoutUndefined({ fleetRevision: target, chartDigest: this.o.chartDigest, attempt });
  }

  #failed(draft: StatusDraft, target: string, failure: string, event: (reason: string, message: string) => void): void {
    const message = `fleet revision ${target} (chart ${this.o.chartVersion}) failed on this CR: ${failure}`;
    draft.setCondition({ type: ConditionType.Rollout, status: 'False', reason: Reason.RolloutFailed, message });
    event(Reason.RolloutFailed, message);
  }

  #members(): Member[] {
    return cachedMembers(this.o.cache, this.#seals);
  }

  /** The rollout's target as the last reconcile named it, and whether it is paused; metrics read its progress when scraped. */
  report(target: string, paused = this.#paused): void {
    this.#paused = paused;
    this.#target = target;
    this.o.metrics?.rollout?.(this.o.controller, this.#progress);
  }

  /** The rollout's progress now (it walks every CR of the kind); undefined before a reconcile named the target. */
  readonly #progress = (): RolloutProgress | undefined => {
    const target = this.#target;
    if (target === undefined) return undefined;
    const p = progress(this.#members(), target, this.#policy, this.#now().getTime());
    return { ...p, target, chartVersion: this.o.chartVersion, paused: this.#paused };
  };
}

/**
 * The attempt of `target` a CR found on it is held to. A release on the target while status still
 * names another deployed fleet revision was moved there by a reconcile that never wrote its status:
 * an operator SIGKILLed mid-wave whose helm, past its post-render call, finished the upgrade as an
 * orphan. Its health window starts when the next reconcile sees it, so the wave still waits for it
 * (counted healthy unseen, the next wave started before it was ever Ready; docs/adr/0061).
 */
export function attemptOnTarget(prior: RolloutStatus | undefined, target: string, now: Date): RolloutAttempt | undefined {
  if (prior?.attempt?.fleetRevision === target) return prior.attempt;
  return prior?.fleetRevision !== undefined && prior.fleetRevision !== target
    ? { fleetRevision: target, at: now.toISOString() }
    : undefined;
}

/** An approved plan of a move, which stands for the fleet revision in the later waves (rollout-approval.ts). */
function approvedPlanOf(outcome: Outcome): Pick<RolloutAttempt, 'approvedPlan'> {
  const plan = outcome.kind === 'upgraded' && outcome.plan?.why === 'approved' ? outcome.plan.status : undefined;
  return plan === undefined ? {} : { approvedPlan: { digest: plan.digest, risks: plan.risks } };
}

/**
 * What a reconcile carries on when the status it found was not the operator's and this process
 * believes nothing of the CR: a fleet revision no release has, so a release on the target is seen
 * as moved there unseen (attemptOnTarget: a health window from now), as after a SIGKILL.
 */
const UNTRUSTED: RolloutStatus = { fleetRevision: 'unsealed' };

/** The sooner of the summary's requeue and the rollout's `wakeMs` (an error keeps its backoff). */
export function wakeSooner(summary: Summary, wakeMs: number | undefined): Summary {
  const after = summary.result.requeueAfterMs;
  if (wakeMs === undefined || summary.error !== undefined || (after !== undefined && after <= wakeMs)) return summary;
  return { ...summary, result: { requeueAfterMs: wakeMs } };
}

function withoutUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
