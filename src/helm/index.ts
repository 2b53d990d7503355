/**
 * The helm boundary: the only module that spawns helm. Reconcile code sees releases, history and
 * classified errors, never helm's argv, output or the release values.
 */
export { HelmClient, PROCESS_MARGIN_MS, toHelmError } from './client.js';
export type {
  HelmClientOptions,
  HelmExecution,
  InstallOptions,
  PullOptions,
  RollbackOptions,
  TemplateOptions,
  UninstallOptions,
  UpgradeOptions,
} from './client.js';
export { HelmError, SUMMARY_MAX_CHARS, classifyHelmError, explainFailure, isHelmError, summarizeStderr } from './errors.js';
export type { HelmErrorFlags, HelmErrorInit, HelmErrorReason } from './errors.js';
export {
  RESERVED_RELEASE_LABELS,
  connectionArgs,
  createArgs,
  dependencyBuildArgs,
  envArgs,
  formatGoDuration,
  formatLabels,
  historyArgs,
  installArgs,
  lintArgs,
  metadataArgs,
  pullArgs,
  rollbackArgs,
  statusArgs,
  templateArgs,
  uninstallArgs,
  upgradeArgs,
  versionArgs,
  withConnectionArgs,
} from './args.js';
export type {
  ConnectionArgsOptions,
  HelmMajor,
  HistoryArgsOptions,
  InstallArgsOptions,
  MetadataArgsOptions,
  PullArgsOptions,
  RollbackArgsOptions,
  TemplateArgsOptions,
  UninstallArgsOptions,
  UpgradeArgsOptions,
} from './args.js';
export { MIN_HELM_VERSION, parseHelmVersion } from './parse.js';
export { RELEASE_STATUSES } from './types.js';
export type { HelmVersion, HistoryEntry, Release, ReleaseChart, ReleaseStatus } from './types.js';
