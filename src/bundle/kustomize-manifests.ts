/**
 * `generate kustomize manifests` as a plan: `config/manifests/` with the base ClusterServiceVersion the
 * user edits (written only when absent: their edits survive every later run) and its kustomization.
 */
import { posix } from 'node:path';
import { create, type Plan } from '../machinery/index.js';
import { displayNameOf } from './descriptors.js';
import { scorecardKustomize } from './scorecard.js';

export function baseCsv(packageName: string): string {
  const display = displayNameOf(packageName);
  return `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  annotations:
    alm-examples: '[]'
    capabilities: Basic Install
    categories: Application Runtime
    description: ${display}, a Helm-backed operator.
    repository: https://example.com/${packageName}
  name: ${packageName}.v0.0.0
  namespace: placeholder
spec:
  apiservicedefinitions: {}
  customresourcedefinitions: {}
  description: ${display} description. TODO.
  displayName: ${display}
  icon:
  - base64data: PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxIDEiLz4=
    mediatype: image/svg+xml
  install:
    spec:
      deployments: null
    strategy: ""
  installModes:
  - supported: true
    type: OwnNamespace
  - supported: true
    type: SingleNamespace
  - supported: true
    type: MultiNamespace
  - supported: true
    type: AllNamespaces
  keywords:
  - ${packageName}
  - helm
  links:
  - name: ${display}
    url: https://example.com/${packageName}
  maintainers:
  - email: maintainer@example.com
    name: Maintainer Name
  maturity: alpha
  minKubeVersion: 1.28.0
  provider:
    name: Provider Name
    url: https://example.com
  version: 0.0.0
`;
}

/** config/manifests/kustomization.yaml: what `generate bundle` reads. */
export function manifestsKustomization(packageName: string, dir = 'config/manifests'): string {
  return `# What \`generate bundle\` reads: \`kubectl kustomize ${dir} | helm-operator generate bundle --version X\`.
# The base ClusterServiceVersion (\`helm-operator generate kustomize manifests\` writes it once) is yours
# to edit (display name, description, icon, maintainers, ...).
resources:
  - bases/${packageName}.clusterserviceversion.yaml
  - ../default
  - ../samples
  - ../scorecard
`;
}

export function kustomizeManifests(packageName: string, dir = 'config/manifests'): Plan {
  return [
    create(`${dir}/bases/${packageName}.clusterserviceversion.yaml`, baseCsv(packageName), 'skip'),
    create(`${dir}/kustomization.yaml`, manifestsKustomization(packageName, dir), 'skip'),
    // The kustomization lists ../scorecard: a project from before config/scorecard gets it here.
    ...scorecardKustomize(posix.join(posix.dirname(dir), 'scorecard')),
  ];
}
