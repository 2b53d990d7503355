/**
 * Least-privilege rules for the objects a chart renders: what the operator's ClusterRole needs so
 * that helm can install, upgrade and uninstall a release of the chart, and the operator can watch
 * and repair its objects. Never `*`: operator-sdk grants `verbs: ["*"]` per API group, which turns
 * every Helm operator into a near cluster-admin.
 */
import { groupOf } from '../util/group-kind.js';
import { isPlainObject } from '../util/plain-object.js';

export interface ResourceInfo {
  readonly group: string;
  readonly resource: string;
  readonly namespaced: boolean;
}

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  /** Only on `bind` rules for roles the chart binds but does not create (e.g. `view`). */
  resourceNames?: string[];
}

/** An object of the rendered chart. `name`, `rules` and `roleRef` are read for RBAC objects only. */
export interface RenderedObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name?: string;
  /** A Role's or ClusterRole's rules, as rendered. */
  readonly rules?: unknown;
  /** A RoleBinding's or ClusterRoleBinding's roleRef, as rendered. */
  readonly roleRef?: unknown;
  /** An aggregated ClusterRole's aggregationRule, as rendered. */
  readonly aggregationRule?: unknown;
  /** A CustomResourceDefinition's kind and resource: the chart's own kinds map without a cluster. */
  readonly defines?: ResourceInfo & { readonly kind: string };
}

export interface RbacResult {
  readonly rules: PolicyRule[];
  /** `apiVersion Kind` of each kind `resolve` did not know, sorted: its rule must be written by hand. */
  readonly unresolved: string[];
  /** Things the role's author must know, for a comment above the rules. Sorted, no duplicates. */
  readonly notes: string[];
}

/**
 * What helm and the operator do to a release object: helm creates, reads, patches or replaces, and
 * deletes it (install, upgrade, rollback, uninstall, hooks); the operator lists and watches each kind
 * (dependent watches, `helm --wait`) and repairs drift with server-side apply (patch). The same
 * verbs as config/rbac/role.yaml, in the order Kubernetes documents them.
 */
export const RELEASE_OBJECT_VERBS: readonly string[] = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

const VERB_ORDER = [...RELEASE_OBJECT_VERBS, 'deletecollection', 'bind', 'escalate', 'impersonate', 'use', 'approve', 'sign'];

const RBAC_GROUP = 'rbac.authorization.k8s.io';

/** Kind → [plural, namespaced] per API group: what charts commonly render. CRD-based kinds are not here. */
const BUILTIN: Readonly<Record<string, Readonly<Record<string, readonly [string, boolean]>>>> = {
  '': {
    ConfigMap: ['configmaps', true],
    Endpoints: ['endpoints', true],
    Event: ['events', true],
    LimitRange: ['limitranges', true],
    Namespace: ['namespaces', false],
    PersistentVolume: ['persistentvolumes', false],
    PersistentVolumeClaim: ['persistentvolumeclaims', true],
    Pod: ['pods', true],
    PodTemplate: ['podtemplates', true],
    ReplicationController: ['replicationcontrollers', true],
    ResourceQuota: ['resourcequotas', true],
    Secret: ['secrets', true],
    Service: ['services', true],
    ServiceAccount: ['serviceaccounts', true],
  },
  'admissionregistration.k8s.io': {
    MutatingAdmissionPolicy: ['mutatingadmissionpolicies', false],
    MutatingAdmissionPolicyBinding: ['mutatingadmissionpolicybindings', false],
    MutatingWebhookConfiguration: ['mutatingwebhookconfigurations', false],
    ValidatingAdmissionPolicy: ['validatingadmissionpolicies', false],
    ValidatingAdmissionPolicyBinding: ['validatingadmissionpolicybindings', false],
    ValidatingWebhookConfiguration: ['validatingwebhookconfigurations', false],
  },
  'apiextensions.k8s.io': { CustomResourceDefinition: ['customresourcedefinitions', false] },
  'apiregistration.k8s.io': { APIService: ['apiservices', false] },
  apps: {
    ControllerRevision: ['controllerrevisions', true],
    DaemonSet: ['daemonsets', true],
    Deployment: ['deployments', true],
    ReplicaSet: ['replicasets', true],
    StatefulSet: ['statefulsets', true],
  },
  autoscaling: { HorizontalPodAutoscaler: ['horizontalpodautoscalers', true] },
  batch: { CronJob: ['cronjobs', true], Job: ['jobs', true] },
  'certificates.k8s.io': { CertificateSigningRequest: ['certificatesigningrequests', false] },
  'coordination.k8s.io': { Lease: ['leases', true] },
  'discovery.k8s.io': { EndpointSlice: ['endpointslices', true] },
  'events.k8s.io': { Event: ['events', true] },
  'networking.k8s.io': {
    IngressClass: ['ingressclasses', false],
    Ingress: ['ingresses', true],
    NetworkPolicy: ['networkpolicies', true],
  },
  'node.k8s.io': { RuntimeClass: ['runtimeclasses', false] },
  policy: { PodDisruptionBudget: ['poddisruptionbudgets', true], PodSecurityPolicy: ['podsecuritypolicies', false] },
  [RBAC_GROUP]: {
    ClusterRole: ['clusterroles', false],
    ClusterRoleBinding: ['clusterrolebindings', false],
    Role: ['roles', true],
    RoleBinding: ['rolebindings', true],
  },
  'scheduling.k8s.io': { PriorityClass: ['priorityclasses', false] },
  'storage.k8s.io': {
    CSIDriver: ['csidrivers', false],
    CSINode: ['csinodes', false],
    CSIStorageCapacity: ['csistoragecapacities', true],
    StorageClass: ['storageclasses', false],
    VolumeAttachment: ['volumeattachments', false],
    VolumeAttributesClass: ['volumeattributesclasses', false],
  },
};

/**
 * The resource of a built-in kind commonly found in charts, for any version of its group (so
 * `autoscaling/v1` and `/v2` both resolve), or undefined. For use without a cluster to ask; a
 * caller with discovery should ask it first and fall back to this.
 */
export function builtinResourceInfo(apiVersion: string, kind: string): ResourceInfo | undefined {
  const group = groupOf(apiVersion);
  const kinds = Object.hasOwn(BUILTIN, group) ? BUILTIN[group] : undefined;
  // hasOwn: `constructor` or `toString` as a kind must not find Object.prototype's members.
  const entry = kinds !== undefined && Object.hasOwn(kinds, kind) ? kinds[kind] : undefined;
  if (entry === undefined) return undefined;
  return { group, resource: entry[0], namespaced: entry[1] };
}

type Resolve = (apiVersion: string, kind: string) => ResourceInfo | undefined;

/** Verbs per resource per API group, and bind rules kept apart (they carry resourceNames). */
class RuleSet {
  readonly #verbs = new Map<string, Map<string, Set<string>>>();
  readonly #binds = new Map<string, PolicyRule>();

  add(group: string, resource: string, verbs: Iterable<string>): void {
    let resources = this.#verbs.get(group);
    if (resources === undefined) this.#verbs.set(group, (resources = new Map<string, Set<string>>()));
    let set = resources.get(resource);
    if (set === undefined) resources.set(resource, (set = new Set()));
    for (const verb of verbs) set.add(verb);
  }

  bind(resource: 'roles' | 'clusterroles', name: string): void {
    const key = `${resource}/${name}`;
    this.#binds.set(key, { apiGroups: [RBAC_GROUP], resources: [resource], verbs: ['bind'], resourceNames: [name] });
  }

  /** One rule per API group and set of verbs, resources sorted; groups sorted with core first. */
  rules(): PolicyRule[] {
    const out: PolicyRule[] = [];
    for (const group of [...this.#verbs.keys()].sort()) {
      const byVerbs = new Map<string, string[]>();
      for (const [resource, verbs] of this.#verbs.get(group) ?? []) {
        const key = sortVerbs(verbs).join(',');
        byVerbs.set(key, [...(byVerbs.get(key) ?? []), resource]);
      }
      for (const [verbs, resources] of [...byVerbs].sort(compareVerbSets)) {
        out.push({ apiGroups: [group], resources: resources.sort(), verbs: verbs.split(',') });
      }
    }
    return [...out, ...[...this.#binds].sort(([a], [b]) => a.localeCompare(b)).map(([, rule]) => rule)];
  }
}

const sortVerbs = (verbs: Iterable<string>): string[] => [...verbs].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));

function rank(verb: string): number {
  const i = VERB_ORDER.indexOf(verb);
  return i < 0 ? VERB_ORDER.length : i;
}

/** The widest verb set first (the release objects' rule), then by the verbs' names. */
function compareVerbSets([a]: [string, string[]], [b]: [string, string[]]): number {
  return b.split(',').length - a.split(',').length || a.localeCompare(b);
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : []);

const ROLE_KINDS = new Set(['Role', 'ClusterRole']);
const BINDING_KINDS = new Set(['RoleBinding', 'ClusterRoleBinding']);

/**
 * Kubernetes lets the operator create a Role only if it already holds every permission the Role
 * grants (or has `escalate`), and bind a role only if it holds that role's permissions (or has
 * `bind` on it). We never grant `escalate`, nor `bind` on any role: either would let the operator
 * give itself anything. So the operator holds what the chart's roles grant (without their
 * resourceNames, which the render fixed to one release's names), and gets `bind` by name on roles
 * the chart binds but does not create (`view`, `system:auth-delegator`, ...).
 */
function addRbacObject(object: RenderedObject, chartRoles: ReadonlySet<string>, set: RuleSet, notes: Set<string>): void {
  if (ROLE_KINDS.has(object.kind)) addRole(object, set, notes);
  else if (BINDING_KINDS.has(object.kind)) addBinding(object, chartRoles, set, notes);
}

const describe = (object: RenderedObject): string => `${object.kind} ${object.name ?? '(unnamed)'}`;

function addRole(role: RenderedObject, set: RuleSet, notes: Set<string>): void {
  if (role.aggregationRule !== undefined) {
    notes.add(
      `The chart's ${describe(role)} has an aggregationRule: Kubernetes requires escalate on clusterroles (or cluster-admin) to write one. Grant it by hand if you accept that.`,
    );
  } else if (!Array.isArray(role.rules)) {
    notes.add(
      `The chart creates a ${role.kind}: the operator may only create it if it holds every permission it grants. Add its rules to this role.`,
    );
  } else {
    for (const rule of role.rules) addHeldRule(rule, describe(role), set, notes);
  }
}

function addBinding(binding: RenderedObject, chartRoles: ReadonlySet<string>, set: RuleSet, notes: Set<string>): void {
  const ref = isPlainObject(binding.roleRef) ? binding.roleRef : {};
  const kind = ref.kind === 'ClusterRole' ? 'ClusterRole' : 'Role';
  const name = typeof ref.name === 'string' ? ref.name : undefined;
  if (name === undefined) {
    notes.add(`The chart's ${describe(binding)} has no roleRef name: the operator needs bind on the role it binds.`);
  } else if (!chartRoles.has(`${kind}/${name}`)) {
    set.bind(kind === 'ClusterRole' ? 'clusterroles' : 'roles', name);
    notes.add(
      `The chart's ${describe(binding)} binds ${kind} ${name}, which the chart does not create: bind is granted on that name only. A name made from the release name differs per release: widen the rule by hand.`,
    );
  }
}

function addHeldRule(rule: unknown, what: string, set: RuleSet, notes: Set<string>): void {
  if (!isPlainObject(rule)) return;
  const groups = strings(rule.apiGroups);
  const resources = strings(rule.resources);
  const verbs = strings(rule.verbs);
  if (strings(rule.nonResourceURLs).length > 0) {
    notes.add(`The chart's ${what} grants non-resource URLs (${strings(rule.nonResourceURLs).join(', ')}): add them to this role by hand.`);
  }
  if ([...groups, ...resources, ...verbs].includes('*')) {
    notes.add(
      `The chart's ${what} grants "*": the operator must hold the same to create it. Not granted: list the permissions by hand, or grant escalate on that role by name.`,
    );
    return;
  }
  if (strings(rule.resourceNames).length > 0) {
    notes.add(`The chart's ${what} limits a rule to resourceNames: the operator holds it for every name.`);
  }
  for (const group of groups) for (const resource of resources) set.add(group, resource, verbs);
}

/**
 * Pure: the rules the operator needs for a chart's rendered objects, merged and sorted, and the
 * kinds `resolve` did not know. Pass each object's `name`, and a Role's `rules` or a binding's
 * `roleRef`, to cover what RBAC objects in the chart require (see addRbacObject).
 */
export function rulesForObjects(objects: readonly RenderedObject[], resolve: Resolve): RbacResult {
  const set = new RuleSet();
  const unresolved = new Set<string>();
  const notes = new Set<string>();
  const clusterScoped = new Set<string>();
  const chartRoles = new Set(objects.filter((o) => ROLE_KINDS.has(o.kind)).map((o) => `${o.kind}/${o.name ?? ''}`));
  for (const object of objects) {
    const info = resolve(object.apiVersion, object.kind);
    if (info === undefined) {
      unresolved.add(`${object.apiVersion} ${object.kind}`);
      continue;
    }
    set.add(info.group, info.resource, RELEASE_OBJECT_VERBS);
    if (!info.namespaced) clusterScoped.add(object.kind);
    if (info.group === RBAC_GROUP) addRbacObject(object, chartRoles, set, notes);
  }
  if (clusterScoped.size > 0) {
    notes.add(
      `The chart creates cluster-scoped objects (${[...clusterScoped].sort().join(', ')}): releases of CRs with the same name in two namespaces collide on them unless their names include the namespace.`,
    );
  }
  return { rules: set.rules(), unresolved: [...unresolved].sort(), notes: [...notes].sort() };
}

/**
 * Pure: rules merged as rulesForObjects merges them (one rule per API group and verb set), e.g. the
 * operator's own rules together with a chart's. Rules with resourceNames or several API groups are
 * kept as they are, after the merged ones.
 */
export function mergeRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const set = new RuleSet();
  const kept: PolicyRule[] = [];
  for (const rule of rules) {
    if ((rule.resourceNames?.length ?? 0) > 0 || rule.apiGroups.length !== 1) kept.push(rule);
    else for (const resource of rule.resources) set.add(rule.apiGroups[0] ?? '', resource, rule.verbs);
  }
  return [...set.rules(), ...kept];
}
