/** The keys of a watches.yaml entry and the shapes and bounds their values must have. */
import { formatDuration } from './duration.js';

export const FIELDS = [
  'group',
  'version',
  'kind',
  'chart',
  'watchDependentResources',
  'adoptReleases',
  'overrideValues',
  'sensitiveValues',
  'selector',
  'reconcilePeriod',
  'maxConcurrentReconciles',
  'dryRunOption',
  'serviceAccountName',
  'confineToNamespace',
  'allowClusterScoped',
  'allowKinds',
  'allowSchemaRefs',
  'rollout',
  'driftIgnore',
  'allowDriftIgnoreAnnotation',
  'conflictPolicy',
  'crds',
  // Health gates (docs/adr/0081, 0082)
  'healthChecks',
  'test',
  'approval',
  'approvedBy',
] as const;
export type FieldName = (typeof FIELDS)[number];

export const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
export const KIND = /^[A-Z][A-Za-z0-9]*$/;
export const DRY_RUN_OPTIONS = ['', 'client', 'none', 'server'];

/**
 * The shortest non-zero period watches.yaml or `--reconcile-period` may set (docs/adr/0046). A
 * resync of an unchanged release runs no helm but still reads the CR and the release's records:
 * below a second every CR of the kind would reconcile in a busy loop, and `1ms` is far likelier a
 * typo of `1m` than a wish.
 */
export const MIN_RECONCILE_PERIOD_MS = 1_000;

/** Why a period of the operator's own configuration is refused ("<value> is ..."), or undefined. */
export function periodFloorProblem(ms: number, zeroAllowed = true): string | undefined {
  if ((ms === 0 && zeroAllowed) || ms >= MIN_RECONCILE_PERIOD_MS) return undefined;
  return `shorter than the ${formatDuration(MIN_RECONCILE_PERIOD_MS)} floor: every CR would be reconciled in a busy loop`;
}

/** Whether `name` can name a ServiceAccount (a DNS-1123 subdomain). */
export const isServiceAccountName = (name: string): boolean => name.length <= 253 && DNS1123_SUBDOMAIN.test(name);
