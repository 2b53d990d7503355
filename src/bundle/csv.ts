/**
 * `generate bundle`'s decisions, pure: from the objects of `kustomize build config/manifests` (the
 * base ClusterServiceVersion, the operator's Deployment and RBAC, its CRDs, the samples) to the
 * bundle's CSV and its other manifests. What the Deployment's ServiceAccount is granted moves into
 * the CSV (`permissions`, `clusterPermissions`), the way OLM expects to create it.
 */
import { groupOf, versionOf } from '../util/group-kind.js';
import { isPlainObject } from '../util/plain-object.js';
import { ownedEntries, type OwnedCrd } from './descriptors.js';
import { BundleInputError } from './errors.js';
import { runsSharded, SHARDED_INSTALL_MODES_NOTE, shardedDeployments, shardingProblem } from './sharding.js';
import { BUILDER, get, objs, PROJECT_LAYOUT, REGISTRY_V1_KINDS, type K8sObject, type Obj } from './types.js';

export { BundleInputError };

export interface BundleInput {
  readonly objects: readonly K8sObject[];
  readonly version: string;
  readonly packageName: string;
  /** ISO timestamp: the only field that differs between two runs on the same input. */
  readonly createdAt: string;
  readonly builderVersion: string;
  readonly useImageDigests?: boolean;
  /** `spec.replaces`: the CSV this one upgrades (upgrade-edge.ts); undefined keeps the base CSV's. */
  readonly replaces?: string;
  /** `--sharded-replicas`: the operator's Deployment runs this many replicas with `--sharding` (sharding.ts). */
  readonly shardedReplicas?: number;
}

export interface BundleContent {
  readonly csv: K8sObject;
  readonly crds: readonly K8sObject[];
  readonly others: readonly K8sObject[];
  /** What was left out and why (a Namespace, a bundled ServiceAccount OLM creates itself). */
  readonly notes: readonly string[];
}

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

const clone = <T>(v: T): T => structuredClone(v);

function stripNamespace(o: K8sObject): K8sObject {
  const c = clone(o);
  delete c.metadata.namespace;
  return c;
}

interface Subject {
  kind?: string;
  name?: string;
  namespace?: string;
}

function boundToServiceAccounts(binding: K8sObject, sas: ReadonlySet<string>): string[] {
  const subjects = objs(binding['subjects']) as Subject[];
  return subjects.flatMap((s) => (s.kind === 'ServiceAccount' && s.name !== undefined && sas.has(s.name) ? [s.name] : []));
}

function roleRefOf(binding: K8sObject): { kind: string; name: string } | undefined {
  const ref = binding['roleRef'];
  return isPlainObject(ref) && typeof ref['kind'] === 'string' && typeof ref['name'] === 'string'
    ? { kind: ref['kind'], name: ref['name'] }
    : undefined;
}

interface Permission {
  serviceAccountName: string;
  rules: unknown[];
}

function addRules(into: Map<string, unknown[]>, sa: string, role: K8sObject | undefined): void {
  const rules: unknown[] = role !== undefined && Array.isArray(role['rules']) ? (role['rules'] as unknown[]) : [];
  into.set(sa, [...(into.get(sa) ?? []), ...clone(rules)]);
}

const toPermissions = (m: Map<string, unknown[]>): Permission[] =>
  [...m.entries()].map(([serviceAccountName, rules]) => ({ serviceAccountName, rules }));

/** OLM fills `olm.targetNamespaces` with the OperatorGroup's namespaces: the operator watches exactly those. */
function withWatchNamespaceFromOlm(deploymentSpec: Obj): Obj {
  const spec = clone(deploymentSpec);
  const containers = objs(get(spec, 'template', 'spec', 'containers'));
  const fromOlm = { name: 'WATCH_NAMESPACE', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['olm.targetNamespaces']" } } };
  for (const c of containers) {
    const env = objs(c['env']);
    const i = env.findIndex((e) => e['name'] === 'WATCH_NAMESPACE');
    if (i >= 0) env[i] = clone(fromOlm);
    c['env'] = i >= 0 ? env : [...env, clone(fromOlm)];
  }
  return spec;
}

interface RelatedImage {
  name: string;
  image: string;
}

function containerImages(d: K8sObject): RelatedImage[] {
  const podSpec = get(d, 'spec', 'template', 'spec');
  const containers = [...objs(get(podSpec, 'initContainers')), ...objs(get(podSpec, 'containers'))];
  return containers.flatMap((c) => {
    const own = typeof c['image'] === 'string' ? [{ name: String(c['name']), image: c['image'] }] : [];
    const related = objs(c['env']).filter((e) => String(e['name']).startsWith('RELATED_IMAGE_'));
    return [
      ...own,
      ...related.map((e) => {
        const name = String(e['name']);
        if (typeof e['value'] !== 'string') {
          throw new BundleInputError(
            `Deployment ${d.metadata.name}, container ${String(c['name'])}: env ${name} must have a literal value (valueFrom cannot be resolved into relatedImages)`,
          );
        }
        return { name: name.slice('RELATED_IMAGE_'.length).toLowerCase().replace(/_/g, '-'), image: e['value'] };
      }),
    ];
  });
}

function relatedImages(deployments: readonly K8sObject[], useDigests: boolean): RelatedImage[] {
  const images = [...new Map(deployments.flatMap(containerImages).map((i) => [i.image, i])).values()];
  const tagged = images.filter((i) => !/@sha256:[a-f0-9]{64}$/.test(i.image));
  if (useDigests && tagged.length > 0) {
    throw new BundleInputError(
      `--use-image-digests: ${tagged.map((i) => i.image).join(', ')} not pinned by digest; this tool does not query registries: ` +
        'set IMG=<repo>@sha256:<digest> (and RELATED_IMAGE_* values) to the digests your registry reports',
    );
  }
  return images;
}

function mergeOwned(generated: OwnedCrd[], base: unknown): OwnedCrd[] {
  const baseOwned = objs(get(base, 'owned'));
  return generated.map((g) => {
    const edited = baseOwned.find((b) => b['name'] === g.name && b['version'] === g.version);
    // The user's edits in the base CSV win over what the schema says.
    return edited === undefined ? g : { ...g, ...clone(edited) };
  });
}

function isExampleOf(o: K8sObject, crds: readonly K8sObject[]): boolean {
  return crds.some((crd) => {
    const spec = isPlainObject(crd['spec']) ? crd['spec'] : {};
    const names = isPlainObject(spec['names']) ? spec['names'] : {};
    return spec['group'] === groupOf(o.apiVersion) && names['kind'] === o.kind;
  });
}

function singleBase(objects: readonly K8sObject[]): K8sObject {
  const bases = objects.filter((o) => o.kind === 'ClusterServiceVersion');
  const [base] = bases;
  if (base === undefined) {
    throw new BundleInputError(
      'no ClusterServiceVersion in the input: run `helm-operator generate kustomize manifests` and pass `kubectl kustomize config/manifests`',
    );
  }
  if (bases.length > 1)
    throw new BundleInputError(`${bases.length} ClusterServiceVersions in the input; expected the one base in config/manifests/bases`);
  return base;
}

const serviceAccountOf = (d: K8sObject): string => {
  const sa = get(d, 'spec', 'template', 'spec', 'serviceAccountName');
  return typeof sa === 'string' ? sa : 'default';
};

interface Rbac {
  permissions: Map<string, unknown[]>;
  clusterPermissions: Map<string, unknown[]>;
  absorbed: Set<K8sObject>;
}

/** The rules of every Role / ClusterRole bound to the Deployments' ServiceAccounts, and the objects they came from. */
function absorbRbac(objects: readonly K8sObject[], sas: ReadonlySet<string>): Rbac {
  const r: Rbac = { permissions: new Map(), clusterPermissions: new Map(), absorbed: new Set() };
  const byName = (kind: string, name: string): K8sObject | undefined => objects.find((o) => o.kind === kind && o.metadata.name === name);
  for (const b of objects.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')) {
    const bound = boundToServiceAccounts(b, sas);
    const ref = roleRefOf(b);
    if (bound.length === 0 || ref === undefined) continue;
    const role = byName(ref.kind, ref.name);
    for (const sa of bound) addRules(b.kind === 'RoleBinding' ? r.permissions : r.clusterPermissions, sa, role);
    r.absorbed.add(b);
    if (role !== undefined) r.absorbed.add(role);
  }
  return r;
}

/** A Deployment that runs `--sharding` must be able to: checked here, since OLM would install it anyway. */
function checkSharded(deployments: readonly K8sObject[], rbac: Rbac): void {
  for (const d of deployments) {
    const sa = serviceAccountOf(d);
    const rules = [...(rbac.permissions.get(sa) ?? []), ...(rbac.clusterPermissions.get(sa) ?? [])];
    const problem = shardingProblem({ name: d.metadata.name, spec: d['spec'], serviceAccountName: sa }, rules);
    if (problem !== undefined) throw new BundleInputError(problem);
  }
}

interface Sorted {
  samples: K8sObject[];
  others: K8sObject[];
  notes: string[];
}

function sortRest(rest: readonly K8sObject[], crds: readonly K8sObject[], sas: ReadonlySet<string>): Sorted {
  const out: Sorted = { samples: [], others: [], notes: [] };
  for (const o of rest) {
    if (isExampleOf(o, crds)) out.samples.push(stripNamespace(o));
    else if (o.kind === 'ServiceAccount' && sas.has(o.metadata.name))
      continue; // OLM creates it from the CSV
    else if (!REGISTRY_V1_KINDS.has(o.kind))
      out.notes.push(`left out ${o.kind} ${o.metadata.name}: not a kind a registry+v1 bundle may carry`);
    else out.others.push(stripNamespace(o));
  }
  return out;
}

function csvAnnotations(base: K8sObject, samples: readonly K8sObject[], input: BundleInput): Record<string, string> {
  return {
    ...(base.metadata.annotations ?? {}),
    'alm-examples': JSON.stringify(samples, null, 2),
    createdAt: input.createdAt,
    'operators.operatorframework.io/builder': `${BUILDER}-v${input.builderVersion}`,
    'operators.operatorframework.io/project_layout': PROJECT_LAYOUT,
  };
}

export function buildBundle(input: BundleInput): BundleContent {
  if (!SEMVER.test(input.version)) throw new BundleInputError(`--version ${input.version}: not a semantic version (e.g. 0.1.0)`);
  const base = singleBase(input.objects);
  const given = input.objects.filter((o) => o.kind === 'Deployment');
  if (given.length === 0) throw new BundleInputError('no Deployment in the input: config/manifests must include ../default');
  const deployments = input.shardedReplicas === undefined ? given : shardedDeployments(given, input.shardedReplicas);
  const crds = input.objects.filter((o) => o.kind === 'CustomResourceDefinition');
  const sas = new Set(deployments.map(serviceAccountOf));
  const rbac = absorbRbac(input.objects, sas);
  checkSharded(deployments, rbac);
  const rest = input.objects.filter(
    (o) => o !== base && o.kind !== 'Deployment' && o.kind !== 'CustomResourceDefinition' && !rbac.absorbed.has(o),
  );
  const { samples, others, notes } = sortRest(rest, crds, sas);

  const csv = clone(base);
  csv.metadata = { ...csv.metadata, name: `${input.packageName}.v${input.version}`, annotations: csvAnnotations(base, samples, input) };
  delete csv.metadata.namespace;
  const spec = isPlainObject(csv['spec']) ? csv['spec'] : {};
  csv['spec'] = spec;
  spec['version'] = input.version;
  if (input.replaces !== undefined) spec['replaces'] = input.replaces;
  spec['customresourcedefinitions'] = { owned: mergeOwned(crds.flatMap(ownedEntries), spec['customresourcedefinitions']) };
  spec['install'] = {
    strategy: 'deployment',
    spec: {
      deployments: deployments.map((d) => ({
        name: d.metadata.name,
        ...(d.metadata.labels === undefined ? {} : { label: clone(d.metadata.labels) }),
        spec: withWatchNamespaceFromOlm(isPlainObject(d['spec']) ? d['spec'] : {}),
      })),
      ...(rbac.permissions.size > 0 ? { permissions: toPermissions(rbac.permissions) } : {}),
      ...(rbac.clusterPermissions.size > 0 ? { clusterPermissions: toPermissions(rbac.clusterPermissions) } : {}),
    },
  };
  spec['relatedImages'] = relatedImages(deployments, input.useImageDigests === true);
  const shardNotes = deployments.some((d) => runsSharded(d['spec'])) ? [SHARDED_INSTALL_MODES_NOTE] : [];
  return { csv, crds: crds.map(stripNamespace), others, notes: [...notes, ...shardNotes] };
}

/** operator-sdk's bundle file names: `<group>_<plural>.yaml` for CRDs, `<name>_<group>_<version>_<kind>.yaml` otherwise. */
export function manifestFileName(o: K8sObject, packageName: string): string {
  if (o.kind === 'ClusterServiceVersion') return `${packageName}.clusterserviceversion.yaml`;
  if (o.kind === 'CustomResourceDefinition') {
    const spec = isPlainObject(o['spec']) ? o['spec'] : {};
    const names = isPlainObject(spec['names']) ? spec['names'] : {};
    return `${String(spec['group'])}_${String(names['plural'])}.yaml`;
  }
  const group = groupOf(o.apiVersion);
  return `${[o.metadata.name, ...(group === '' ? [] : [group]), versionOf(o.apiVersion), o.kind.toLowerCase()].join('_')}.yaml`;
}
