import { testArgs } from '../args.js';
import { writerCall, type CallOptions, type VerbContext } from '../call.js';
import { isHelmError } from '../errors.js';

export interface TestOptions extends CallOptions {
  readonly release: string;
  readonly namespace: string;
  /** `--logs`: the test pods' logs, printed once every test has run, pass or fail. */
  readonly logs?: boolean;
}

/** A failed run: helm's error (which test, why) and the logs it printed, both redacted and bounded. */
export type TestResult = { readonly passed: true } | { readonly passed: false; readonly summary: string; readonly logs: string };

/** How much of the test pods' logs a failure keeps: the end, where a test says why it failed. */
export const MAX_TEST_LOGS = 1_024;

/**
 * `helm test` on the deployed revision. A test that fails (its hook Job or Pod failed, or did not
 * finish within `timeoutMs`) resolves `passed: false`; only a cancelled call rejects. helm prints
 * the logs after its release status, under a `POD LOGS:` header per pod: only that part is kept.
 */
export async function test(h: VerbContext, opts: TestOptions): Promise<TestResult> {
  const { timeoutMs, ctx } = await writerCall(h, opts);
  const lines: string[] = [];
  try {
    await h.runner.run('test', testArgs({ ...opts, timeoutMs }), { ...ctx, onLine: (line) => lines.push(line) });
    return { passed: true };
  } catch (err) {
    if (!isHelmError(err) || err.reason === 'Canceled') throw err;
    // helm fetches logs from a pod named as each test hook, which a Job's pod is not: every
    // suite passed, and only that fetch failed.
    if (allSucceeded(lines) && LOGS_NOT_FOUND.test(err.summary)) return { passed: true };
    return { passed: false, summary: err.summary, logs: podLogs(lines, opts.redact) };
  }
}

const LOGS_NOT_FOUND = /unable to get pod logs for .+ not found/;

/** Whether helm's report names test suites, each of them `Phase: Succeeded`. */
export function allSucceeded(lines: readonly string[]): boolean {
  const phases = lines.flatMap((l) => /^Phase:\s+(\S+)/.exec(l)?.[1] ?? []);
  return phases.length > 0 && phases.every((p) => p === 'Succeeded');
}

/** The `POD LOGS:` part of helm test's output, its last MAX_TEST_LOGS characters. */
export function podLogs(lines: readonly string[], redact?: (text: string) => string): string {
  const start = lines.findIndex((l) => l.startsWith('POD LOGS:'));
  if (start === -1) return '';
  const text = lines.slice(start).join('\n').trim();
  const shown = redact === undefined ? text : redact(text);
  return shown.length > MAX_TEST_LOGS ? `…${shown.slice(-MAX_TEST_LOGS)}` : shown;
}
