/**
 * helm as the build-time commands (scaffold, bundle) use it: fetch, create and render charts with
 * the invoking user's helm configuration. No release verb, no cluster connection: nothing here
 * loads the operator's runtime verbs.
 */
import { verbContext, type CallOptions, type VerbContext } from './call.js';
import { HelmRunner } from './runner.js';
import type { HelmVersion } from './types.js';
import { create } from './verbs/create.js';
import { dependencyBuild } from './verbs/dependency-build.js';
import { env } from './verbs/env.js';
import { lint } from './verbs/lint.js';
import { pull, type PullOptions } from './verbs/pull.js';
import { template, type TemplateOptions } from './verbs/template.js';
import { versionOnce } from './verbs/version.js';

export interface ChartHelmOptions {
  /** Path of the helm executable (v3 ≥ 3.13 or v4). */
  readonly binary: string;
  /** Writable directory for the values files (and private helm homes without `userHelmHome`). Default `os.tmpdir()`. */
  readonly tmpDir?: string;
  /**
   * Use the invoking user's helm homes (repository aliases of `helm repo add`, registry logins of
   * `helm registry login`), so charts are fetched the way the user's own helm would. The
   * scaffolding CLI sets it; tests leave it unset for private homes under `tmpDir`.
   */
  readonly userHelmHome?: boolean;
}

export class ChartHelm {
  readonly #runner: HelmRunner;
  readonly #verbs: VerbContext;
  readonly #version: () => Promise<HelmVersion>;

  constructor(opts: ChartHelmOptions | HelmRunner) {
    this.#runner = opts instanceof HelmRunner ? opts : new HelmRunner(opts);
    this.#version = versionOnce(this.#runner);
    this.#verbs = verbContext(this.#runner, this.#version);
  }

  /** The binary's version, detected once. */
  version(): Promise<HelmVersion> {
    return this.#version();
  }

  /**
   * The same binary with more environment, e.g. a private HELM_REPOSITORY_CONFIG for one chart
   * fetch, so the user's helm configuration is neither needed nor changed.
   */
  withEnv(extra: Readonly<Record<string, string>>): ChartHelm {
    return new ChartHelm(this.#runner.withEnv(extra));
  }

  template(opts: TemplateOptions): Promise<string> {
    return template(this.#verbs, opts);
  }

  pull(opts: PullOptions): Promise<void> {
    return pull(this.#runner, opts);
  }

  dependencyBuild(chartDir: string, opts?: CallOptions & { readonly plainHttp?: boolean }): Promise<void> {
    return dependencyBuild(this.#runner, chartDir, opts);
  }

  create(chartDir: string, opts?: CallOptions): Promise<void> {
    return create(this.#runner, chartDir, opts);
  }

  lint(chartDir: string, opts?: CallOptions): Promise<string> {
    return lint(this.#runner, chartDir, opts);
  }

  /** `helm env NAME`: where this helm looks for something (e.g. HELM_REPOSITORY_CONFIG). */
  env(name: string, opts?: CallOptions): Promise<string> {
    return env(this.#runner, name, opts);
  }
}
