import { upgradeArgs } from '../args.js';
import type { VerbContext } from '../call.js';
import type { Release } from '../types.js';
import { applyChart } from './apply-chart.js';
import type { InstallOptions } from './install.js';

export interface UpgradeOptions extends InstallOptions {
  /**
   * Replace what cannot be patched: v3 `--force`; v4 `--force-replace --server-side=false` (helm 4
   * refuses force-replace with server-side apply, so this revision is client-side; the next
   * upgrade without it moves the release back, see args.ts).
   */
  readonly force?: boolean;
  /** `--history-max`; helm's default is 10. */
  readonly historyMax?: number;
}

/** `helm upgrade` (never `--install`) with exactly `values` over the chart defaults. */
export function upgrade(h: VerbContext, opts: UpgradeOptions): Promise<Release> {
  return applyChart(h, 'upgrade', opts, upgradeArgs);
}
