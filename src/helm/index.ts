/**
 * The helm boundary: the only module that spawns helm. Reconcile code sees releases, history and
 * classified errors, never helm's argv, output or the release values.
 *
 * This index exports what product code outside src/helm uses: the client, its classified error
 * and the types of their signatures. argv builders, parsers and classifiers are internals; their
 * unit tests import them from their own modules.
 */
export { HelmClient } from './client.js';
export type {
  HelmClientOptions,
  HelmExecution,
  InstallOptions,
  PullOptions,
  RollbackOptions,
  ServerDryRunOptions,
  TemplateOptions,
  UninstallOptions,
  UpgradeOptions,
} from './client.js';
export { HelmError } from './errors.js';
export type { HelmErrorFlags, HelmErrorInit, HelmErrorReason } from './errors.js';
export type { HelmVersion, HistoryEntry, Release, ReleaseChart, ReleaseStatus } from './types.js';
