/**
 * What helm may do through the gateway for one release operation. Every request helm makes (its
 * storage, the chart's objects, `crds/`, hooks, templates' `lookup()`, `--wait`) is decided here
 * from the request itself, so no second render and no manifest parser stands between the check and
 * what is applied (docs/adr/0045). Pure.
 */
import { isWrite, type ApiRequest, type ResourceRequest } from './api-request.js';

export interface GatewayPolicy {
  /** The CR's (and release's) namespace. */
  readonly namespace: string;
  /** The releases this helm process works on (more than one for a batched uninstall). */
  readonly releases: readonly string[];
  /**
   * Writes only inside `namespace`, cluster-scoped kinds only from `allowClusterScoped`; reads of
   * other namespaces are answered NotFound (confineToNamespace).
   */
  readonly confineWrites: boolean;
  /** `Kind` (core group) or `Kind.group`, as in watches.yaml's `allowClusterScoped`. */
  readonly allowClusterScoped: readonly string[];
  /** A label that opts a Secret or ConfigMap of `namespace` in to being read (the values-source label). */
  readonly readableLabel: { readonly key: string; readonly value: string };
}

/** The kind and scope discovery gives a resource; undefined when the API server does not serve it. */
export interface ResourceScope {
  readonly kind: string;
  readonly namespaced: boolean;
}

export type Decision =
  | { readonly action: 'forward' }
  /** Forward, then answer only the Secrets/ConfigMaps {@link readable} allows (NotFound or a filtered list). */
  | { readonly action: 'inspect' }
  /** A change to a Secret/ConfigMap: read it first, and refuse when it exists and is not {@link changeable}. */
  | { readonly action: 'check-target' }
  /** 403 with this message. */
  | { readonly action: 'refuse'; readonly message: string }
  /** 404, as if the object did not exist: what `lookup()` reads as "nothing there". */
  | { readonly action: 'hide' };

/** Every refusal's message starts so; helm quotes it, and the error classifier looks for it. */
export const REFUSAL_PREFIX = 'refused by the helm gateway';

/** Secrets and ConfigMaps: read only when this release's, or opted in (ADR 0035). */
const SENSITIVE: ReadonlySet<string> = new Set(['secrets', 'configmaps']);
/** Read-only subresources helm's readiness checks may ask for; every other subresource is refused. */
const READABLE_SUBRESOURCES: ReadonlySet<string> = new Set(['status', 'scale']);

const forward: Decision = { action: 'forward' };
const hide: Decision = { action: 'hide' };
const refuse = (message: string): Decision => ({ action: 'refuse', message: `${REFUSAL_PREFIX}: ${message}` });

/** `Kind` for the core group, `Kind.group` otherwise. */
export const qualifiedKind = (kind: string, group: string): string => (group === '' ? kind : `${kind}.${group}`);

function describe(r: ResourceRequest, scope: ResourceScope | undefined): string {
  const what = scope === undefined ? `${r.resource}${r.group === '' ? '' : `.${r.group}`}` : qualifiedKind(scope.kind, r.group);
  const where = r.namespace === undefined ? '' : `${r.namespace}/`;
  return `${r.verb} ${what} ${where}${r.name ?? ''}`.trim();
}

/** Pure: the decision for one request. `scope` is discovery's answer for the request's resource. */
export function decide(req: ApiRequest, policy: GatewayPolicy, scope: ResourceScope | undefined): Decision {
  if (req.type === 'discovery') return forward;
  if (req.type === 'other') return refuse(`the path ${req.path} is not one helm needs`);
  if (req.subresource !== undefined && !(req.verb === 'get' && READABLE_SUBRESOURCES.has(req.subresource)))
    return refuse(`${req.verb} of the subresource ${req.resource}/${req.subresource} is not one helm needs`);
  if (req.verb === 'deletecollection') return refuse(`deleting every ${req.resource} at once is not one helm needs`);
  if (policy.confineWrites) {
    const confined = confinement(req, policy, scope);
    if (confined !== undefined) return confined;
  }
  if (req.group === '' && SENSITIVE.has(req.resource) && req.subresource === undefined) return sensitive(req, policy);
  return forward;
}

/** confineToNamespace: a decision for requests outside the namespace, undefined for those inside it. */
function confinement(req: ResourceRequest, policy: GatewayPolicy, scope: ResourceScope | undefined): Decision | undefined {
  const write = isWrite(req.verb);
  if (req.namespace !== undefined) {
    if (req.namespace === policy.namespace) return undefined;
    return write ? refuse(`${describe(req, scope)} is outside namespace ${policy.namespace}, which this watch confines releases to`) : hide;
  }
  if (scope === undefined) return write ? refuse(`${describe(req, scope)}: the kind is not served, so its scope cannot be checked`) : undefined;
  if (scope.namespaced) return write ? refuse(`${describe(req, scope)} in every namespace is outside namespace ${policy.namespace}`) : hide;
  if (!write) return undefined;
  const kind = qualifiedKind(scope.kind, req.group);
  if (policy.allowClusterScoped.includes(kind)) return undefined;
  return refuse(`${describe(req, scope)} is cluster-scoped, and this watch allows no ${kind} (allowClusterScoped)`);
}

/** Whether a list or watch selects only the storage records of one of the policy's releases. */
function selectsOwnStorage(req: ResourceRequest, policy: GatewayPolicy): boolean {
  if (req.resource !== 'secrets' || !req.labelSelector.includes('owner=helm')) return false;
  return policy.releases.some((r) => req.labelSelector.includes(`name=${r}`));
}

function sensitive(req: ResourceRequest, policy: GatewayPolicy): Decision {
  switch (req.verb) {
    case 'get':
      return { action: 'inspect' };
    case 'list':
      return selectsOwnStorage(req, policy) ? forward : { action: 'inspect' };
    case 'watch':
      return selectsOwnStorage(req, policy) ? forward : refuse(`watching ${req.resource} is not one helm needs`);
    case 'create':
      // A name that exists already is a conflict the API server answers without the object.
      return forward;
    default:
      return { action: 'check-target' };
  }
}

export interface ObjectMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

/**
 * Pure: whether helm may see this Secret or ConfigMap: a storage record of one of the policy's
 * releases, an object one of them made (helm's ownership annotations, which only a writer of the
 * object can set), or one its namespace opted in with the readable label. Always in the policy's
 * namespace.
 */
export function readable(meta: ObjectMeta, policy: GatewayPolicy): boolean {
  if (meta.namespace !== policy.namespace) return false;
  const labels = meta.labels ?? {};
  const annotations = meta.annotations ?? {};
  const storageOf = labels.owner === 'helm' ? labels.name : undefined;
  if (storageOf !== undefined && policy.releases.includes(storageOf) && (meta.name ?? '').startsWith(`sh.helm.release.v1.${storageOf}.v`)) return true;
  const madeBy = annotations['meta.helm.sh/release-name'];
  if (madeBy !== undefined && policy.releases.includes(madeBy) && annotations['meta.helm.sh/release-namespace'] === policy.namespace) return true;
  return labels[policy.readableLabel.key] === policy.readableLabel.value;
}

/**
 * Pure: whether helm may change (update, patch, delete) this existing Secret or ConfigMap: one it
 * may read, or a hook of the namespace. helm makes hooks without its ownership annotations and
 * deletes them itself (`before-hook-creation`, `hook-succeeded`), so they cannot be told apart
 * by release; a hook is the chart's own bookkeeping in the tenant's namespace.
 */
export function changeable(meta: ObjectMeta, policy: GatewayPolicy): boolean {
  if (readable(meta, policy)) return true;
  return meta.namespace === policy.namespace && (meta.annotations ?? {})['helm.sh/hook'] !== undefined;
}
