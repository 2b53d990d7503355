/**
 * OLM's `alpha-deprecated-apis` check (operator-framework/api's AlphaDeprecatedAPIsValidator, part of
 * `--select-optional suite=operatorframework`): objects of an API version Kubernetes removed in
 * 1.22, 1.25 or 1.26, and CSV permissions on a resource whose old versions 1.25 removed. Same
 * messages as OLM's, so a finding reads the same from either validator; an error only when the
 * CSV's minKubeVersion is at or past the removal, else a warning (a bundle for any version).
 */
import semver from 'semver';
import type { Finding } from './finding.js';
import { get, objs, type K8sObject } from './types.js';

interface Manifest {
  readonly file: string;
  readonly obj: K8sObject;
}

/** Removed kinds per Kubernetes release, as `apiVersion Kind` (OLM checks exactly these). */
const REMOVED: readonly { readonly release: string; readonly gvks: ReadonlySet<string> }[] = [
  {
    release: '1.22',
    gvks: new Set([
      'scheduling.k8s.io/v1beta1 PriorityClass',
      ...['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding'].map((k) => `rbac.authorization.k8s.io/v1beta1 ${k}`),
      'apiregistration.k8s.io/v1beta1 APIService',
      'authentication.k8s.io/v1beta1 TokenReview',
      ...['LocalSubjectAccessReview', 'SelfSubjectAccessReview', 'SubjectAccessReview'].map((k) => `authorization.k8s.io/v1beta1 ${k}`),
      'admissionregistration.k8s.io/v1beta1 MutatingWebhookConfiguration',
      'admissionregistration.k8s.io/v1beta1 ValidatingWebhookConfiguration',
      'coordination.k8s.io/v1beta1 Lease',
      'extensions/v1beta1 Ingress',
      'networking.k8s.io/v1beta1 Ingress',
      'networking.k8s.io/v1beta1 IngressClass',
      ...['CSIDriver', 'CSINode', 'StorageClass', 'VolumeAttachment'].map((k) => `storage.k8s.io/v1beta1 ${k}`),
      'certificates.k8s.io/v1beta1 CertificateSigningRequest',
    ]),
  },
  {
    release: '1.25',
    gvks: new Set([
      'batch/v1beta1 CronJob',
      'discovery.k8s.io/v1beta1 EndpointSlice',
      'events.k8s.io/v1beta1 Event',
      'autoscaling/v2beta1 HorizontalPodAutoscaler',
      'policy/v1beta1 PodDisruptionBudget',
      'policy/v1beta1 PodSecurityPolicy',
      'node.k8s.io/v1beta1 RuntimeClass',
    ]),
  },
  { release: '1.26', gvks: new Set(['autoscaling/v2beta2 HorizontalPodAutoscaler']) },
];

/**
 * Resources (`group/resource`) whose older versions 1.25 removed: a CSV rule on one may mean the
 * operator uses such a version, so OLM warns (never errs) unless a CRD of the CSV has that plural.
 */
const RULES_REMOVED_IN_125: ReadonlySet<string> = new Set([
  'batch/cronjobs',
  'discovery.k8s.io/endpointslices',
  'events.k8s.io/events',
  'autoscaling/horizontalpodautoscalers',
  'policy/poddisruptionbudgets',
  'policy/podsecuritypolicies',
  'node.k8s.io/runtimeclasses',
]);

const guide = (release: string): string => {
  const [major, minor] = release.split('.');
  return `this bundle is using APIs which were deprecated and removed in v${major}.${minor}. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v${major}-${minor}. Migrate the API(s) for `;
};

/** OLM's `Kind: (["name" "name"])` list, kinds sorted (OLM's own order is a Go map's). */
const listing = (found: ReadonlyMap<string, readonly string[]>): string =>
  [...found.keys()]
    .sort()
    .map((k) => `${k}: ([${(found.get(k) ?? []).map((n) => JSON.stringify(n)).join(' ')}])`)
    .join(',');

const add = (m: Map<string, string[]>, key: string, value: string): void => {
  m.set(key, [...(m.get(key) ?? []), value]);
};

/** The resource entries of the CSV's owned and required CRD descriptions: checked as objects, and their plurals excuse rules. */
function crdDescriptionResources(csv: K8sObject): { name: string; apiVersion: string; kind: string }[] {
  return (['owned', 'required'] as const).flatMap((field) =>
    objs(get(csv, 'spec', 'customresourcedefinitions', field)).flatMap((d, i) =>
      objs(d['resources']).map((r, j) => ({
        name: `ClusterServiceVersion.Spec.CustomResourceDefinitions.${field === 'owned' ? 'Owned' : 'Required'}[${i}].Resource[${j}]`,
        apiVersion: String(r['version']),
        kind: String(r['kind']),
      })),
    ),
  );
}

type RuleResource = readonly [group: string, resource: string, where: string];

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);

/** Every apiGroup × resource of one rule, with OLM's name for where the rule is. */
const ruleEntries = (rule: Record<string, unknown>, where: string): RuleResource[] =>
  strings(rule['apiGroups']).flatMap((group) => strings(rule['resources']).map((resource): RuleResource => [group, resource, where]));

/** `[group, resource, where]` for the CSV's (cluster) permission rules. */
function ruleResources(csv: K8sObject): RuleResource[] {
  const fields = [
    ['ClusterPermissions', 'clusterPermissions'],
    ['Permissions', 'permissions'],
  ] as const;
  return fields.flatMap(([field, key]) =>
    objs(get(csv, 'spec', 'install', 'spec', key)).flatMap((perm, i) =>
      objs(perm['rules']).flatMap((rule, j) =>
        ruleEntries(rule, `ClusterServiceVersion.Spec.InstallStrategy.StrategySpec.${field}[${i}].Rules[${j}]`),
      ),
    ),
  );
}

function ruleWarnings(csv: K8sObject): Map<string, string[]> {
  const excused = new Set(crdDescriptionResources(csv).map((r) => `${r.kind.toLowerCase()}s`));
  const found = new Map<string, string[]>();
  for (const [group, resource, where] of ruleResources(csv)) {
    if (!excused.has(resource) && RULES_REMOVED_IN_125.has(`${group}/${resource}`)) add(found, resource, where);
  }
  return found;
}

interface Named {
  readonly file: string;
  readonly name: string;
  readonly apiVersion: string;
  /** `CRD` for an apiextensions.k8s.io/v1beta1 CustomResourceDefinition, as OLM names it. */
  readonly kind: string;
}

/** Every object OLM looks at: the manifests besides the CSV, and the resources its CRD descriptions list. */
function namedObjects(csv: Manifest, manifests: readonly Manifest[]): Named[] {
  return [
    ...manifests
      .filter((m) => m.obj.kind !== 'ClusterServiceVersion')
      .map((m) => ({ file: m.file, name: m.obj.metadata.name, apiVersion: m.obj.apiVersion, kind: m.obj.kind })),
    ...crdDescriptionResources(csv.obj).map((r) => ({ ...r, file: csv.file })),
  ];
}

const removedIn = (release: string, gvks: ReadonlySet<string>, o: Named): boolean =>
  gvks.has(`${o.apiVersion} ${o.kind}`) ||
  (release === '1.22' && o.kind === 'CustomResourceDefinition' && o.apiVersion === 'apiextensions.k8s.io/v1beta1');

/** The CSV's minKubeVersion, tolerant like OLM's parse; `invalid` when set but not a version. */
function minKubeVersion(csv: K8sObject): semver.SemVer | undefined | 'invalid' {
  const raw = get(csv, 'spec', 'minKubeVersion');
  if (typeof raw !== 'string' || raw === '') return undefined;
  return semver.coerce(raw) ?? 'invalid';
}

const invalidMinKube = (csv: Manifest): Finding => ({
  level: 'error',
  check: 'alpha-deprecated-apis',
  file: csv.file,
  path: 'spec.minKubeVersion',
  message: `unable to use csv.Spec.MinKubeVersion to verify the CRD/Webhook apis because it has an invalid value: ${String(get(csv.obj, 'spec', 'minKubeVersion'))}`,
});

/** The findings of OLM's alpha-deprecated-apis validator for a bundle's CSV and its other manifests. */
export function checkDeprecatedApis(csv: Manifest, manifests: readonly Manifest[]): Finding[] {
  const minKube = minKubeVersion(csv.obj);
  const out: Finding[] = minKube === 'invalid' ? [invalidMinKube(csv)] : [];
  const objects = namedObjects(csv, manifests);
  for (const { release, gvks } of REMOVED) {
    const hits = objects.filter((o) => removedIn(release, gvks, o));
    const found = new Map<string, string[]>();
    for (const o of hits) add(found, o.kind === 'CustomResourceDefinition' ? 'CRD' : o.kind, o.name);
    const removedFor = minKube instanceof semver.SemVer && semver.gte(minKube, `${release}.0`);
    // One finding per release, as OLM reports it; it names the first file (the message names every object).
    if (found.size > 0)
      out.push({
        level: removedFor ? 'error' : 'warning',
        check: 'alpha-deprecated-apis',
        file: hits[0]?.file ?? 'manifests/',
        message: `${guide(release)}${listing(found)}`,
      });
    const rules = release === '1.25' ? ruleWarnings(csv.obj) : new Map<string, string[]>();
    if (rules.size > 0)
      out.push({
        level: 'warning',
        check: 'alpha-deprecated-apis',
        file: csv.file,
        path: 'spec.install.spec',
        message: `${guide(release)}${listing(rules)}`,
      });
  }
  return out;
}
