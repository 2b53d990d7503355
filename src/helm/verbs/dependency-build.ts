import { dependencyBuildArgs } from '../args.js';
import { offlineContext, type CallOptions } from '../call.js';
import type { HelmRunner } from '../runner.js';

/** `helm dependency build`: the chart's declared subcharts, from Chart.lock when there is one. */
export async function dependencyBuild(
  runner: HelmRunner,
  chartDir: string,
  opts: CallOptions & { readonly plainHttp?: boolean } = {},
): Promise<void> {
  await runner.run('dependency', dependencyBuildArgs(chartDir, opts.plainHttp), offlineContext(opts));
}
