/**
 * When a reconciled CR is looked at again: the first period set of the CR's `reconcile-period`
 * annotation, its watch's `reconcilePeriod` and the operator's `--reconcile-period`, spread by
 * Flux's 5 % either way. Without the spread, CRs installed or listed in one burst would come back
 * in one burst every period; with it their resyncs drift apart while the mean stays the period.
 * A period of 0 turns resyncs off and stays 0.
 *
 * Periods have floors (docs/adr/0046): the operator's own settings may not go below
 * `MIN_RECONCILE_PERIOD_MS` (config/watches-schema.ts: refused at load), and a CR's annotation, which the tenant
 * writes, not below {@link DEFAULT_ANNOTATION_PERIOD_FLOOR_MS} or the period its watch would
 * otherwise use, whichever is shorter (raised to it, with a warning).
 */
import { formatDuration } from '../../config/duration.js';
import { jitter } from '../../runtime/backoff.js';
import { ANNOTATIONS, type ReleaseAnnotations } from './annotations.js';

/** Spread of the period either way, as a fraction of it. */
export const PERIOD_JITTER = 0.05;

/** The default shortest period a CR's annotation may ask for (`--annotation-reconcile-period-floor`). */
export const DEFAULT_ANNOTATION_PERIOD_FLOOR_MS = 30_000;

export interface PeriodSources {
  readonly annotationMs?: number | undefined;
  readonly watchMs?: number | undefined;
  readonly defaultMs: number;
}

/** Pure: the period that applies, before its jitter: the CR's annotation, else the watch's, else the operator's (0: none). */
export function periodMs(sources: PeriodSources): number {
  return sources.annotationMs ?? sources.watchMs ?? sources.defaultMs;
}

export function resyncAfterMs(sources: PeriodSources, random: () => number = Math.random): number {
  const period = periodMs(sources);
  return period > 0 ? jitter(period, PERIOD_JITTER, random) : period;
}

/**
 * The shortest period a CR's annotation may ask for: `floorMs`, or the period its watch would use
 * without the annotation when that is shorter (the operator's administrator already chose that load).
 */
export function annotationFloorMs(sources: Omit<PeriodSources, 'annotationMs'>, floorMs: number): number {
  const configured = sources.watchMs ?? sources.defaultMs;
  return configured > 0 ? Math.min(floorMs, configured) : floorMs;
}

/**
 * The annotations with a `reconcile-period` under the floor raised to it, and a problem that says
 * so (reported as an `InvalidAnnotation` warning event): the CR author controls the annotation,
 * and `1ms` would otherwise make the operator reconcile their CR in a busy loop. 0 (no resyncs)
 * asks for less work and is kept.
 */
export function withPeriodFloor(annotations: ReleaseAnnotations, floorMs: number): ReleaseAnnotations {
  const asked = annotations.reconcilePeriodMs;
  if (asked === undefined || asked === 0 || asked >= floorMs) return annotations;
  const problem = `annotation ${ANNOTATIONS.reconcilePeriod}: ${formatDuration(asked)} is shorter than the ${formatDuration(floorMs)} a CR may ask for; using ${formatDuration(floorMs)}`;
  return { ...annotations, reconcilePeriodMs: floorMs, problems: [...annotations.problems, problem] };
}
