/** What install and upgrade share: a chart and values applied as a release's next revision, and the release helm prints. */
import path from 'node:path';
import type { HelmMajor } from '../args.js';
import { writerCall, type ChartCallOptions, type VerbContext } from '../call.js';
import { parsed } from '../error-mapping.js';
import { HelmError } from '../errors.js';
import { parseReleaseJson } from '../parse.js';
import type { Release } from '../types.js';

/** Runs `verb` with the argv `args` builds from `opts`, its values file and helm's `--timeout`. */
export async function applyChart<O extends ChartCallOptions>(
  h: VerbContext,
  verb: 'install' | 'upgrade',
  opts: O,
  args: (
    o: O & { readonly valuesFile: string; readonly timeoutMs: number; readonly postRenderFlags?: readonly string[] },
    major: HelmMajor,
  ) => string[],
): Promise<Release> {
  const { major, timeoutMs, ctx } = await writerCall(h, opts);
  const stdout = await h.runner.withValuesFile(opts.values, (valuesFile) => {
    const render = opts.postRender;
    const plain = (): Promise<string> => h.runner.run(verb, args({ ...opts, valuesFile, timeoutMs }, major), ctx);
    if (render === undefined) return plain();
    // The values file's private directory is the post-render exchange's too.
    return h.runner
      .withPostRender(path.dirname(valuesFile), render, major, (postRenderFlags) =>
        h.runner.run(verb, args({ ...opts, valuesFile, timeoutMs, postRenderFlags }, major), ctx),
      )
      .catch((err: unknown) => {
        // Only the post-render path re-reads the rendered templates (kyaml), before anything is
        // stored or applied: a chart it cannot read goes without, its objects owned by a PATCH after.
        if (!unreadableForPostRender(err)) throw err;
        return plain();
      });
  });
  const rel = parsed(verb, () => parseReleaseJson(stdout, verb));
  const chart = rel.chart;
  if (chart === undefined) throw new HelmError({ reason: 'Unknown', verb, summary: 'unexpected helm output: no chart metadata' });
  return { ...rel, chart };
}

/** helm 4 refuses a post-render of templates its post-render parser cannot read ("error merging manifests"). */
export const unreadableForPostRender = (err: unknown): boolean => err instanceof HelmError && /error merging manifests/.test(err.summary);
