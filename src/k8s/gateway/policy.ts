/**
 * What helm may do through the gateway for one release operation. Every request helm makes (its
 * storage, the chart's objects, `crds/`, hooks, templates' `lookup()`, `--wait`) is decided here
 * from the request itself, so no second render and no manifest parser stands between the check and
 * what is applied (docs/adr/0045). Pure.
 */
import { qualifiedKind } from '../../util/group-kind.js';
import { storagePrefix } from '../../util/release-storage-name.js';
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
  /** A label that opts a Secret of `namespace` in to being read (the values-source label). */
  readonly readableLabel: { readonly key: string; readonly value: string };
  /**
   * `Kind` or `Kind.group`: the only kinds helm may write (watches.yaml `allowKinds`); undefined:
   * any. helm's own release records (Secrets) are always allowed.
   */
  readonly allowKinds?: readonly string[];
}

/** The kind and scope discovery gives a resource; undefined when the API server does not serve it. */
export interface ResourceScope {
  readonly kind: string;
  readonly namespaced: boolean;
}

export type Decision =
  | { readonly action: 'forward' }
  /** Forward, then answer only the Secrets {@link readable} allows (NotFound or a filtered list). */
  | { readonly action: 'inspect' }
  /** A change to a Secret: read it first, and refuse when it exists and is not {@link changeable}. */
  | { readonly action: 'check-target' }
  /** A Secret created under `allowKinds` without Secret: forwarded only if the body is one of the releases' records. */
  | { readonly action: 'check-storage-record' }
  /** 403 with this message. */
  | { readonly action: 'refuse'; readonly message: string }
  /** 404, as if the object did not exist: what `lookup()` reads as "nothing there". */
  | { readonly action: 'hide' };

/** Every refusal's message starts so; helm quotes it, and the error classifier looks for it. */
export const REFUSAL_PREFIX = 'refused by the helm gateway';

/**
 * Secrets: read only when this release's, or opted in (ADR 0035). ConfigMaps are not: charts
 * `lookup()` their namespace's ConfigMaps as markers and settings, and a confined release's
 * reads stay in its namespace anyway.
 */
const SENSITIVE: ReadonlySet<string> = new Set(['secrets']);
/** Read-only subresources helm's readiness checks may ask for; every other subresource is refused. */
const READABLE_SUBRESOURCES: ReadonlySet<string> = new Set(['status', 'scale']);

const forward: Decision = { action: 'forward' };
const hide: Decision = { action: 'hide' };
const refuse = (message: string): Decision => ({ action: 'refuse', message: `${REFUSAL_PREFIX}: ${message}` });

function describe(r: ResourceRequest, scope: ResourceScope | undefined): string {
  const what = scope === undefined ? `${r.resource}${r.group === '' ? '' : `.${r.group}`}` : qualifiedKind(scope.kind, r.group);
  const where = r.namespace === undefined ? '' : `${r.namespace}/`;
  return `${r.verb} ${what} ${where}${r.name ?? ''}`.trim();
}

/** Pure: the decision for one request. `scope` is discovery's answer for the request's resource. */
export function decide(req: ApiRequest, policy: GatewayPolicy, scope: ResourceScope | undefined): Decision {
  if (req.type === 'discovery') return forward;
  if (req.type === 'other') return refuse(`the path ${req.path} is not one helm needs`);
  const unneeded = neverNeeded(req);
  if (unneeded !== undefined) return unneeded;
  if (policy.confineWrites) {
    const confined = confinement(req, policy, scope);
    if (confined !== undefined) return confined;
  }
  if (policy.allowKinds !== undefined && isWrite(req.verb)) {
    const listed = allowList(req, policy, policy.allowKinds, scope);
    if (listed !== undefined) return listed;
  }
  if (req.group === '' && SENSITIVE.has(req.resource) && req.subresource === undefined) return sensitive(req, policy);
  return forward;
}

/** What helm never asks for: subresources other than reading status or scale, collection deletes. */
function neverNeeded(req: ResourceRequest): Decision | undefined {
  if (req.subresource !== undefined && !(req.verb === 'get' && READABLE_SUBRESOURCES.has(req.subresource)))
    return refuse(`${req.verb} of the subresource ${req.resource}/${req.subresource} is not one helm needs`);
  if (req.verb === 'deletecollection') return refuse(`deleting every ${req.resource} at once is not one helm needs`);
  return undefined;
}

/** confineToNamespace: a decision for requests outside the namespace, undefined for those inside it. */
function confinement(req: ResourceRequest, policy: GatewayPolicy, scope: ResourceScope | undefined): Decision | undefined {
  const write = isWrite(req.verb);
  if (req.namespace !== undefined) {
    if (req.namespace === policy.namespace) return undefined;
    return write ? refuse(`${describe(req, scope)} is outside namespace ${policy.namespace}, which this watch confines releases to`) : hide;
  }
  if (scope === undefined)
    return write ? refuse(`${describe(req, scope)}: the kind is not served, so its scope cannot be checked`) : undefined;
  if (scope.namespaced) return write ? refuse(`${describe(req, scope)} in every namespace is outside namespace ${policy.namespace}`) : hide;
  if (!write) return undefined;
  const kind = qualifiedKind(scope.kind, req.group);
  if (policy.allowClusterScoped.includes(kind)) return undefined;
  return refuse(`${describe(req, scope)} is cluster-scoped, and this watch allows no ${kind} (allowClusterScoped)`);
}

/** `allowKinds`: a decision for a write of a kind the list does not name, undefined for one it does. */
function allowList(
  req: ResourceRequest,
  policy: GatewayPolicy,
  allowKinds: readonly string[],
  scope: ResourceScope | undefined,
): Decision | undefined {
  if (scope === undefined) return refuse(`${describe(req, scope)}: the kind is not served, so it cannot be checked against allowKinds`);
  const kind = qualifiedKind(scope.kind, req.group);
  if (allowKinds.includes(kind)) return undefined;
  if (kind === 'Secret' && req.subresource === undefined) {
    // helm's release records: by name where the path has one, by the body where it does not.
    if (req.name === undefined)
      return req.verb === 'create'
        ? { action: 'check-storage-record' }
        : refuse(`${describe(req, scope)}: Secret is not in this watch's allowKinds`);
    if (policy.releases.some((r) => req.name?.startsWith(storagePrefix(r)) === true)) return undefined;
  }
  return refuse(`${describe(req, scope)}: ${kind} is not in this watch's allowKinds`);
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
 * Secret types whose data the API server (the token controller), not whoever created the
 * Secret, writes: a release that makes one for a ServiceAccount would read back its token.
 */
const FILLED_BY_THE_CLUSTER: ReadonlySet<string> = new Set(['kubernetes.io/service-account-token']);

/**
 * Pure: whether helm may see this Secret (`type` its Secret type): a storage record of one of the
 * policy's releases, an object one of them made (helm's ownership annotations, which only a
 * writer of the object can set) unless the cluster fills its data in, or one its namespace opted
 * in with the readable label. Always in the policy's namespace.
 */
export function readable(meta: ObjectMeta, policy: GatewayPolicy, type?: string): boolean {
  if (meta.namespace !== policy.namespace) return false;
  if (type !== undefined && FILLED_BY_THE_CLUSTER.has(type)) return false;
  return (
    isStorageRecord(meta, policy) ||
    madeByRelease(meta, policy) ||
    (meta.labels ?? {})[policy.readableLabel.key] === policy.readableLabel.value
  );
}

/** helm's ownership annotations name one of the policy's releases in its namespace. */
function madeByRelease(meta: ObjectMeta, policy: GatewayPolicy): boolean {
  const annotations = meta.annotations ?? {};
  const madeBy = annotations['meta.helm.sh/release-name'];
  return madeBy !== undefined && policy.releases.includes(madeBy) && annotations['meta.helm.sh/release-namespace'] === policy.namespace;
}

/**
 * Pure: whether helm may change (update, patch, delete) this existing Secret: one it
 * may read, or a hook of the namespace. helm makes hooks without its ownership annotations and
 * deletes them itself (`before-hook-creation`, `hook-succeeded`), so they cannot be told apart
 * by release; a hook is the chart's own bookkeeping in the tenant's namespace.
 */
export function changeable(meta: ObjectMeta, policy: GatewayPolicy, type?: string): boolean {
  if (readable(meta, policy, type)) return true;
  return meta.namespace === policy.namespace && (meta.annotations ?? {})['helm.sh/hook'] !== undefined;
}

/** Pure: whether a Secret's metadata is one of the policy's releases' storage records (labels and name). */
export function isStorageRecord(meta: ObjectMeta, policy: GatewayPolicy): boolean {
  const release = meta.labels?.owner === 'helm' ? meta.labels.name : undefined;
  return release !== undefined && policy.releases.includes(release) && (meta.name ?? '').startsWith(storagePrefix(release));
}
