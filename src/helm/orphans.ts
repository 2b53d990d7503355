/**
 * The helm processes a killed operator process left running (ADR 0044): outside a container they
 * outlive it, and would go on changing a release beside the new operator's helm.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../telemetry/logger.js';
import { INSTANCE_ENV } from './environment.js';
import { instanceEnded, markedProcesses, startTime } from './instance.js';
import { ORPHAN_GRACE_MS } from './timeouts.js';

/**
 * Stops the helm processes that an operator process which has since died started with the helm
 * homes whose data home is `dataHome`. Each gets SIGTERM (helm then records its release as
 * failed), and SIGKILL after `graceMs`. Call at start, before reconciling. Resolves with the pids
 * stopped.
 */
export async function stopOrphans(dataHome: string, log: Logger, graceMs = ORPHAN_GRACE_MS): Promise<number[]> {
  const orphans = markedProcesses(INSTANCE_ENV, { HELM_DATA_HOME: dataHome }).filter((p) => instanceEnded(p.instance));
  if (orphans.length === 0) return [];
  const running = (): typeof orphans => orphans.filter((p) => startTime(p.pid) === p.start);
  const signal = (sig: NodeJS.Signals): void => {
    for (const p of running()) {
      try {
        process.kill(p.pid, sig);
      } catch {
        // Gone meanwhile.
      }
    }
  };
  log.warn({ pids: orphans.map((p) => p.pid) }, 'Stopping helm processes of an operator process that was killed');
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (running().length > 0 && Date.now() < deadline) await sleep(100);
  signal('SIGKILL');
  return orphans.map((p) => p.pid);
}
