import { lintArgs } from '../args.js';
import { offlineContext, type CallOptions } from '../call.js';
import type { HelmRunner } from '../runner.js';

/** `helm lint`; resolves with its report, rejects when the chart has errors. */
export function lint(runner: HelmRunner, chartDir: string, opts: CallOptions = {}): Promise<string> {
  return runner.run('lint', lintArgs(chartDir), offlineContext(opts));
}
