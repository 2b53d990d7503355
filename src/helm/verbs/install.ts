import { installArgs } from '../args.js';
import { releaseContext, type ChartCallOptions, type VerbContext } from '../call.js';
import { parsed } from '../error-mapping.js';
import { HelmError } from '../errors.js';
import { parseReleaseJson } from '../parse.js';
import type { Release } from '../types.js';

export interface InstallOptions extends ChartCallOptions {
  /** Release labels (`--labels`); Kubernetes label syntax, not helm's reserved keys. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Wait for readiness (v3 `--wait`, v4 `--wait=watcher`). Default false. */
  readonly wait?: boolean;
  /** Ignored on install (helm 3's install has no force flag). */
  readonly force?: boolean;
  readonly description?: string;
}

/** `helm install`; resolves with the new release (revision 1). */
export async function install(h: VerbContext, opts: InstallOptions): Promise<Release> {
  const major = await h.major(opts.signal);
  const timeoutMs = opts.timeoutMs ?? h.defaultTimeoutMs;
  const stdout = await h.runner.withValuesFile(opts.values, (valuesFile) =>
    h.runner.run('install', installArgs({ ...opts, valuesFile, timeoutMs }, major), releaseContext(opts, timeoutMs)),
  );
  return releaseOutput(stdout, 'install');
}

/** The release install or upgrade printed; an unexpected output is a HelmError. */
export function releaseOutput(stdout: string, verb: 'install' | 'upgrade'): Release {
  const rel = parsed(verb, () => parseReleaseJson(stdout, verb));
  const chart = rel.chart;
  if (chart === undefined) throw new HelmError({ reason: 'Unknown', verb, summary: 'unexpected helm output: no chart metadata' });
  return { ...rel, chart };
}
