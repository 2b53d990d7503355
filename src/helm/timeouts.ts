/** How long helm and its processes may take: helm's own `--timeout` and the process deadlines around it. */

/** helm's `--timeout` when a call gives none: 5 minutes, as helm's. */
export const DEFAULT_TIMEOUT_MS = 5 * 60_000;
/** The process deadline exceeds helm's own `--timeout` so helm normally times out first and records it. */
export const PROCESS_MARGIN_MS = 60_000;
/** Deadline for verbs without a helm `--timeout` (status, history, get, template, version). */
export const READ_DEADLINE_MS = 60_000;
/** After SIGTERM helm cancels and writes the release state; SIGKILL mid-upgrade can strand `pending-*`. */
export const FORCE_KILL_AFTER_MS = 30_000;
/** How long an orphaned helm gets after SIGTERM to record its release's state before SIGKILL. */
export const ORPHAN_GRACE_MS = 10_000;
