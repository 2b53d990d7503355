import { envArgs } from '../args.js';
import { offlineContext, type CallOptions } from '../call.js';
import type { HelmRunner } from '../runner.js';

/** `helm env NAME`: where this helm looks for something (e.g. HELM_REPOSITORY_CONFIG). */
export async function env(runner: HelmRunner, name: string, opts: CallOptions = {}): Promise<string> {
  return (await runner.run('env', envArgs(name), offlineContext(opts))).trim();
}
