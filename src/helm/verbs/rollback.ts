import { rollbackArgs } from '../args.js';
import { writerCall, type CallOptions, type VerbContext } from '../call.js';

export interface RollbackOptions extends CallOptions {
  readonly release: string;
  readonly namespace: string;
  /** Target revision; omitted means the previous one. */
  readonly revision?: number;
  readonly wait?: boolean;
  /** v3 `--force` (replace); v4 `--force-conflicts`, server-side (see args.ts). */
  readonly force?: boolean;
  readonly historyMax?: number;
}

/** `helm rollback` to `revision` (default: the previous one). */
export async function rollback(h: VerbContext, opts: RollbackOptions): Promise<void> {
  const { major, timeoutMs, ctx } = await writerCall(h, opts);
  await h.runner.run('rollback', rollbackArgs({ ...opts, timeoutMs }, major), ctx);
}
