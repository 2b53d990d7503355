/**
 * Marks each object of a release as belonging to its CR: an owner reference when Kubernetes allows
 * one (same namespace), operator-sdk's owner annotations otherwise (cluster-scoped objects, other
 * namespaces, `helm.sh/resource-policy: keep`), and the chart label everywhere, which is also what
 * the dependent watches select on.
 */
import { qualifiedKind } from '../../util/group-kind.js';
import type { KubernetesObject, V1OwnerReference } from '@kubernetes/client-node';
import type { JsonPatchOperation } from '../../k8s/objects.js';
import type { InventoryEntry } from './inventory.js';

export const CHART_LABEL = 'helm.sdk.operatorframework.io/chart';
export const PRIMARY_RESOURCE = 'operator-sdk/primary-resource';
export const PRIMARY_RESOURCE_TYPE = 'operator-sdk/primary-resource-type';
const RESOURCE_POLICY = 'helm.sh/resource-policy';

export interface Owner {
  readonly apiVersion: string;
  readonly kind: string;
  readonly group: string;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

export const ownerType = (owner: Pick<Owner, 'kind' | 'group'>): string => qualifiedKind(owner.kind, owner.group);

/** Whether an owner reference may point at `owner` (GC only follows them within a namespace). */
function canOwn(entry: InventoryEntry, owner: Owner, annotations: Readonly<Record<string, string>>): boolean {
  return entry.namespace === owner.namespace && annotations[RESOURCE_POLICY] !== 'keep';
}

export interface OwnershipInput {
  readonly entry: InventoryEntry;
  readonly owner: Owner;
  readonly chartName: string;
  /** The object as it is now; undefined when unknown. */
  readonly live: KubernetesObject | undefined;
  /** Annotations the chart rendered (`helm.sh/resource-policy` lives there). */
  readonly renderedAnnotations?: Readonly<Record<string, string>>;
}

function alreadyOwned(input: OwnershipInput, byRef: boolean): boolean {
  const meta = input.live?.metadata;
  if (meta?.labels?.[CHART_LABEL] !== input.chartName) return false;
  if (byRef) return (meta.ownerReferences ?? []).some((r) => r.uid === input.owner.uid);
  const annotations = meta.annotations ?? {};
  return (
    annotations[PRIMARY_RESOURCE] === `${input.owner.namespace}/${input.owner.name}` &&
    annotations[PRIMARY_RESOURCE_TYPE] === ownerType(input.owner)
  );
}

function ownerReference(owner: Owner, existing: readonly V1OwnerReference[]): V1OwnerReference {
  // Only one reference may be the controller: defer to one that is already there.
  const otherController = existing.some((r) => r.controller === true && r.uid !== owner.uid);
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.name,
    uid: owner.uid,
    controller: !otherController,
    blockOwnerDeletion: true,
  };
}

/**
 * Pure: the merge patch stamping ownership on `live`, or undefined when it already carries it.
 * Only these metadata fields change; other owners' references are kept, and the patch carries
 * `live`'s resourceVersion so it fails instead of racing another writer of the owner list.
 */
export function ownershipPatch(input: OwnershipInput): KubernetesObject | undefined {
  const { entry, live } = input;
  const byRef = canOwn(entry, input.owner, { ...input.renderedAnnotations, ...live?.metadata?.annotations });
  if (live !== undefined && alreadyOwned(input, byRef)) return undefined;
  return { apiVersion: entry.apiVersion, kind: entry.kind, metadata: ownershipMetadata(input, byRef) };
}

/**
 * Pure: the JSON patch stamping ownership on an object helm has just created, which no one has
 * read: it adds the chart label and the owner reference (or owner annotations) without a GET
 * first. Its `test` makes it fail, and the caller fall back to {@link ownershipPatch}, when the
 * object already has owner references; so does a missing label or annotation map (helm always
 * sets both).
 */
export function createdOwnershipPatch(input: Omit<OwnershipInput, 'live'>): JsonPatchOperation[] {
  const byRef = canOwn(input.entry, input.owner, input.renderedAnnotations ?? {});
  const metadata = ownershipMetadata({ ...input, live: undefined }, byRef) ?? {};
  const add = (map: string, entries: Readonly<Record<string, string>>): JsonPatchOperation[] =>
    Object.entries(entries).map(([key, value]) => ({ op: 'add', path: `/metadata/${map}/${escapeJsonPointer(key)}`, value }));
  return [
    ...add('labels', metadata.labels ?? {}),
    ...add('annotations', metadata.annotations ?? {}),
    ...(metadata.ownerReferences === undefined
      ? []
      : [
          { op: 'test', path: '/metadata/ownerReferences', value: null } as const,
          { op: 'add', path: '/metadata/ownerReferences', value: metadata.ownerReferences } as const,
        ]),
  ];
}

/**
 * Pure: the ownership metadata an object is rendered with (render-ownership.ts), so that helm
 * creates it owned: the chart label, and an owner reference or the owner annotations.
 */
export function renderedOwnership(
  input: Omit<OwnershipInput, 'live'>,
): Pick<NonNullable<KubernetesObject['metadata']>, 'labels' | 'annotations' | 'ownerReferences'> {
  const { labels, annotations, ownerReferences } =
    ownershipMetadata({ ...input, live: undefined }, canOwn(input.entry, input.owner, input.renderedAnnotations ?? {})) ?? {};
  return { labels, ...(annotations === undefined ? {} : { annotations }), ...(ownerReferences === undefined ? {} : { ownerReferences }) };
}

/** RFC 6901: `~` and `/` in a key. */
const escapeJsonPointer = (key: string): string => key.replaceAll('~', '~0').replaceAll('/', '~1');

function ownershipMetadata({ entry, owner, live, chartName }: OwnershipInput, byRef: boolean): KubernetesObject['metadata'] {
  const existing = live?.metadata?.ownerReferences ?? [];
  const resourceVersion = live?.metadata?.resourceVersion;
  const metadata: KubernetesObject['metadata'] = {
    name: entry.name,
    ...(entry.namespace === '' ? {} : { namespace: entry.namespace }),
    ...(resourceVersion === undefined ? {} : { resourceVersion }),
    labels: { [CHART_LABEL]: chartName },
  };
  if (byRef) metadata.ownerReferences = [...existing.filter((r) => r.uid !== owner.uid), ownerReference(owner, existing)];
  else metadata.annotations = { [PRIMARY_RESOURCE]: `${owner.namespace}/${owner.name}`, [PRIMARY_RESOURCE_TYPE]: ownerType(owner) };
  return metadata;
}

/** Pure: the CR an object belongs to, from its owner references or owner annotations. */
export function ownersOf(
  obj: KubernetesObject,
): { readonly type: string; readonly apiVersion?: string; readonly namespace: string; readonly name: string }[] {
  const meta = obj.metadata ?? {};
  const fromRefs = (meta.ownerReferences ?? []).map((r) => ({
    type: r.kind,
    apiVersion: r.apiVersion,
    namespace: meta.namespace ?? '',
    name: r.name,
  }));
  const primary = meta.annotations?.[PRIMARY_RESOURCE];
  const type = meta.annotations?.[PRIMARY_RESOURCE_TYPE];
  if (primary === undefined || type === undefined) return fromRefs;
  const slash = primary.indexOf('/');
  const namespace = slash < 0 ? '' : primary.slice(0, slash);
  return [...fromRefs, { type, namespace, name: primary.slice(slash + 1) }];
}
