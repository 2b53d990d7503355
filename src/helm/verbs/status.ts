import { metadataArgs, statusArgs } from '../args.js';
import { releaseContext, type ReadOptions, type VerbContext } from '../call.js';
import { parsed } from '../error-mapping.js';
import { isHelmError } from '../errors.js';
import { parseMetadataJson, parseReleaseJson } from '../parse.js';
import type { Release } from '../types.js';

/**
 * The latest revision, or `undefined` when there is no such release. Two processes: `status`
 * (whose JSON omits the chart) and `get metadata` pinned to that same revision, which also
 * gives the release labels on helm 4.
 */
export async function status(h: VerbContext, release: string, namespace: string, opts: ReadOptions = {}): Promise<Release | undefined> {
  await h.major(opts.signal);
  const ctx = releaseContext({ ...opts, release, namespace }, undefined);
  try {
    const stdout = await h.runner.run('status', statusArgs({ release, namespace }), ctx);
    const partial = parsed('status', () => parseReleaseJson(stdout, 'status'));
    const revision = partial.revision;
    const meta = await h.runner.run('get-metadata', metadataArgs({ release, namespace, revision }), ctx);
    const { chart, labels } = parsed('get-metadata', () => parseMetadataJson(meta, 'get metadata'));
    return { ...partial, chart, ...(labels !== undefined ? { labels } : {}) };
  } catch (err) {
    // Also covers the release vanishing between the two calls.
    if (isHelmError(err, 'ReleaseNotFound')) return undefined;
    throw err;
  }
}
