/**
 * `helm-operator run`: the stop signals first (so a signal during start-up stops cleanly), then the
 * operator built from the flags (operator/assemble.ts), run by its manager (runtime/manager.ts,
 * which owns the lifecycle: servers, leader election, controllers, reload, shutdown) until a stop
 * signal (returns) or lost leadership (throws; the process exits 1).
 */
import { WatchesError } from '../config/watches-problems.js';
import { assembleOperator } from '../operator/assemble.js';
import { LeadershipLostError, ListenError } from '../runtime/manager.js';
import { LeaderElectionConfigError } from '../runtime/pod-identity.js';
import { onStopSignals } from '../runtime/signals.js';
import { makeLogger, prettyDestination } from '../telemetry/logger.js';
import type { RunOptions } from './flags.js';
import { VERSION } from './version.js';

/** Exits the process with a message a person can act on, instead of a stack trace. */
export class StartupError extends Error {
  override readonly name: string = 'StartupError';
}

/** Errors of the run a person acts on from the message alone (program.ts prints only that). */
function userFacing(err: unknown): unknown {
  const known =
    err instanceof WatchesError ||
    err instanceof LeaderElectionConfigError ||
    err instanceof ListenError ||
    err instanceof LeadershipLostError;
  return known ? new StartupError(err.message, { cause: err }) : err;
}

export async function run(options: RunOptions): Promise<void> {
  const log = makeLogger({ level: options.logLevel, ...(options.logPretty ? { destination: await prettyDestination() } : {}) });
  const signals = onStopSignals(log);
  try {
    const { manager } = await assembleOperator(options, { log, version: VERSION });
    await manager.run(signals.signal);
  } catch (err) {
    throw userFacing(err);
  } finally {
    signals.dispose();
  }
  log.info('Stopped');
}
