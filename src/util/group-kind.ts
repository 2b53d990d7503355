/**
 * How Kubernetes names API groups, in one place: an apiVersion is `group/version` (`v1` alone for
 * the core group), and a kind named across groups is `Kind.group` (`Kind` alone for the core
 * group), as RBAC and `kubectl api-resources` write it. The `allowKinds` that `create api` writes
 * (scaffold/allow-kinds.ts) and the helm gateway that enforces them (k8s/gateway/policy.ts) name
 * kinds with the same {@link qualifiedKind}, so the two cannot disagree (docs/adr/0073).
 */

export interface GroupVersion {
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
}

/** `apps/v1` → `{group: 'apps', version: 'v1'}`; `v1` → the core group. */
export function parseApiVersion(apiVersion: string): GroupVersion {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** The apiVersion of a group and version: `v1` for the core group. */
export const apiVersionOf = (gv: GroupVersion): string => (gv.group === '' ? gv.version : `${gv.group}/${gv.version}`);

/** The API group of an apiVersion: `apps/v1` → `apps`, `v1` → '' (core). */
export const groupOf = (apiVersion: string): string => parseApiVersion(apiVersion).group;

/** The version of an apiVersion: `apps/v1` → `v1`, `v1` → `v1`. */
export const versionOf = (apiVersion: string): string => parseApiVersion(apiVersion).version;

/** `Kind` for the core group, `Kind.group` otherwise. */
export const qualifiedKind = (kind: string, group: string): string => (group === '' ? kind : `${kind}.${group}`);

/** {@link qualifiedKind} of an object's `apiVersion` and `kind`. */
export const qualifiedKindOf = (apiVersion: string, kind: string): string => qualifiedKind(kind, groupOf(apiVersion));

/** `ClusterRole.rbac.authorization.k8s.io` → `{kind: 'ClusterRole', group: 'rbac.authorization.k8s.io'}`; `Secret` → the core group. A kind has no dot. */
export function parseQualifiedKind(qualified: string): { readonly kind: string; readonly group: string } {
  const dot = qualified.indexOf('.');
  return dot < 0 ? { kind: qualified, group: '' } : { kind: qualified.slice(0, dot), group: qualified.slice(dot + 1) };
}
