import { historyArgs } from '../args.js';
import { releaseContext, type ReadOptions, type VerbContext } from '../call.js';
import { parsed } from '../error-mapping.js';
import { isHelmError } from '../errors.js';
import { parseHistoryJson } from '../parse.js';
import type { HistoryEntry } from '../types.js';

export interface HistoryOptions extends ReadOptions {
  /** Only the newest `max` revisions. */
  readonly max?: number;
}

/** `helm history`, oldest first; `[]` when there is no such release. */
export async function history(h: VerbContext, release: string, namespace: string, opts: HistoryOptions = {}): Promise<HistoryEntry[]> {
  await h.major(opts.signal);
  const ctx = releaseContext({ ...opts, release, namespace }, undefined);
  try {
    const stdout = await h.runner.run(
      'history',
      historyArgs({ release, namespace, ...(opts.max !== undefined ? { max: opts.max } : {}) }),
      ctx,
    );
    return parsed('history', () => parseHistoryJson(stdout, 'history'));
  } catch (err) {
    if (isHelmError(err, 'ReleaseNotFound')) return [];
    throw err;
  }
}
