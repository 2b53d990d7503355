/**
 * Namespace confinement: whoever may create a CR must not be able to make the operator create
 * objects outside the CR's namespace (a chart with `namespace: {{ .Values.ns }}`) or cluster-wide
 * ones (a ClusterRole, a webhook), unless the watch allows those kinds. Checked on the rendered
 * manifest, hooks included, before helm installs or upgrades anything.
 */
import { qualifiedKindOf } from '../../util/group-kind.js';
import type { InventoryEntry } from '../objects/inventory.js';

export interface ConfinementPolicy {
  /** The release (and CR) namespace. */
  readonly namespace: string;
  /** `Kind` (core group) or `Kind.group`. */
  readonly allowClusterScoped: readonly string[];
}

/**
 * Pure: one line per object the policy refuses, e.g. `ConfigMap other/settings (namespace other)`;
 * empty when the release is confined. `unknown` lists objects whose kind the API server does not
 * serve, so their scope cannot be checked: they are refused too.
 */
export function confinementViolations(
  entries: readonly InventoryEntry[],
  policy: ConfinementPolicy,
  unknown: readonly InventoryEntry[] = [],
): string[] {
  const violations: string[] = [];
  for (const e of entries) {
    if (e.namespace === '') {
      if (!policy.allowClusterScoped.includes(qualifiedKindOf(e.apiVersion, e.kind)))
        violations.push(`${e.kind} ${e.name} (cluster-scoped)`);
    } else if (e.namespace !== policy.namespace) {
      violations.push(`${e.kind} ${e.namespace}/${e.name} (namespace ${e.namespace})`);
    }
  }
  for (const e of unknown)
    violations.push(`${e.kind} ${e.name} (kind ${e.apiVersion} ${e.kind} is not served, its scope cannot be checked)`);
  return violations;
}
