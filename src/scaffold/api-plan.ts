/** `create api`: the plan for one kind (pure; the chart is already fetched and rendered). */
import { create, insert, type Plan } from '../machinery/index.js';
import type { AllowKinds } from './allow-kinds.js';
import type { ApiNames } from './names.js';
import type { ChartFile } from '../config/chart.js';
import {
  crd,
  crdFileName,
  projectResource,
  rbacFragment,
  sampleFileName,
  tenancyFragment,
  watchEntry,
  type CrdInputs,
  type RbacFragmentInputs,
} from './templates/api.js';
import { KIND_ROLES_MARKER, kindRole, kindRoleFileName, kindRolesKustomization } from './templates/kind-roles.js';

export interface ApiPlanInputs {
  readonly names: ApiNames;
  /** The project's name (PROJECT), for the labels of the kind's roles. */
  readonly projectName: string;
  /**
   * config/rbac/kustomization.yaml has the marker for the kind's roles. False in a project
   * scaffolded before it: the roles are written but not listed (create api says how to list them).
   */
  readonly listKindRoles: boolean;
  readonly chartName: string;
  /** Every file of the chart directory (dependencies built), relative paths. */
  readonly chartFiles: readonly ChartFile[];
  readonly crd: Omit<CrdInputs, 'names' | 'chartName'>;
  /** The sample CR's YAML text. */
  readonly sample: string;
  readonly rbac: Omit<RbacFragmentInputs, 'names' | 'chartName'>;
  /** The watch's `allowKinds`; undefined writes none. */
  readonly allowKinds?: AllowKinds;
  /** The README's Tenancy entry (tenant-values.ts); undefined when the README has no Tenancy marker. */
  readonly tenancy?: readonly string[];
  /** watches.yaml with this kind's entry regenerated (watch-entry-update.ts); undefined: the entry is inserted. */
  readonly watches?: string;
}

export function apiPlan(a: ApiPlanInputs): Plan {
  const n = a.names;
  const crdFile = crdFileName(n);
  const sampleFile = sampleFileName(n);
  return [
    ...a.chartFiles.map((f) => create(`helm-charts/${a.chartName}/${f.path}`, f.data)),
    create(`config/crd/bases/${crdFile}`, crd({ ...a.crd, names: n, chartName: a.chartName })),
    create(`config/samples/${sampleFile}`, a.sample),
    ...(a.watches === undefined ? [] : [create('watches.yaml', a.watches)]),
    insert('watches.yaml', 'watch', watchEntry(n, a.chartName, a.allowKinds)),
    insert('config/crd/kustomization.yaml', 'crdkustomizeresource', `- bases/${crdFile}\n`),
    insert('config/samples/kustomization.yaml', 'manifestskustomizesamples', `- ${sampleFile}\n`),
    create(`config/rbac/${kindRoleFileName(n, 'editor')}`, kindRole(n, a.projectName, 'editor')),
    create(`config/rbac/${kindRoleFileName(n, 'viewer')}`, kindRole(n, a.projectName, 'viewer')),
    ...(a.listKindRoles ? [insert('config/rbac/kustomization.yaml', KIND_ROLES_MARKER, kindRolesKustomization(n))] : []),
    insert('config/rbac/role.yaml', 'rules', rbacFragment({ names: n, chartName: a.chartName, ...a.rbac }), true),
    insert('PROJECT', 'resources', projectResource(n)),
    ...(a.tenancy === undefined ? [] : [insert('README.md', 'tenancy', tenancyFragment(n, a.chartName, a.tenancy), true)]),
  ];
}
