/**
 * The objects of a deployed release after helm is done with them: marked as owned by their CR,
 * repaired when they drift from the release manifest, and summarised into a readiness condition.
 * The desired state is the manifest helm returned (kept per revision), so nothing is re-rendered.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { EventRecorder, EventTarget } from '../k8s/events.js';
import type { ObjectClient } from '../k8s/objects.js';
import type { Logger } from '../telemetry/logger.js';
import { applyWouldChange, driftedPaths } from './drift.js';
import type { InventoryEntry, ManifestObject } from './inventory.js';
import { ownershipPatch, type Owner } from './ownership.js';
import { objectReadiness, summarizeReadiness, type ObjectReadiness, type ReadinessSummary } from './readiness.js';

/** helm's field manager: drift repairs apply the chart's fields as helm itself would. */
export const HELM_FIELD_MANAGER = 'helm';
/** Ours, for the ownership metadata only. */
export const OPERATOR_FIELD_MANAGER = 'helm-operator';

export type CachedObject = { readonly known: true; readonly object: KubernetesObject | undefined } | { readonly known: false };

/** The shared cache of dependents (see src/operator/dependents.ts). */
export interface DependentsPort {
  watch(kinds: readonly { apiVersion: string; kind: string }[]): Promise<void>;
  get(entry: InventoryEntry): CachedObject;
}

export interface ReleaseObjectsOptions {
  readonly objects: ObjectClient;
  /** undefined when the watch sets watchDependentResources: false; objects are then read with GETs. */
  readonly dependents?: DependentsPort;
  readonly events: EventRecorder;
  readonly chartName: string;
  readonly onDriftCorrected?: (kind: string) => void;
}

export interface Subject {
  readonly cr: EventTarget;
  readonly owner: Owner;
  readonly log: Logger;
}

/** One object of the release: where it lives and what the chart rendered for it. */
export interface DesiredObject {
  readonly entry: InventoryEntry;
  readonly rendered: ManifestObject;
}

export class ReleaseObjects {
  constructor(private readonly o: ReleaseObjectsOptions) {}

  /** Starts watching the release's kinds and makes sure each object names its CR as owner. */
  async adopt(s: Subject, desired: readonly DesiredObject[]): Promise<void> {
    await this.o.dependents?.watch(uniqueKinds(desired));
    for (const d of desired) {
      const live = await this.#live(d.entry, true);
      const patch = this.#ownership(s, d, live);
      // A miss (object gone, or changed since read) is settled by the event that caused it.
      if (patch !== undefined && live !== undefined) await this.o.objects.mergePatch(patch, OPERATOR_FIELD_MANAGER);
    }
  }

  /** Puts back what differs from the manifest: missing objects and changed fields the chart sets. */
  async repairDrift(s: Subject, desired: readonly DesiredObject[]): Promise<number> {
    let repaired = 0;
    for (const d of desired) {
      const message = await this.#repairOne(s, d);
      if (message === undefined) continue;
      repaired++;
      this.o.onDriftCorrected?.(d.entry.kind);
      s.log.info({ object: `${d.entry.kind}/${d.entry.namespace}/${d.entry.name}` }, 'Drift corrected');
      await this.o.events.record(s.cr, 'Normal', 'DriftCorrected', message);
    }
    return repaired;
  }

  async readiness(desired: readonly DesiredObject[]): Promise<ReadinessSummary> {
    const results: { entry: InventoryEntry; readiness: ObjectReadiness | 'unknown' }[] = [];
    for (const d of desired) results.push({ entry: d.entry, readiness: objectReadiness(d.entry, await this.#live(d.entry)) });
    return summarizeReadiness(results);
  }

  async #repairOne(s: Subject, d: DesiredObject): Promise<string | undefined> {
    const desired = withNamespace(d.rendered.body, d.entry.namespace);
    const live = await this.#live(d.entry, true);
    const what = `${d.entry.kind} ${d.entry.namespace === '' ? '' : `${d.entry.namespace}/`}${d.entry.name}`;
    const apply = { fieldManager: HELM_FIELD_MANAGER, force: true };
    if (live === undefined) {
      // Born with its owner and chart label: the label-filtered watch sees it from the first event.
      await this.o.objects.apply(withOwnership(desired, this.#ownership(s, d, undefined)), apply);
      return `Recreated ${what}, which had been deleted`;
    }
    const paths = driftedPaths(desired, live);
    if (paths.length === 0) return undefined;
    // The API server normalises some values; only a dry run says whether applying changes anything.
    const preview = await this.o.objects.apply(desired, { ...apply, dryRun: true });
    if (!applyWouldChange(preview, live)) return undefined;
    await this.o.objects.apply(desired, apply);
    const shown = paths.slice(0, 3).join(', ') + (paths.length > 3 ? `, …and ${paths.length - 3} more` : '');
    return `Restored ${shown} of ${what} to the release manifest`;
  }

  #ownership(s: Subject, d: DesiredObject, live: KubernetesObject | undefined): KubernetesObject | undefined {
    return ownershipPatch({ entry: d.entry, owner: s.owner, chartName: this.o.chartName, live, renderedAnnotations: d.rendered.annotations });
  }

  /**
   * The live object: from the dependents cache when it covers it, else with a GET. With
   * `confirmAbsence`, a cache miss is checked with a GET too: the cache may not have seen a create yet.
   */
  async #live(entry: InventoryEntry, confirmAbsence = false): Promise<KubernetesObject | undefined> {
    const cached = this.o.dependents?.get(entry);
    if (cached?.known === true && (cached.object !== undefined || !confirmAbsence)) return cached.object;
    return this.o.objects.get(entry);
  }
}

function uniqueKinds(desired: readonly DesiredObject[]): { apiVersion: string; kind: string }[] {
  const seen = new Map<string, { apiVersion: string; kind: string }>();
  for (const d of desired) seen.set(`${d.entry.apiVersion}|${d.entry.kind}`, { apiVersion: d.entry.apiVersion, kind: d.entry.kind });
  return [...seen.values()];
}

/** `desired` with the ownership metadata of `patch` merged in. */
function withOwnership(desired: KubernetesObject, patch: KubernetesObject | undefined): KubernetesObject {
  const meta = patch?.metadata;
  if (meta === undefined) return desired;
  const current = desired.metadata ?? {};
  desired.metadata = Object.assign(current, {
    labels: { ...current.labels, ...meta.labels },
    ...(meta.annotations === undefined ? {} : { annotations: { ...current.annotations, ...meta.annotations } }),
    ...(meta.ownerReferences === undefined ? {} : { ownerReferences: meta.ownerReferences }),
  });
  return desired;
}

/** The rendered object with the namespace helm would give it (charts often leave it out). */
function withNamespace(body: Record<string, unknown>, namespace: string): KubernetesObject {
  const obj = structuredClone(body) as KubernetesObject;
  if (namespace !== '') obj.metadata = Object.assign(obj.metadata ?? {}, { namespace });
  return obj;
}
