import { installArgs } from '../args.js';
import type { ChartCallOptions, VerbContext } from '../call.js';
import type { Release } from '../types.js';
import { applyChart } from './apply-chart.js';

export interface InstallOptions extends ChartCallOptions {
  /** Release labels (`--labels`); Kubernetes label syntax, not helm's reserved keys. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Wait for readiness (v3 `--wait`, v4 `--wait=legacy`, args.ts). Default false. */
  readonly wait?: boolean;
  /** Ignored on install (helm 3's install has no force flag). */
  readonly force?: boolean;
  readonly description?: string;
  /** `--skip-crds`: the chart's `crds/` are not installed. */
  readonly skipCrds?: boolean;
  /** v4: take the applied fields from other field managers (`--force-conflicts`; see args.ts). */
  readonly forceConflicts?: boolean;
}

/** `helm install`; resolves with the new release (revision 1). */
export function install(h: VerbContext, opts: InstallOptions): Promise<Release> {
  return applyChart(h, 'install', opts, installArgs);
}
