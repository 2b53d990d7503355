/**
 * A watch's `rollout:` key: how a change that reaches every CR of the kind at once (chart
 * contents, `overrideValues`, helm major) is shipped to the releases, in waves gated by health
 * (docs/adr/0056). A CR's own spec change is never held by it.
 */
import { isMap, type Node } from 'yaml';
import { DurationError, parseDuration } from './duration.js';
import { knownKeys } from './known-keys.js';
import { validateLabelSelector, type LabelSelector } from './selector.js';
import { fail, quote, type EntryContext } from './watches-problems.js';
import { describe, isEmpty, nodeAt, scalarValue } from './yaml-nodes.js';

/** A number of CRs, or a share of all the CRs of the kind (rounded up for waves, down for the budget). */
export type Amount = { readonly count: number } | { readonly percent: number };

export interface RolloutPolicy {
  /** The first wave: this many CRs in rollout order, or the CRs this selector matches. */
  readonly canary: { readonly count: number } | { readonly selector: LabelSelector };
  /** CRs per later wave. */
  readonly waveSize: Amount;
  /** How long an upgraded CR may take to be Ready=True before it counts as failed. */
  readonly healthTimeoutMs: number;
  /** How long an upgraded CR must stay Ready=True before the next wave may start. */
  readonly stableForMs: number;
  /** Failed CRs tolerated; one more halts the rollout. */
  readonly failureBudget: Amount;
  /** Wait between a wave being healthy and the next starting. */
  readonly pauseBetweenWavesMs: number;
}

/**
 * The default: one canary, then waves of a quarter of the kind, each after the previous one is
 * Ready and stayed so for 10 s; the first failure halts. `canary: 0` with `waveSize: 100%` is
 * operator-sdk's behaviour (every CR at once).
 */
export const DEFAULT_ROLLOUT: RolloutPolicy = {
  canary: { count: 1 },
  waveSize: { percent: 25 },
  healthTimeoutMs: 5 * 60_000,
  stableForMs: 10_000,
  failureBudget: { count: 0 },
  pauseBetweenWavesMs: 0,
};

const KEYS = ['canary', 'canarySelector', 'waveSize', 'healthTimeout', 'stableFor', 'failureBudget', 'pauseBetweenWaves'] as const;

type Key = (typeof KEYS)[number];

/** `rollout:` of one entry; undefined when absent (the default applies) or wrong (reported). */
export function readRollout(ctx: EntryContext, node: Node | undefined): RolloutPolicy | undefined {
  if (isEmpty(node) || node === undefined) return undefined;
  if (!isMap(node)) {
    fail(ctx, node, 'rollout', `expected a map of ${KEYS.join(', ')}, got ${describe(node)}`);
    return undefined;
  }
  const { fields, ok } = knownKeys(ctx, node, 'rollout', KEYS);
  const r = new Reader(ctx, fields);
  const policy: RolloutPolicy = {
    canary: r.canary(),
    waveSize: r.amount('waveSize', 1) ?? DEFAULT_ROLLOUT.waveSize,
    healthTimeoutMs: r.duration('healthTimeout', 1_000) ?? DEFAULT_ROLLOUT.healthTimeoutMs,
    stableForMs: r.duration('stableFor', 0) ?? DEFAULT_ROLLOUT.stableForMs,
    failureBudget: r.amount('failureBudget', 0) ?? DEFAULT_ROLLOUT.failureBudget,
    pauseBetweenWavesMs: r.duration('pauseBetweenWaves', 0) ?? DEFAULT_ROLLOUT.pauseBetweenWavesMs,
  };
  return ok && r.ok ? policy : undefined;
}

class Reader {
  ok = true;

  constructor(
    private readonly ctx: EntryContext,
    private readonly fields: Partial<Record<Key, Node>>,
  ) {}

  #fail(node: Node | undefined, key: Key, reason: string): void {
    fail(this.ctx, node, `rollout.${key}`, reason);
    this.ok = false;
  }

  canary(): RolloutPolicy['canary'] {
    const countNode = this.fields.canary;
    const selectorNode = this.fields.canarySelector;
    if (!isEmpty(countNode) && !isEmpty(selectorNode)) {
      this.#fail(selectorNode, 'canarySelector', 'set canary (a count) or canarySelector (a label selector), not both');
      return DEFAULT_ROLLOUT.canary;
    }
    if (!isEmpty(selectorNode) && selectorNode !== undefined) return this.#selector(selectorNode) ?? DEFAULT_ROLLOUT.canary;
    const amount = this.amount('canary', 0);
    if (amount === undefined) return DEFAULT_ROLLOUT.canary;
    if ('count' in amount) return amount;
    this.#fail(countNode, 'canary', 'expected a whole number of CRs (0 for none), not a percentage');
    return DEFAULT_ROLLOUT.canary;
  }

  #selector(node: Node): RolloutPolicy['canary'] | undefined {
    const result = validateLabelSelector(node.toJS(this.ctx.pc.doc));
    if (result.ok) return { selector: result.selector };
    for (const p of result.problems)
      fail(
        this.ctx,
        nodeAt(this.ctx.pc.doc, node, p.path),
        `rollout.canarySelector${p.path.map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`)).join('')}`,
        p.message,
      );
    this.ok = false;
    return undefined;
  }

  /** A whole number of at least `min`, or a percentage from 1% to 100% written "25%". */
  amount(key: Key, min: number): Amount | undefined {
    const node = this.fields[key];
    if (isEmpty(node)) return undefined;
    const value = scalarValue(node);
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= min) return { count: value };
    const percent = typeof value === 'string' ? /^(\d{1,3})%$/.exec(value) : null;
    const n = percent === null ? NaN : Number(percent[1]);
    if (n >= 1 && n <= 100) return { percent: n };
    this.#fail(node, key, `expected a whole number of at least ${min} or a percentage such as "25%", got ${describe(node)}`);
    return undefined;
  }

  duration(key: Key, minMs: number): number | undefined {
    const node = this.fields[key];
    if (isEmpty(node)) return undefined;
    const value = scalarValue(node);
    if (typeof value !== 'string') {
      this.#fail(node, key, `expected a duration string such as "30s" or "5m", got ${describe(node)}`);
      return undefined;
    }
    try {
      const ms = parseDuration(value);
      if (ms >= minMs) return ms;
      this.#fail(node, key, `${quote(value)} is shorter than ${minMs / 1000}s`);
    } catch (err) {
      if (!(err instanceof DurationError)) throw err;
      this.#fail(node, key, err.message);
    }
    return undefined;
  }
}
