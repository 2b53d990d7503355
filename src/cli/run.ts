/** `helm-operator run`: load the watches, connect, start the controllers, stop cleanly on a signal. */
import { loadWatches, WatchesError } from '../config/watches.js';
import { HelmClient } from '../helm/index.js';
import { loadKubeConfig } from '../k8s/kubeconfig.js';
import { Operator } from '../operator/operator.js';
import { makeLogger } from '../telemetry/logger.js';
import type { RunOptions } from './flags.js';

/** Exits the process with a message a person can act on, instead of a stack trace. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

export async function run(options: RunOptions): Promise<void> {
  const log = makeLogger({ level: options.logLevel, pretty: options.logPretty });
  let watches;
  try {
    watches = await loadWatches(options.watchesFile);
  } catch (err) {
    if (err instanceof WatchesError) throw new StartupError(err.message);
    throw err;
  }
  const kubeConfig = loadKubeConfig(options.kubeconfig);
  const helm = new HelmClient({
    binary: options.helmBinary,
    log: log.child({ component: 'helm' }),
    ...(options.kubeconfig === undefined ? {} : { kubeconfig: options.kubeconfig }),
  });
  const version = await helm.version();
  log.info(
    { watches: watches.length, helm: version.semver, namespaces: options.namespaces.length === 0 ? 'all' : options.namespaces },
    'Starting helm-operator',
  );
  const operator = new Operator({
    kubeConfig,
    helm,
    log,
    defaultReconcilePeriodMs: options.reconcilePeriodMs,
    maxConcurrentReconciles: options.maxConcurrentReconciles,
    namespaces: options.namespaces,
    suppressOverrideValues: options.suppressOverrideValues,
  });
  const stopped = new Promise<void>((resolve) => {
    const stop = (signal: string): void => {
      log.info({ signal }, 'Stopping: finishing in-flight reconciles');
      operator.stop().then(resolve, (err: unknown) => {
        log.error({ error: err }, 'Error while stopping');
        resolve();
      });
    };
    process.once('SIGTERM', () => {
      stop('SIGTERM');
    });
    process.once('SIGINT', () => {
      stop('SIGINT');
    });
  });
  await operator.start(watches);
  log.info('All controllers started and synced');
  await stopped;
  log.info('Stopped');
}
