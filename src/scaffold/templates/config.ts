/**
 * The kustomize tree of a project (`config/`), as this repository has it: `init` writes these with
 * the project's name, from files/config/ (the OLM base and scorecard files come from bundle/).
 * test/unit/scaffold/templates.test.ts renders them for the name "helm-operator" and compares them
 * with this repository's own config/, so the two never drift.
 * Files that depend on the APIs (CRDs, samples, the manager role) are in api.ts.
 */

import { baseCsv, manifestsKustomization } from '../../bundle/kustomize-manifests.js';
import { scorecardKustomize } from '../../bundle/scorecard.js';
import { render, template } from './render.js';

export interface ProjectNames {
  /** `projectName` of PROJECT: names the namespace (`<name>-system`), the name prefix and labels. */
  readonly projectName: string;
}

const rendered = (p: ProjectNames, files: readonly string[]): Record<string, string> =>
  Object.fromEntries(files.map((f) => [f, render(f, { projectName: p.projectName })]));

/**
 * The alerts and the dashboard are the same in every project (no project name in them), and they
 * are full of Prometheus' and Grafana's own `{{ }}`: copied as they are; so is the sharding overlay
 * (it finds the Deployment by its label).
 */
const VERBATIM = ['config/prometheus/alerts.yaml', 'config/grafana/helm-operator.json', 'config/sharding/kustomization.yaml'];

export const configFiles = (p: ProjectNames): Record<string, string> => ({
  ...Object.fromEntries(VERBATIM.map((f) => [f, template(f)])),
  ...rendered(p, [
    'config/default/kustomization.yaml',
    'config/default/metrics_service.yaml',
    'config/manager/kustomization.yaml',
    'config/manager/manager.yaml',
  ]),
  // Written by init, so config/manifests builds and `make bundle` works from the start; the base
  // CSV is the user's to edit (create api and generate kustomize manifests never overwrite it).
  [`config/manifests/bases/${p.projectName}.clusterserviceversion.yaml`]: baseCsv(p.projectName),
  'config/manifests/kustomization.yaml': manifestsKustomization(p.projectName),
  ...Object.fromEntries(scorecardKustomize().flatMap((op) => (op.op === 'create' ? [[op.path, String(op.body)]] : []))),
  ...rendered(p, [
    'config/prometheus/kustomization.yaml',
    'config/prometheus/monitor.yaml',
    'config/rbac/kustomization.yaml',
    'config/rbac/leader_election_role.yaml',
    'config/rbac/leader_election_role_binding.yaml',
    'config/rbac/metrics_auth_role.yaml',
    'config/rbac/metrics_auth_role_binding.yaml',
    'config/rbac/metrics_reader_role.yaml',
    'config/rbac/role_binding.yaml',
    'config/rbac/service_account.yaml',
  ]),
});
