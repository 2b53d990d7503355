/** A small operator project's kustomize output, and the broken bundles both validators must reject. */
import { randomBytes } from 'node:crypto';
import { parse, stringify } from 'yaml';
import { generateBundle } from '../../src/bundle/generate.js';
import { baseCsv } from '../../src/bundle/kustomize-manifests.js';
import type { K8sObject } from '../../src/bundle/types.js';
import type { BundleFiles } from '../../src/bundle/validate.js';
import type { CreateOp } from '../../src/machinery/index.js';

const docs = (text: string): K8sObject[] => text.split(/^---$/m).map((d) => parse(d) as K8sObject);

export function kustomizeOutput(): K8sObject[] {
  return [
    parse(baseCsv('demo-operator')) as K8sObject,
    ...docs(`apiVersion: v1
kind: Namespace
metadata: {name: demo-system}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: webs.example.com}
spec:
  group: example.com
  names: {kind: Web, listKind: WebList, plural: webs, singular: web}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        description: Web runs the web chart.
        properties:
          spec:
            type: object
            properties:
              replicaCount: {type: integer, description: How many pods}
              image: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              conditions: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: demo-controller-manager, namespace: demo-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: demo-leader-election-role, namespace: demo-system}
rules:
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, create, update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: demo-manager-role}
rules:
- {apiGroups: [example.com], resources: [webs, webs/status, webs/finalizers], verbs: [get, list, watch, update, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: demo-metrics-reader}
rules:
- {nonResourceURLs: [/metrics], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: demo-leader-election-rolebinding, namespace: demo-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: demo-leader-election-role}
subjects: [{kind: ServiceAccount, name: demo-controller-manager, namespace: demo-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: demo-manager-rolebinding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: demo-manager-role}
subjects: [{kind: ServiceAccount, name: demo-controller-manager, namespace: demo-system}]
---
apiVersion: v1
kind: Service
metadata: {name: demo-metrics-service, namespace: demo-system}
spec:
  ports: [{name: http, port: 8080, targetPort: 8080}]
  selector: {control-plane: controller-manager}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: demo-controller-manager
  namespace: demo-system
  labels: {control-plane: controller-manager}
spec:
  replicas: 1
  selector: {matchLabels: {control-plane: controller-manager}}
  template:
    metadata: {labels: {control-plane: controller-manager}}
    spec:
      serviceAccountName: demo-controller-manager
      containers:
      - name: manager
        image: registry.example.com/demo-operator:v0.1.0
        env:
        - {name: WATCH_NAMESPACE, value: ""}
        resources: {requests: {cpu: 10m, memory: 64Mi}}
---
apiVersion: example.com/v1alpha1
kind: Web
metadata: {name: web-sample, namespace: demo-system}
spec: {replicaCount: 2}`),
  ];
}

export const generateFixture = (createdAt = '2026-11-23T00:00:00Z'): readonly CreateOp[] =>
  generateBundle({
    objects: kustomizeOutput(),
    version: '0.1.0',
    packageName: 'demo-operator',
    createdAt,
    builderVersion: '0.1.0',
    channels: ['alpha'],
  }).plan.filter((op): op is CreateOp => op.op === 'create');

/** The plan's bundle/ files as the validator's input (paths relative to bundle/). */
export function asBundleFiles(ops: readonly CreateOp[]): BundleFiles {
  const files = ops
    .filter((o) => o.path.startsWith('bundle/'))
    .map((o) => ({ path: o.path.slice('bundle/'.length), text: String(o.body) }));
  const dirs = new Set(
    files.flatMap((f) =>
      f.path
        .split('/')
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
    ),
  );
  return { dirs, files };
}

const CSV = 'manifests/demo-operator.clusterserviceversion.yaml';
type Files = Map<string, string>;
interface CsvDoc {
  metadata: { annotations: Record<string, string> };
  spec: { installModes: { type: string; supported: boolean }[]; customresourcedefinitions: { owned: Record<string, string>[] } };
}
const editYaml = (files: Files, path: string, edit: (o: CsvDoc) => void): void => {
  const o = parse(files.get(path) ?? '') as CsvDoc;
  edit(o);
  files.set(path, stringify(o));
};

export interface BrokenCase {
  readonly name: string;
  readonly break: (files: Files) => void;
  /** The check and field path our validator must report. */
  readonly ours: { check: string; path?: string | RegExp };
  /** What OLM's message says (olm-validate output). */
  readonly olm: RegExp;
}

export const brokenCases: readonly BrokenCase[] = [
  {
    name: 'a CRD missing',
    break: (f) => {
      f.delete('manifests/example.com_webs.yaml');
    },
    ours: { check: 'bundle', path: 'spec.customresourcedefinitions.owned[0]' },
    olm: /owned CRD "example\.com\/v1alpha1, Kind=Web" not found in bundle/,
  },
  {
    name: 'alm-examples invalid',
    break: (f) => {
      editYaml(f, CSV, (o) => {
        o.metadata.annotations['alm-examples'] = '[{"apiVersion": ';
      });
    },
    ours: { check: 'csv', path: 'metadata.annotations.alm-examples' },
    // OLM's CSV validator reports the JSON parser's error alone.
    olm: /invalid character/,
  },
  {
    name: 'an install mode none supports',
    break: (f) => {
      editYaml(f, CSV, (o) => {
        for (const m of o.spec.installModes) m.supported = false;
      });
    },
    ours: { check: 'csv', path: 'spec.installModes' },
    olm: /install ?mode/i,
  },
  {
    name: 'an owned CRD not in the bundle',
    break: (f) => {
      editYaml(f, CSV, (o) => {
        o.spec.customresourcedefinitions.owned.push({
          name: 'dbs.example.com',
          version: 'v1',
          kind: 'Db',
          displayName: 'Db',
          description: 'x',
        });
      });
    },
    ours: { check: 'bundle', path: 'spec.customresourcedefinitions.owned[1]' },
    olm: /owned CRD "example\.com\/v1, Kind=Db" not found in bundle/,
  },
  {
    name: 'a bundle over the size limit',
    // Random bytes do not compress: ~1.4 MiB gzipped in a ConfigMap.
    break: (f) => {
      const s = randomBytes(1_400_000).toString('base64');
      f.set(
        'manifests/big_v1_configmap.yaml',
        stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big' }, data: { blob: s } }),
      );
    },
    ours: { check: 'bundle', path: undefined },
    olm: /maximum bundle compressed size/i,
  },
];

export function brokenBundle(c: BrokenCase): BundleFiles {
  const base = asBundleFiles(generateFixture());
  const files: Files = new Map(base.files.map((f) => [f.path, f.text]));
  c.break(files);
  return { dirs: base.dirs, files: [...files].map(([path, text]) => ({ path, text })) };
}

/**
 * The generated bundle plus what OLM's alpha-deprecated-apis check warns about: a
 * policy/v1beta1 PodDisruptionBudget (removed in 1.25) and a CSV rule on horizontalpodautoscalers
 * (whose v2beta1 1.25 removed), for clusters from `minKubeVersion` on: the object is a warning
 * below 1.25 and an error from it.
 */
export function deprecatedApiBundle(minKubeVersion: string): BundleFiles {
  const base = asBundleFiles(generateFixture());
  const files: Files = new Map(base.files.map((f) => [f.path, f.text]));
  const csv = parse(files.get(CSV) ?? '') as {
    spec: { minKubeVersion?: string; install: { spec: { clusterPermissions: { rules: Record<string, string[]>[] }[] } } };
  };
  csv.spec.install.spec.clusterPermissions[0]?.rules.push({
    apiGroups: ['autoscaling'],
    resources: ['horizontalpodautoscalers'],
    verbs: ['get', 'list', 'watch'],
  });
  csv.spec.minKubeVersion = minKubeVersion;
  files.set(CSV, stringify(csv));
  files.set(
    'manifests/demo-pdb_policy_v1beta1_poddisruptionbudget.yaml',
    stringify({
      apiVersion: 'policy/v1beta1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'demo-pdb' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'demo' } } },
    }),
  );
  return { dirs: base.dirs, files: [...files].map(([path, text]) => ({ path, text })) };
}

/** OLM's messages for {@link deprecatedApiBundle} (operator-framework/api's DeprecateMessage). */
export const DEPRECATED_API_MESSAGES = {
  object:
    'this bundle is using APIs which were deprecated and removed in v1.25. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-25. Migrate the API(s) for PodDisruptionBudget: (["demo-pdb"])',
  rule: /^this bundle is using APIs which were deprecated and removed in v1\.25\. More info: https:\/\/kubernetes\.io\/docs\/reference\/using-api\/deprecation-guide\/#v1-25\. Migrate the API\(s\) for horizontalpodautoscalers: \(\["ClusterServiceVersion\.Spec\.InstallStrategy\.StrategySpec\.ClusterPermissions\[0\]\.Rules\[\d+\]"\]\)$/,
} as const;
