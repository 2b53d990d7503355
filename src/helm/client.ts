/**
 * The operator's helm: the release verbs (one module each under verbs/) over one process runner,
 * one detected version and one process table. Whom a call acts as travels with the call
 * (`impersonate`, `grant`; see connection.ts), so there is one client per operator.
 */
import { verbContext, type ReadOptions, type VerbContext } from './call.js';
import { helmHomes } from './environment.js';
import { stopOrphans } from './orphans.js';
import { HelmRunner, type RunnerOptions } from './runner.js';
import type { HelmVersion, HistoryEntry, Release } from './types.js';
import { removeStaleValuesDirs } from './values-file.js';
import { history, type HistoryOptions } from './verbs/history.js';
import { install, type InstallOptions } from './verbs/install.js';
import { rollback, type RollbackOptions } from './verbs/rollback.js';
import { test, type TestOptions, type TestResult } from './verbs/test.js';
import { serverDryRun, type ServerDryRunOptions } from './verbs/server-dry-run.js';
import { status } from './verbs/status.js';
import { storedStrings } from './verbs/stored-strings.js';
import type { ValueLeafPath } from '../util/value-leaves.js';
import { template, type TemplateOptions } from './verbs/template.js';
import { uninstall, type UninstallOptions } from './verbs/uninstall.js';
import { upgrade, type UpgradeOptions } from './verbs/upgrade.js';
import { versionOnce } from './verbs/version.js';

export type { HelmExecution } from './runner.js';

export interface HelmClientOptions extends RunnerOptions {
  /** helm's `--timeout` when a call gives none. Default 5 minutes, as helm's. */
  readonly defaultTimeoutMs?: number;
}

export class HelmClient {
  readonly #runner: HelmRunner;
  readonly #verbs: VerbContext;
  readonly #version: () => Promise<HelmVersion>;

  constructor(opts: HelmClientOptions) {
    this.#runner = new HelmRunner(opts);
    this.#version = versionOnce(this.#runner);
    this.#verbs = verbContext(this.#runner, this.#version, opts.defaultTimeoutMs);
  }

  /**
   * The binary's version, detected once (concurrent callers share the run; a failure is not cached).
   * Rejects with reason `HelmNotFound` for a missing binary or a helm older than 3.13.
   */
  version(): Promise<HelmVersion> {
    return this.#version();
  }

  /**
   * Whether a helm process that changes `release` (install, upgrade, rollback, uninstall) has not
   * exited yet, a cancelled one included, whoever it acted as.
   */
  running(release: string, namespace: string): boolean {
    return this.#runner.running(release, namespace);
  }

  /**
   * Whether this process may still change releases: false once its leader lease is lost (asking
   * declares the loss, as before a release writer starts). For release changes made without helm.
   */
  mayChangeReleases(): boolean {
    return this.#runner.mayChangeReleases();
  }

  /** helm processes started so far (every verb, `version` included). */
  get executions(): number {
    return this.#runner.executions;
  }

  install(opts: InstallOptions): Promise<Release> {
    return install(this.#verbs, opts);
  }

  upgrade(opts: UpgradeOptions): Promise<Release> {
    return upgrade(this.#verbs, opts);
  }

  uninstall(opts: UninstallOptions): Promise<{ found: boolean }> {
    return uninstall(this.#verbs, opts);
  }

  rollback(opts: RollbackOptions): Promise<void> {
    return rollback(this.#verbs, opts);
  }

  /** `helm test`: the chart's test hooks; a failing test resolves `passed: false`. */
  test(opts: TestOptions): Promise<TestResult> {
    return test(this.#verbs, opts);
  }

  status(release: string, namespace: string, opts?: ReadOptions): Promise<Release | undefined> {
    return status(this.#verbs, release, namespace, opts);
  }

  /** For redaction only: the strings revision `at.revision`'s stored values hold at `at.paths` (stored-strings.ts). */
  storedStrings(
    at: { readonly release: string; readonly namespace: string; readonly revision: number; readonly paths: readonly ValueLeafPath[] },
    opts?: ReadOptions,
  ): Promise<string[]> {
    return storedStrings(this.#verbs, at, opts);
  }

  history(release: string, namespace: string, opts?: HistoryOptions): Promise<HistoryEntry[]> {
    return history(this.#verbs, release, namespace, opts);
  }

  template(opts: TemplateOptions): Promise<string> {
    return template(this.#verbs, opts);
  }

  serverDryRun(opts: ServerDryRunOptions): Promise<string> {
    return serverDryRun(this.#verbs, opts);
  }

  /** See values-file.ts: the values directories killed operator processes left in this client's tmpDir. */
  removeStaleValuesDirs(): Promise<string[]> {
    return removeStaleValuesDirs(this.#runner.tmpDir, this.#runner.log);
  }

  /** See orphans.ts: the helm processes a killed operator process started with this client's helm homes. */
  stopOrphans(graceMs?: number): Promise<number[]> {
    if (this.#runner.userHelmHome) return Promise.resolve([]);
    return stopOrphans(helmHomes(this.#runner.tmpDir).HELM_DATA_HOME, this.#runner.log, graceMs);
  }
}
