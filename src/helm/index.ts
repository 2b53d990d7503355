/**
 * The helm boundary: the only module that spawns helm. Reconcile code sees releases, history and
 * classified errors, never helm's argv, output or the release values.
 *
 * This index exports what the operator's code outside src/helm uses: the client, its classified
 * error and the types of their signatures. Build-time code (scaffold, bundle) imports chart-helm.ts
 * and errors.ts instead, so it never loads the release verbs. argv builders, parsers and classifiers
 * are internals; their unit tests import them from their own modules.
 */
export { HelmClient } from './client.js';
export type { HelmClientOptions, HelmExecution } from './client.js';
export type { LeaseFence } from './runner.js';
export type { ReadOptions } from './call.js';
export type { CallIdentity, GatewayGrant } from './connection.js';
export type { HistoryOptions } from './verbs/history.js';
export type { InstallOptions } from './verbs/install.js';
export type { RollbackOptions } from './verbs/rollback.js';
export type { TestOptions, TestResult } from './verbs/test.js';
export type { ServerDryRunOptions } from './verbs/server-dry-run.js';
export type { TemplateOptions } from './verbs/template.js';
export type { UninstallOptions } from './verbs/uninstall.js';
export type { UpgradeOptions } from './verbs/upgrade.js';
export { FIELD_CONFLICT, HelmError, NAME_IN_USE } from './errors.js';
export type { HelmErrorFlags, HelmErrorInit, HelmErrorReason } from './errors.js';
export type { HelmVersion, HistoryEntry, Release, ReleaseChart, ReleaseStatus } from './types.js';
