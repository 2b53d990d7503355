/**
 * What `crds: CreateReplace` does with a chart's CRDs before an upgrade (docs/adr/0075): which of
 * them changed against the cluster, whether each change is safe for the objects already stored
 * (OLM v1's upgrade-safety rules, config/crd-upgrade-safety.ts, against the live CRD and its
 * `status.storedVersions`), and what the CR's status says when one is not. Pure.
 */
import type { ChartCrd } from '../../config/chart-crds.js';
import { crdUpgradeSafety, type UnsafeChange } from '../../config/crd-upgrade-safety.js';
import { isDeepStrictEqual } from 'node:util';
import { isPlainObject } from '../../util/plain-object.js';

/** The kind the watch's `allowClusterScoped` and `allowKinds` name a CRD by. */
export const CRD_KIND = 'CustomResourceDefinition.apiextensions.k8s.io';
/** The field manager of the operator's CRD applies: the CRDs' own, apart from helm's and drift repair's. */
export const CRD_FIELD_MANAGER = 'helm-operator-crds';

/** A chart CRD that is to be applied: `create` (not on the cluster) or `replace` (changed, and safe). */
export interface CrdApply {
  readonly kind: 'create' | 'replace';
  readonly crd: ChartCrd;
}

/** A chart CRD whose change the rules refuse. */
export interface CrdRefusal {
  readonly crd: ChartCrd;
  readonly changes: readonly UnsafeChange[];
}

export type CrdPlan =
  { readonly kind: 'apply'; readonly applies: readonly CrdApply[] } | { readonly kind: 'unsafe'; readonly refusals: readonly CrdRefusal[] };

/**
 * Whether every field `desired` sets has that value in `live`: the API server adds defaults
 * (`conversion`, `status`), so a CRD the cluster has as the chart wrote it still holds more.
 */
export function holds(live: unknown, desired: unknown): boolean {
  if (isPlainObject(desired)) return isPlainObject(live) && Object.entries(desired).every(([k, v]) => holds(live[k], v));
  if (Array.isArray(desired)) return Array.isArray(live) && live.length === desired.length && desired.every((v, i) => holds(live[i], v));
  return isDeepStrictEqual(live, desired);
}

/** The part of a CRD the chart decides: its spec, and the labels and annotations it sets (a controller-gen version, say). */
const written = (crd: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const metadata = isPlainObject(crd.metadata) ? crd.metadata : {};
  const { labels, annotations } = metadata;
  return {
    spec: crd.spec,
    metadata: { ...(labels === undefined ? {} : { labels }), ...(annotations === undefined ? {} : { annotations }) },
  };
};

const storedVersionsOf = (live: Readonly<Record<string, unknown>>): string[] => {
  const status = isPlainObject(live.status) ? live.status : {};
  return Array.isArray(status.storedVersions) ? status.storedVersions.filter((v): v is string => typeof v === 'string') : [];
};

/**
 * Pure: what to do with the chart's CRDs given the cluster's (`live`, by name; absent: none). Any
 * unsafe change refuses them all, so nothing is applied when one is refused; a CRD the cluster holds
 * as the chart writes it is left alone.
 */
export function planChartCrds(
  chart: readonly ChartCrd[],
  live: ReadonlyMap<string, Readonly<Record<string, unknown>> | undefined>,
): CrdPlan {
  const applies: CrdApply[] = [];
  const refusals: CrdRefusal[] = [];
  for (const crd of chart) {
    const current = live.get(crd.name);
    if (current === undefined) {
      applies.push({ kind: 'create', crd });
      continue;
    }
    if (holds(current, written(crd.object))) continue;
    const changes = crdUpgradeSafety(current, crd.object, storedVersionsOf(current));
    if (changes.length === 0) applies.push({ kind: 'replace', crd });
    else refusals.push({ crd, changes });
  }
  return refusals.length === 0 ? { kind: 'apply', applies } : { kind: 'unsafe', refusals };
}

const MAX_SHOWN = 5;

/** `v1alpha1 .spec.port: type changed from integer to string (Type)`. */
const describeChange = (c: UnsafeChange): string => `${c.version === undefined ? '' : `${c.version} `}${c.path}: ${c.message} (${c.check})`;

/** Pure: the status message of a refused CRD change: each CRD, the rule and the field. */
export function unsafeCrdMessage(refusals: readonly CrdRefusal[]): string {
  const parts = refusals.map((r) => {
    const shown = r.changes.slice(0, MAX_SHOWN).map(describeChange).join('; ');
    const more = r.changes.length > MAX_SHOWN ? `; and ${r.changes.length - MAX_SHOWN} more` : '';
    return `CRD ${r.crd.name} (${r.crd.file}): ${shown}${more}`;
  });
  return `the chart's CRDs were not applied and the release was not upgraded: OLM v1's upgrade-safety rules refuse a change that could break the objects already stored: ${parts.join('; ')}. Make the change compatible in the chart, or migrate the stored objects and apply the CRD yourself`;
}

/**
 * Pure: why the watch may not apply CRDs at all, as helm would be refused through the gateway:
 * a confined release without CustomResourceDefinition in `allowClusterScoped`, or an `allowKinds`
 * without it. undefined: it may.
 */
export function crdWriteRefusal(
  watch: {
    readonly confineToNamespace: boolean;
    readonly allowClusterScoped: readonly string[];
    readonly allowKinds?: readonly string[] | undefined;
  },
  crds: readonly ChartCrd[],
): { readonly reason: 'confinement' | 'allowKinds'; readonly message: string } | undefined {
  const names = crds.map((c) => c.name).join(', ');
  if (watch.confineToNamespace && !watch.allowClusterScoped.includes(CRD_KIND))
    return {
      reason: 'confinement',
      message: `the chart's crds/ hold cluster-scoped CustomResourceDefinitions (${names}), which this watch confines the release away from: add ${CRD_KIND} to allowClusterScoped, or set crds: Skip`,
    };
  if (watch.allowKinds !== undefined && !watch.allowKinds.includes(CRD_KIND))
    return {
      reason: 'allowKinds',
      message: `the chart's crds/ hold CustomResourceDefinitions (${names}), a kind this watch's allowKinds does not list: add ${CRD_KIND}, or set crds: Skip`,
    };
  return undefined;
}
