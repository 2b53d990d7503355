/**
 * When a reconciled CR is looked at again: the first period set of the CR's `reconcile-period`
 * annotation, its watch's `reconcilePeriod` and the operator's `--reconcile-period`, spread by
 * Flux's 5 % either way. Without the spread, CRs installed or listed in one burst would come back
 * in one burst every period; with it their resyncs drift apart while the mean stays the period.
 * A period of 0 turns resyncs off and stays 0.
 */
import { jitter } from '../runtime/backoff.js';

/** Spread of the period either way, as a fraction of it. */
export const PERIOD_JITTER = 0.05;

export interface PeriodSources {
  readonly annotationMs?: number | undefined;
  readonly watchMs?: number | undefined;
  readonly defaultMs: number;
}

export function resyncAfterMs(sources: PeriodSources, random: () => number = Math.random): number {
  const period = sources.annotationMs ?? sources.watchMs ?? sources.defaultMs;
  return period > 0 ? jitter(period, PERIOD_JITTER, random) : period;
}
