/**
 * A deployed revision made outside the operator (ADR 0070). helm carries a release's labels over to
 * the next revision, so a `helm upgrade` by hand keeps our fingerprint label and reads as in sync.
 * The values and the chart helm stored with the revision say whether it was made from the desired
 * state; they are read whenever the revision's manifest is (a revision this process did not make).
 */
import type { ReleaseInfo } from '../core/helm-port.js';
import type { ReleaseRecord } from './state.js';

/** The Warning event's reason when a revision made outside the operator is upgraded back. */
export const CHANGED_OUTSIDE_EVENT = 'ReleaseChangedOutside';

/** What the desired state made: the digest of its values (util/canonical-json.ts jsonDigest) and its chart. */
export interface MadeFrom {
  readonly valuesDigest: string;
  readonly chart: { readonly name: string; readonly version: string };
}

/**
 * Pure: why `release` was not made from `desired`, or undefined when it was. A release whose values
 * helm did not report is taken as made from them: only a difference seen is acted on.
 */
export function changedOutside(release: Pick<ReleaseInfo, 'chart' | 'valuesDigest'>, desired: MadeFrom): string | undefined {
  const { chart } = release;
  if (chart.name !== desired.chart.name || chart.version !== desired.chart.version) {
    return `its chart is ${chart.name} ${chart.version}, not ${desired.chart.name} ${desired.chart.version}`;
  }
  if (release.valuesDigest !== undefined && release.valuesDigest !== desired.valuesDigest)
    return 'its values are not the ones this resource gives';
  return undefined;
}

/**
 * The deployed revision carries the desired fingerprint but was not made from the desired state:
 * nothing was written, and the reconcile upgrades it back.
 */
export class ChangedOutsideError extends Error {
  override readonly name = 'ChangedOutsideError';

  constructor(
    /** The revision as its records say. */
    readonly deployed: ReleaseRecord,
    why: string,
  ) {
    super(`revision ${deployed.revision} was made outside the operator (${why}); upgrading it back to this resource's values and chart`);
  }
}
