/**
 * Whatever a helm call ends with, turned into a {@link HelmError}: execa's failures, a caller's
 * abort before the start, output helm was not expected to print. The classification of helm's
 * text itself is errors.ts's.
 */
import { ExecaError } from 'execa';
import { classifyHelmError, explainFailure, HelmError, SUMMARY_MAX_CHARS, summarizeStderr } from './errors.js';
import { HelmOutputError } from './parse.js';

/** A pre-aborted call is Canceled without starting helm. */
export function throwIfAborted(signal: AbortSignal | undefined, verb: string): void {
  if (signal?.aborted === true)
    throw new HelmError({ reason: 'Canceled', verb, summary: 'canceled before helm was started', canceled: true });
}

/** A release writer refused because this process no longer holds its lease (runner.ts `fence`): Canceled, helm never started. */
export function fencedOff(verb: string): HelmError {
  return new HelmError({
    reason: 'Canceled',
    verb,
    summary: "not started: this replica no longer holds the leader lease (sharded: the namespace's share)",
    canceled: true,
  });
}

/** `fn`'s parse of helm's output, an unexpected one as a HelmError. */
export function parsed<T>(verb: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof HelmOutputError)) throw err;
    throw new HelmError({ reason: 'Unknown', verb, summary: `unexpected helm output: ${err.message}` });
  }
}

/** The parts of an execa failure we look at, copied out so nothing else of it survives. */
interface ExecFailure {
  readonly stderr: string;
  readonly exitCode?: number;
  readonly timedOut: boolean;
  readonly canceled: boolean;
  readonly code?: string;
  readonly signal?: string;
}

function execFailure(err: ExecaError): ExecFailure {
  const failure: { -readonly [K in keyof ExecFailure]: ExecFailure[K] } = {
    stderr: typeof err.stderr === 'string' ? err.stderr : '',
    timedOut: err.timedOut,
    canceled: err.isCanceled,
  };
  if (typeof err.exitCode === 'number') failure.exitCode = err.exitCode;
  if (typeof err.code === 'string') failure.code = err.code;
  if (typeof err.signal === 'string') failure.signal = err.signal;
  return failure;
}

// `instanceof ExecaError` narrows to `ExecaError<any>`; this guard pins the default options type.
const isExecaError = (err: unknown): err is ExecaError => err instanceof ExecaError;

/**
 * Converts whatever execa threw into a HelmError; never keeps stdout, the full stderr or the
 * command line. `redact` sees helm's text raw: whitespace collapsed or cut to length, a secret
 * would no longer be found whole.
 */
export function toHelmError(verb: string, err: unknown, deadlineMs: number, redact: (text: string) => string = (t) => t): HelmError {
  if (err instanceof HelmError) return err;
  if (!isExecaError(err)) {
    const message = redact(err instanceof Error ? err.message : String(err));
    return new HelmError({ reason: 'Unknown', verb, summary: message.slice(0, SUMMARY_MAX_CHARS) });
  }
  const f = execFailure(err);
  const flags = { timedOut: f.timedOut, canceled: f.canceled, spawnFailed: f.code === 'ENOENT' || f.code === 'EACCES' };
  const reason = classifyHelmError(f.stderr, f.exitCode, flags);
  return new HelmError({
    reason,
    verb,
    summary: summaryOf(f, explainFailure(reason, summarizeStderr(redact(f.stderr))), deadlineMs),
    ...flags,
    ...(f.exitCode !== undefined ? { exitCode: f.exitCode } : {}),
  });
}

/** Our own deadline and the caller's abort are stated first: helm's text then only says "context canceled". */
function summaryOf(f: ExecFailure, text: string, deadlineMs: number): string {
  const withText = (lead: string): string => (text === '' ? lead : `${lead}: ${text}`);
  if (f.canceled) return withText('canceled');
  if (f.timedOut) return withText(`timed out after ${deadlineMs} ms`);
  if (text !== '') return text;
  if (f.code !== undefined) return `cannot run helm: ${f.code}`;
  if (f.signal !== undefined) return `helm was killed by ${f.signal}`;
  return `helm exited with code ${f.exitCode ?? 'unknown'} without an error message`;
}
