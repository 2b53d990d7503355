/** What every verb is given and every call may say: the options common to all verbs, and their run contexts. */
import type { HelmMajor } from './args.js';
import { identityOf, type CallIdentity } from './connection.js';
import { throwIfAborted } from './error-mapping.js';
import type { PostRender } from './post-render.js';
import type { HelmRunner, RunContext } from './runner.js';
import { DEFAULT_TIMEOUT_MS, PROCESS_MARGIN_MS, READ_DEADLINE_MS } from './timeouts.js';
import type { HelmVersion } from './types.js';

export interface CallOptions extends CallIdentity {
  /** helm's `--timeout` for this call; the process deadline is this plus {@link PROCESS_MARGIN_MS}. */
  readonly timeoutMs?: number;
  /** Aborting sends helm SIGTERM (it records the release state and exits); the call rejects with `Canceled`. */
  readonly signal?: AbortSignal;
  /**
   * Masks the values that must not show in the error (secrets): applied to helm's raw stderr,
   * before anything collapses or shortens it into the error's summary.
   */
  readonly redact?: (text: string) => string;
}

/** A chart rendered with values as `release` of `namespace`: what install, upgrade, template and the server dry run are given. */
export interface ChartCallOptions extends CallOptions {
  readonly release: string;
  readonly namespace: string;
  /** Path of the chart (directory or archive). */
  readonly chart: string;
  /** Written to a private 0600 JSON file for `--values`, removed when the call ends. */
  readonly values: Readonly<Record<string, unknown>>;
  /** Changes the rendered manifest before helm applies it (install and upgrade only; post-render.ts). */
  readonly postRender?: PostRender;
}

/** Options of the verbs that read a release: helm gives them no `--timeout`, they have a fixed deadline. */
export type ReadOptions = Omit<CallOptions, 'timeoutMs'>;

/** A verb's collaborators: the process runner, the binary's version, helm's default `--timeout`. */
export interface VerbContext {
  readonly runner: HelmRunner;
  /** The binary's major version (detected once); a pre-aborted `signal` rejects with `Canceled` first. */
  major(signal?: AbortSignal): Promise<HelmMajor>;
  readonly defaultTimeoutMs: number;
}

export function verbContext(runner: HelmRunner, version: () => Promise<HelmVersion>, defaultTimeoutMs = DEFAULT_TIMEOUT_MS): VerbContext {
  return {
    runner,
    defaultTimeoutMs,
    major: async (signal) => {
      throwIfAborted(signal, 'version');
      return (await version()).major;
    },
  };
}

const common = (opts: CallOptions): Pick<RunContext, 'signal' | 'redact' | 'identity'> => ({
  ...(opts.signal ? { signal: opts.signal } : {}),
  ...(opts.redact ? { redact: opts.redact } : {}),
  identity: identityOf(opts),
});

/** Verbs without a cluster (and without helm's `--timeout`): a fixed deadline, or the caller's. */
export function offlineContext(opts: CallOptions): RunContext {
  return { deadlineMs: opts.timeoutMs ?? READ_DEADLINE_MS, ...common(opts) };
}

/** What a verb that changes `release` starts with: the binary's major version, helm's `--timeout` and the run context. */
export async function writerCall(
  h: VerbContext,
  opts: CallOptions & { readonly release: string; readonly namespace: string },
): Promise<{ readonly major: HelmMajor; readonly timeoutMs: number; readonly ctx: RunContext }> {
  const major = await h.major(opts.signal);
  const timeoutMs = opts.timeoutMs ?? h.defaultTimeoutMs;
  return { major, timeoutMs, ctx: releaseContext(opts, timeoutMs) };
}

/** Run context of a verb on `release`; `timeoutMs` undefined means a read verb with the fixed deadline. */
export function releaseContext(
  opts: CallOptions & { readonly release: string; readonly namespace: string },
  timeoutMs: number | undefined,
): RunContext {
  return {
    release: opts.release,
    namespace: opts.namespace,
    deadlineMs: timeoutMs === undefined ? READ_DEADLINE_MS : timeoutMs + PROCESS_MARGIN_MS,
    ...common(opts),
  };
}
