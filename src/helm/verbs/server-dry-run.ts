import { serverDryRunArgs } from '../args.js';
import { releaseContext, type ChartCallOptions, type VerbContext } from '../call.js';
import { parsed } from '../error-mapping.js';
import { parseDryRunManifest } from '../parse.js';

export type ServerDryRunOptions = ChartCallOptions;

/**
 * helm's server-side dry run of installing `release`, or upgrading it when it exists (`helm
 * upgrade --install --dry-run=server`): rendered as the real command would render it, with the
 * cluster's capabilities and templates' `lookup()` answered by the cluster, as the call's
 * connection and identity see it. Writes nothing: no release Secret, no object, no hook.
 * Resolves with the manifest laid out as `template` returns it (hooks and tests included,
 * never CRDs), so the same render reads the same. Fails like the real command: on render and
 * schema errors, on a kind the cluster does not serve (`RenderFailed`), on an object another
 * owner holds, on a release locked by a `pending-*` revision, and with Forbidden where the
 * identity may not read (release Secrets, what `lookup()` asks for). `timeoutMs` is the process
 * deadline (default 60 s). Not a change, so the runner's process table does not count it.
 */
export async function serverDryRun(h: VerbContext, opts: ServerDryRunOptions): Promise<string> {
  await h.major(opts.signal);
  const ctx = { ...releaseContext(opts, undefined), ...(opts.timeoutMs !== undefined ? { deadlineMs: opts.timeoutMs } : {}) };
  const stdout = await h.runner.withValuesFile(opts.values, (valuesFile) =>
    h.runner.run('dry-run', serverDryRunArgs({ ...opts, valuesFile }), ctx),
  );
  const manifest = parsed('dry-run', () => parseDryRunManifest(stdout, 'upgrade --install --dry-run=server'));
  // As template() returns helm's stdout: without its final newline.
  return manifest.endsWith('\n') ? manifest.slice(0, -1) : manifest;
}
