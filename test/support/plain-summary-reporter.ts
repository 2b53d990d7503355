import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the closing line `N passed, N failed, N skipped` that CI reads; vitest's own summary
 * has another shape. A module that failed to load counts as one failure.
 */
export default class PlainSummaryReporter implements Reporter {
  onTestRunEnd(modules: readonly TestModule[], unhandledErrors: readonly unknown[]): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const mod of modules) {
      const tests = [...mod.children.allTests()];
      if (tests.length === 0 && mod.state() === 'failed') failed++;
      for (const t of tests) {
        const state = t.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
    }
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
