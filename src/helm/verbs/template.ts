import { templateArgs } from '../args.js';
import { releaseContext, type ChartCallOptions, type VerbContext } from '../call.js';

export interface TemplateOptions extends ChartCallOptions {
  readonly kubeVersion?: string;
  readonly apiVersions?: readonly string[];
  readonly includeCrds?: boolean;
  /** User values files applied after `values` (e.g. the scaffolder's `--values` for RBAC discovery). */
  readonly extraValuesFiles?: readonly string[];
}

/**
 * `helm template`: the rendered manifest (hooks and tests included, CRDs only with
 * `includeCrds`), client-side with no cluster contact. Fails like install would on schema and
 * render errors. `timeoutMs` does not apply.
 */
export async function template(h: VerbContext, opts: TemplateOptions): Promise<string> {
  await h.major(opts.signal);
  const ctx = releaseContext(opts, undefined);
  return h.runner.withValuesFile(opts.values, (valuesFile) => h.runner.run('template', templateArgs({ ...opts, valuesFile }), ctx));
}
