/**
 * The kind's editor and viewer ClusterRoles that `create api` writes into config/rbac (kubebuilder's
 * `<kind>_editor_role.yaml` / `<kind>_viewer_role.yaml`), labelled to aggregate into the built-in
 * `edit`/`admin` and `view` ClusterRoles (docs/adr/0098): whoever a namespace's RoleBinding gives
 * edit or view gets the kind there, and reads the CR's upgrade plan through the same role (the plan
 * ConfigMap is read through `view`/`edit` already). Neither role may write `<plural>/status`: the
 * operator alone writes status, and a held upgrade's plan digest is kept there (docs/plans.md).
 */
import type { ApiNames } from '../names.js';
import type { PolicyRule } from '../ports.js';

export const AGGREGATE_TO_EDIT = 'rbac.authorization.k8s.io/aggregate-to-edit';
export const AGGREGATE_TO_ADMIN = 'rbac.authorization.k8s.io/aggregate-to-admin';
export const AGGREGATE_TO_VIEW = 'rbac.authorization.k8s.io/aggregate-to-view';

/** The marker in config/rbac/kustomization.yaml before which `create api` lists the kind's roles. */
export const KIND_ROLES_MARKER = 'rbackustomizeroles';

export type KindRole = 'editor' | 'viewer';

/**
 * `<group>_<kind>_editor_role.yaml` (the group left out when empty, as kubebuilder does outside
 * multigroup layouts). Not the version: RBAC names resources without one, so every version of a
 * kind shares its roles, and `create api` for a second version writes the same files unchanged.
 */
export const kindRoleFileName = (n: ApiNames, role: KindRole): string =>
  `${n.group === '' ? '' : `${n.group}_`}${n.singular}_${role}_role.yaml`;

/** The ClusterRole's name before config/default's namePrefix (`<project>-`) is added. */
export const kindRoleName = (n: ApiNames, role: KindRole): string => `${n.group === '' ? '' : `${n.group}-`}${n.singular}-${role}-role`;

/** What the role grants: the editor every verb a user needs on the CRs, the viewer reads; both only read status. */
export function kindRoleRules(n: ApiNames, role: KindRole): PolicyRule[] {
  const verbs = role === 'editor' ? ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'] : ['get', 'list', 'watch'];
  return [
    { apiGroups: [n.fullGroup], resources: [n.plural], verbs },
    { apiGroups: [n.fullGroup], resources: [`${n.plural}/status`], verbs: ['get'] },
  ];
}

const HEADERS: Readonly<Record<KindRole, (n: ApiNames) => string[]>> = {
  editor: (n) => [
    `# Who may create, change and delete ${n.kind} CRs (${n.plural}.${n.fullGroup}): aggregated into the`,
    '# built-in `edit` and `admin` ClusterRoles, so a RoleBinding to either in a namespace grants it there.',
    '# Status is read only: the operator alone writes it (a held upgrade keeps its plan digest there).',
    '# The operator does not use this role; remove it from config/rbac/kustomization.yaml to leave it out.',
  ],
  viewer: (n) => [
    `# Who may read ${n.kind} CRs (${n.plural}.${n.fullGroup}) and their status: aggregated into the`,
    '# built-in `view` ClusterRole (and through it `edit` and `admin`).',
    '# The operator does not use this role; remove it from config/rbac/kustomization.yaml to leave it out.',
  ],
};

const LABELS: Readonly<Record<KindRole, Record<string, string>>> = {
  editor: { [AGGREGATE_TO_EDIT]: 'true', [AGGREGATE_TO_ADMIN]: 'true' },
  viewer: { [AGGREGATE_TO_VIEW]: 'true' },
};

const flow = (xs: readonly string[]): string => `[${xs.map((x) => JSON.stringify(x)).join(', ')}]`;

/** The role's file, in the style of config/rbac's other files (flow lists, quoted strings). */
export function kindRole(n: ApiNames, projectName: string, role: KindRole): string {
  const labels = { 'app.kubernetes.io/name': projectName, 'app.kubernetes.io/managed-by': 'kustomize', ...LABELS[role] };
  return [
    ...HEADERS[role](n),
    'apiVersion: rbac.authorization.k8s.io/v1',
    'kind: ClusterRole',
    'metadata:',
    `  name: ${kindRoleName(n, role)}`,
    '  labels:',
    ...Object.entries(labels).map(([k, v]) => `    ${k}: ${v === 'true' ? '"true"' : v}`),
    'rules:',
    ...kindRoleRules(n, role).flatMap((r) => [
      `  - apiGroups: ${flow(r.apiGroups)}`,
      `    resources: ${flow(r.resources)}`,
      `    verbs: ${flow(r.verbs)}`,
    ]),
    '',
  ].join('\n');
}

/** The entries `create api` adds to config/rbac/kustomization.yaml's resources. */
export const kindRolesKustomization = (n: ApiNames): string => `- ${kindRoleFileName(n, 'editor')}\n- ${kindRoleFileName(n, 'viewer')}\n`;
