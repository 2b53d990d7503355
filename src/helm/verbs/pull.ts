import { pullArgs } from '../args.js';
import { offlineContext, type CallOptions } from '../call.js';
import type { HelmRunner } from '../runner.js';

export interface PullOptions extends CallOptions {
  readonly chart: string;
  readonly repo?: string;
  readonly version?: string;
  readonly destination: string;
  readonly plainHttp?: boolean;
}

/** `helm pull --untar`: the chart lands in a new directory under `opts.destination`. */
export async function pull(runner: HelmRunner, opts: PullOptions): Promise<void> {
  await runner.run('pull', pullArgs(opts), offlineContext(opts));
}
