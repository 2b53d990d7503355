/**
 * What the rollout gate may believe of a CR's status (docs/adr/0101). The gate decides from every
 * CR's `status.rollout` and `Ready` condition, and a tenant who may write `<plural>/status` can
 * write both. So the operator seals what it writes: `status.rollout.seal` is `<seq>.<mac>`, the
 * mac an HMAC under the operator's key (the fingerprint key of docs/adr/0044, kept in a Secret of
 * the operator's namespace, the same in every replica and after every restart) over the CR's uid,
 * the sequence number, the rollout fields and the Ready condition's status and transition time.
 * A status whose seal does not match was not written by the operator, and the gate does not read
 * it. `seq` orders the operator's writes of one CR (the write's time in ms, or one more than the
 * newest seen, whichever is later): a sealed status older than the newest this process has seen
 * for the uid is a replay of the operator's own earlier words (a Ready=True the CR has since
 * lost), and is not read either; the newest seen stands in for it.
 */
import { timingSafeEqual } from 'node:crypto';
import { hmacSha256 } from '../../util/hmac.js';
import type { RolloutStatus } from '../status/status.js';

/** The Ready condition as the gate reads it. */
export interface ReadyView {
  readonly status: string;
  readonly lastTransitionTime?: string;
}

/** The part of a CR's status the rollout gate decides from: what the seal covers. */
export interface RolloutView {
  readonly rollout: Omit<RolloutStatus, 'seal'>;
  readonly ready?: ReadyView;
}

/** Domain separation: the fingerprint key also keys the fleet revision and the failures' fingerprint. */
const DOMAIN = 'helm-operator/rollout-seal/v1';
const MAC_HEX = 32;

/** Pure: the fields in a fixed order, so that the same view always gives the same bytes. */
function canonical(uid: string, seq: number, v: RolloutView): string {
  const r = v.rollout;
  const a = r.attempt;
  return JSON.stringify([
    DOMAIN,
    uid,
    seq,
    r.fleetRevision ?? null,
    r.chartDigest ?? null,
    a === undefined
      ? null
      : [
          a.fleetRevision,
          a.at,
          a.failure ?? null,
          a.approvedPlan === undefined ? null : [a.approvedPlan.digest, [...a.approvedPlan.risks]],
        ],
    v.ready === undefined ? null : [v.ready.status, v.ready.lastTransitionTime ?? null],
  ]);
}

/** Pure: the seal of `view` for the CR instance `uid`, its `seq`th sealed write. */
export function sealOf(key: Uint8Array, uid: string, seq: number, view: RolloutView): string {
  return `${seq}.${hmacSha256(key)
    .update(canonical(uid, seq, view))
    .digest('hex')
    .slice(0, MAC_HEX)}`;
}

/** Pure: the sequence number of a seal that matches `view` for `uid` under `key`; undefined: it does not. */
export function openSeal(key: Uint8Array, uid: string, seal: string | undefined, view: RolloutView): number | undefined {
  const m = /^(\d{1,15})\.([0-9a-f]+)$/.exec(seal ?? '');
  if (m === null || uid === '') return undefined;
  const seq = Number(m[1]);
  const want = Buffer.from(sealOf(key, uid, seq, view));
  const got = Buffer.from(seal ?? '');
  return want.length === got.length && timingSafeEqual(want, got) ? seq : undefined;
}

/**
 * What a seal says of one status read with no memory of earlier ones (the `rollout status` CLI):
 * `sealed` when it opens under `key` as the gate opens it ({@link openSeal}), `unsealed` without
 * one, `forged` with one that does not match (another writer, another CR's, another key).
 */
export type SealVerdict = 'sealed' | 'unsealed' | 'forged';

/** Pure: the {@link SealVerdict} of `rollout` and `ready` for the CR instance `uid`. */
export function sealVerdict(key: Uint8Array, uid: string, rollout: RolloutStatus, ready: ReadyView | undefined): SealVerdict {
  if (rollout.seal === undefined || rollout.seal === '') return 'unsealed';
  return openSeal(key, uid, rollout.seal, viewOf(rollout, ready)) === undefined ? 'forged' : 'sealed';
}

/** Pure: the view of a status's rollout fields and Ready condition (the seal left out). */
export function viewOf(rollout: RolloutStatus, ready: ReadyView | undefined): RolloutView {
  const { seal: _seal, ...rest } = rollout;
  return ready === undefined
    ? { rollout: rest }
    : { rollout: rest, ready: { status: ready.status, lastTransitionTime: ready.lastTransitionTime } };
}

/** What this process last believed of one CR instance. */
interface Believed {
  readonly seq: number;
  readonly view: RolloutView;
  readonly seal: string;
}

/**
 * The operator's memory of the newest sealed status of each CR instance, by uid: what the gate
 * reads when the status it finds is unsealed, forged, or a replay. Lost with the process; a new
 * process believes the newest sealed status it finds, which is the operator's own (the key is
 * out of tenants' reach), and every CR's first reconcile writes its live state again.
 */
export class RolloutSeals {
  readonly #believed = new Map<string, Believed>();

  constructor(
    private readonly key: Uint8Array,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /**
   * What to believe of a CR instance whose status shows `rollout` and `ready`: that view when the
   * operator sealed it and it is not older than the newest seen; else the newest seen (undefined:
   * none). A status without rollout fields is believed only through memory.
   */
  believe(uid: string, rollout: RolloutStatus | undefined, ready: ReadyView | undefined): RolloutView | undefined {
    const known = this.#believed.get(uid);
    if (rollout === undefined) return known?.view;
    const view = viewOf(rollout, ready);
    const seq = openSeal(this.key, uid, rollout.seal, view);
    if (seq === undefined || (known !== undefined && seq < known.seq)) return known?.view;
    if (known === undefined || seq > known.seq) this.#believed.set(uid, { seq, view, seal: rollout.seal ?? '' });
    return view;
  }

  /**
   * The seal for a status the operator writes: the one it holds for the same view, else a newer
   * one, remembered as the newest (before the write lands: a write that fails is retried by the
   * reconcile's backoff, and meanwhile the gate goes by what the operator meant to write).
   */
  seal(uid: string, view: RolloutView): string {
    const known = this.#believed.get(uid);
    if (known !== undefined && canonical(uid, 0, known.view) === canonical(uid, 0, view)) return known.seal;
    // A time, not a count: a process that starts without memory still writes above every seal it
    // wrote before, so a replay of one of those is older than its next write.
    const seq = Math.max((known?.seq ?? 0) + 1, Math.floor(this.nowMs()));
    const seal = sealOf(this.key, uid, seq, view);
    this.#believed.set(uid, { seq, view, seal });
    return seal;
  }

  /** The CR instance is gone. */
  forget(uid: string): void {
    this.#believed.delete(uid);
  }
}
