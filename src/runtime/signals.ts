/**
 * SIGTERM/SIGINT as the manager's stop signal (controller-runtime's `manager/signals`): the first
 * one aborts the returned signal, so the manager shuts down gracefully; a second one exits 1 at
 * once. Installed before anything is built, so a signal during start-up also stops cleanly.
 */
import type { Logger } from '../telemetry/logger.js';

/** Where signals come from; `process` is the real one. */
export interface SignalSource {
  on(event: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  off(event: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
}

export interface StopSignals {
  /** Aborted by the first SIGTERM/SIGINT. */
  readonly signal: AbortSignal;
  /** Removes the handlers. */
  dispose(): void;
}

export function onStopSignals(
  log: Logger,
  source: SignalSource = process,
  exit: (code: number) => void = (code) => process.exit(code),
): StopSignals {
  const stop = new AbortController();
  let count = 0;
  const handler = (signal: NodeJS.Signals): void => {
    count++;
    if (count === 1) {
      log.info({ signal }, 'Stopping: finishing in-flight reconciles');
      stop.abort();
      return;
    }
    log.warn({ signal }, 'Second signal: exiting without waiting');
    exit(1);
  };
  source.on('SIGTERM', handler);
  source.on('SIGINT', handler);
  return {
    signal: stop.signal,
    dispose: () => {
      source.off('SIGTERM', handler);
      source.off('SIGINT', handler);
    },
  };
}
