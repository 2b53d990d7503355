/**
 * The operator's timings the tests shorten, and how: through the settings `helm-operator run`
 * reads (`--min-retry-delay`, `--max-retry-delay`), in process (startOperator) and as flags
 * (startOperatorProcess, spawnOperator), so a test waits on a retry of the production wiring
 * without waiting the production second (docs/adr/0078).
 */
import { formatDuration } from '../../src/config/duration.js';

/** A failed reconcile is retried after 200 ms, 400 ms, 800 ms …, at most 30 s apart (production: 1 s … 5 min). */
export const TEST_RETRY_DELAYS = { minRetryDelayMs: 200, maxRetryDelayMs: 30_000 } as const;

/** {@link TEST_RETRY_DELAYS} as `run` flags; placed before a test's own flags, which win. */
export const TEST_RUN_FLAGS: readonly string[] = [
  `--min-retry-delay=${formatDuration(TEST_RETRY_DELAYS.minRetryDelayMs)}`,
  `--max-retry-delay=${formatDuration(TEST_RETRY_DELAYS.maxRetryDelayMs)}`,
];
