import type { Reporter, TestModule } from 'vitest/node';

/** How much of a failure's first error line a `failed test:` line keeps. */
const MESSAGE_CHARS = 400;
/** How many of the slowest files the run lists (docs/development.md keeps the table). */
const SLOWEST_FILES = 20;

/** A file's own time: importing it, its setup files, and its tests and hooks (not time queued behind other files). */
export function moduleSeconds(d: {
  readonly prepareDuration: number;
  readonly collectDuration: number;
  readonly setupDuration: number;
  readonly duration: number;
}): number {
  return (d.prepareDuration + d.collectDuration + d.setupDuration + d.duration) / 1000;
}

/** `slowest files:` then one `  <seconds>s  <project> <file>` line each, slowest first. */
export function slowestFiles(
  files: readonly { readonly project: string; readonly file: string; readonly seconds: number }[],
  count = SLOWEST_FILES,
): string[] {
  const top = [...files].sort((a, b) => b.seconds - a.seconds).slice(0, count);
  if (top.length === 0) return [];
  return [
    `slowest files (${top.length} of ${files.length}):`,
    ...top.map((f) => `${f.seconds.toFixed(1).padStart(8)}s  ${f.project} ${f.file}`),
  ];
}

/**
 * What an unhandled error says. vitest hands them over serialised from its workers, as plain
 * objects that may have no prototype: `String()` of one throws ("Cannot convert object to
 * primitive value"), and the throw ended the summary before its `failed test:` lines.
 */
export function errorMessage(e: unknown): string {
  if (typeof e === 'object' && e !== null) {
    const { message, name } = e as { message?: unknown; name?: unknown };
    if (typeof message === 'string') return typeof name === 'string' && name !== '' ? `${name}: ${message}` : message;
    try {
      return JSON.stringify(e);
    } catch {
      return '(an error without a message)';
    }
  }
  return String(e);
}

/** The first line of an error's message, trimmed, without terminal colours. */
function firstLine(message: string | undefined): string {
  const line =
    (message ?? '')
      // eslint-disable-next-line no-control-regex -- vitest colours some messages
      .replace(/\x1b\[[0-9;]*m/g, '')
      .split('\n')
      .find((l) => l.trim() !== '') ?? '';
  return line.length > MESSAGE_CHARS ? `${line.slice(0, MESSAGE_CHARS)}…` : line.trim();
}

/**
 * Prints, last, a `failed test: <file> > <test>: <first error line>` line per failure and the
 * closing line `N passed, N failed, N skipped` that CI reads; vitest's own summary has another
 * shape and sits far above what a tier prints after it (the chaos report), so `.ci/run` repeats
 * the `failed test:` lines at the very end of a failed tier. A module that failed to load counts as
 * one failure. Above them it lists the slowest files, so that every run measures where its time went.
 */
export default class PlainSummaryReporter implements Reporter {
  onTestRunEnd(modules: readonly TestModule[], unhandledErrors: readonly unknown[]): void {
    let passed = 0;
    let skipped = 0;
    const failures = unhandledErrors.map((e) => `failed test: (unhandled error): ${firstLine(errorMessage(e))}`);
    for (const mod of modules) {
      const tests = [...mod.children.allTests()];
      if (tests.length === 0 && mod.state() === 'failed')
        failures.push(`failed test: ${mod.relativeModuleId}: ${firstLine(mod.errors()[0]?.message)}`);
      for (const t of tests) {
        const result = t.result();
        if (result.state === 'passed') passed++;
        else if (result.state === 'failed')
          failures.push(`failed test: ${mod.relativeModuleId} > ${t.fullName}: ${firstLine(result.errors[0]?.message)}`);
        else skipped++;
      }
    }
    const timed = modules.map((m) => ({ project: m.project.name, file: m.relativeModuleId, seconds: moduleSeconds(m.diagnostic()) }));
    const lines = [...slowestFiles(timed), ...failures, `${passed} passed, ${failures.length} failed, ${skipped} skipped`];
    process.stdout.write(`\n${lines.join('\n')}\n`);
  }
}
