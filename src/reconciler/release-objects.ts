/**
 * The objects of a deployed release after helm is done with them: marked as owned by their CR,
 * repaired when they drift from the release manifest, and summarised into a readiness condition.
 * The desired state is the manifest helm returned (kept per revision), so nothing is re-rendered.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { describeError, isStatus } from '../k8s/errors.js';
import type { EventRecorder } from '../k8s/events.js';
import type { ObjectClient } from '../k8s/objects.js';
import { mapBounded } from '../runtime/bounded.js';
import { applyWouldChange, changedPaths, driftedPaths } from './drift.js';
import { takeOver, type ManagedFieldsEntry } from './field-takeover.js';
import { renderedBody, type InventoryEntry, type ManifestObject } from './inventory.js';
import { createdOwnershipPatch, ownershipPatch } from './ownership.js';
import type { ReleaseObjectsPort } from './ports.js';
import type { DesiredObject, DriftReport, SeenObjects, Subject } from './release-object-types.js';
import { objectReadiness, summarizeReadiness, type ObjectReadiness, type ReadinessSummary } from './readiness.js';

/** helm's field manager: drift repairs apply the chart's fields as helm itself would. */
export const HELM_FIELD_MANAGER = 'helm';
/** What helm writes on every object of a release to recognise it as the release's. */
const HELM_MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
const HELM_RELEASE_NAME_ANNOTATION = 'meta.helm.sh/release-name';
const HELM_RELEASE_NAMESPACE_ANNOTATION = 'meta.helm.sh/release-namespace';
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

type RepairOutcome = { readonly kind: 'unchanged' } | { readonly kind: 'repaired' | 'failed'; readonly message: string };
const UNCHANGED: RepairOutcome = { kind: 'unchanged' };
/**
 * Requests about a release's objects (right after an install, most are not in the dependents
 * cache yet: one GET and one PATCH each) run this many at a time instead of one after another.
 */
const OBJECTS_IN_FLIGHT = 4;
/** Repairs apply exactly what helm would, as helm, taking over what others changed. */
const HELM_APPLY = { fieldManager: HELM_FIELD_MANAGER, force: true } as const;

export class ReleaseObjects implements ReleaseObjectsPort {
  /**
   * The resourceVersion at which each manifest object was last found to match the live object:
   * a steady-state reconcile then skips the comparison and the dry run, and a difference the API
   * server normalises away is judged once per object version, never repaired again and again.
   * Keyed by the manifest object, so a new revision starts afresh and old entries are collected.
   */
  readonly #verified = new WeakMap<ManifestObject, string | undefined>();

  constructor(private readonly o: ReleaseObjectsOptions) {}

  /**
   * Starts watching the release's kinds and makes sure each object names its CR as owner. Resolves
   * with the objects as it last saw them (a PATCH answers with the patched object), for
   * {@link readiness} to go on from: right after an install the cache has none of them yet.
   */
  async adopt(s: Subject, desired: readonly DesiredObject[], options: { readonly created?: boolean } = {}): Promise<SeenObjects> {
    await this.o.dependents?.watch(uniqueKinds(desired));
    const seen: SeenObjects = new Map();
    await mapBounded(desired, OBJECTS_IN_FLIGHT, async (d) => {
      // Rendered with its ownership (render-ownership.ts): helm applied it with the object.
      if (this.#ownership(s, d, renderedBody(d.rendered)) === undefined) return;
      const current = (options.created === true ? await this.#stampCreated(s, d) : undefined) ?? (await this.#stamp(s, d));
      if (current !== undefined) seen.set(d.entry, current);
    });
    return seen;
  }

  /** Reads the object, and patches in what it lacks of its ownership. */
  async #stamp(s: Subject, d: DesiredObject): Promise<KubernetesObject | undefined> {
    const live = await this.#live(d.entry, true);
    const patch = this.#ownership(s, d, live);
    // A miss (object gone, or changed since read) is settled by the event that caused it.
    return patch !== undefined && live !== undefined ? await this.o.objects.as(s.identity).mergePatch(patch, OPERATOR_FIELD_MANAGER) : live;
  }

  /**
   * An object the install has just created carries no ownership yet: one JSON patch adds it, with
   * no GET first. undefined when it does not apply (see createdOwnershipPatch); #stamp then reads.
   */
  async #stampCreated(s: Subject, d: DesiredObject): Promise<KubernetesObject | undefined> {
    const ops = createdOwnershipPatch({ entry: d.entry, owner: s.owner, chartName: this.o.chartName, renderedAnnotations: d.rendered.annotations });
    return this.o.objects.as(s.identity).jsonPatch(d.entry, ops, OPERATOR_FIELD_MANAGER);
  }

  /**
   * Puts back what differs from the manifest: missing objects and fields the chart sets. A repair
   * the API server rejects is reported in the result, not thrown: it must not block the release.
   */
  async repairDrift(s: Subject, desired: readonly DesiredObject[]): Promise<DriftReport> {
    let repaired = 0;
    const failures: DriftReport['failures'] = [];
    for (const d of desired) {
      let outcome: RepairOutcome;
      try {
        outcome = await this.#repairOne(s, d);
      } catch (err) {
        outcome = { kind: 'failed', message: describeError(err) };
      }
      if (outcome.kind === 'unchanged') continue;
      const what = describeEntry(d.entry);
      const message = s.redact?.(outcome.message) ?? outcome.message;
      if (outcome.kind === 'failed') {
        failures.push({ object: what, message });
        s.log.warn({ object: what, error: message }, 'Drift repair failed');
        this.o.events.record(s.cr, 'Warning', 'DriftRepairFailed', `Could not restore ${what} to the release manifest: ${message}`);
        continue;
      }
      repaired++;
      this.o.onDriftCorrected?.(d.entry.kind);
      s.log.info({ object: what }, 'Drift corrected');
      this.o.events.record(s.cr, 'Normal', 'DriftCorrected', message);
    }
    return { repaired, failures };
  }

  /** `seen`: objects just read or written (see {@link adopt}); the others come from the cache or a GET. */
  async readiness(desired: readonly DesiredObject[], seen: SeenObjects = new Map()): Promise<ReadinessSummary> {
    const results = await mapBounded(desired, OBJECTS_IN_FLIGHT, async (d): Promise<{ entry: InventoryEntry; readiness: ObjectReadiness | 'unknown' }> => ({
      entry: d.entry,
      readiness: objectReadiness(d.entry, seen.get(d.entry) ?? (await this.#live(d.entry))),
    }));
    return summarizeReadiness(results);
  }

  async #repairOne(s: Subject, d: DesiredObject): Promise<RepairOutcome> {
    const live = await this.#live(d.entry, true);
    // The steady state: this very version of the object was found to match (no manifest parse).
    if (live !== undefined && this.#verified.get(d.rendered) === live.metadata?.resourceVersion) return UNCHANGED;
    const desired = asHelmApplies(renderedBody(d.rendered), d.entry.namespace, s.owner);
    if (live === undefined) {
      // Born with its owner and chart label: the label-filtered watch sees it from the first event.
      await this.o.objects.as(s.identity).apply(withOwnership(desired, this.#ownership(s, d, undefined)), HELM_APPLY);
      return { kind: 'repaired', message: `Recreated ${describeEntry(d.entry)}, which had been deleted` };
    }
    if (driftedPaths(desired, live).length === 0) return this.#verify(d, live);
    return this.#restore(d, desired, this.o.objects.as(s.identity));
  }

  /** Restores the fields the chart sets of an object that looks drifted in the cache. */
  async #restore(d: DesiredObject, desired: KubernetesObject, writer: ObjectClient): Promise<RepairOutcome> {
    // The cache may lag behind the server: what the server will say is compared with what it has.
    const current = await this.o.objects.get(d.entry);
    if (current === undefined) return UNCHANGED;
    if (driftedPaths(desired, current).length === 0 || !(await this.#applyWouldChange(writer, desired, current))) return this.#verify(d, current);
    if (!(await this.#claimFields(writer, d.entry, desired, current))) return UNCHANGED;
    const result = await writer.apply(desired, HELM_APPLY);
    this.#verify(d, result);
    // The event names what the server changed, not what the comparison with the manifest flagged
    // (fields the server omits, like `false` and `[]`); an apply that changed nothing is no repair.
    const changed = changedPaths(current, result);
    if (changed.length === 0) return UNCHANGED;
    const shown = changed.slice(0, 3).join(', ') + (changed.length > 3 ? `, …and ${changed.length - 3} more` : '');
    return { kind: 'repaired', message: `Restored ${shown} of ${describeEntry(d.entry)} to the release manifest` };
  }

  /** Remembers that `obj`, at its resourceVersion, matches the manifest object of `d`. */
  #verify(d: DesiredObject, obj: KubernetesObject): RepairOutcome {
    this.#verified.set(d.rendered, obj.metadata?.resourceVersion);
    return UNCHANGED;
  }

  /**
   * The API server normalises values (defaults, quantities, int-or-string), so only a dry run of
   * the apply says whether it would change the object. A dry run the server rejects means it
   * would: typically two entries where the chart has one, which the field claim below resolves.
   */
  async #applyWouldChange(writer: ObjectClient, desired: KubernetesObject, live: KubernetesObject): Promise<boolean> {
    try {
      return applyWouldChange(await writer.apply(desired, { ...HELM_APPLY, dryRun: true }), live);
    } catch (err) {
      if (isStatus(err, 422) || isStatus(err, 409)) return true;
      throw err;
    }
  }

  /**
   * Moves the chart's fields, and entries whose keys were edited by hand, from other field
   * managers into helm's apply ownership (see field-takeover.ts). False when the object changed
   * or vanished meanwhile: its own event brings the next reconcile.
   */
  async #claimFields(writer: ObjectClient, entry: InventoryEntry, desired: KubernetesObject, live: KubernetesObject): Promise<boolean> {
    const claimant = { manager: HELM_FIELD_MANAGER, apiVersion: live.apiVersion ?? entry.apiVersion, time: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
    const managed = takeOver((live.metadata?.managedFields ?? []) as ManagedFieldsEntry[], desired, live, claimant);
    if (managed === undefined) return true;
    const updated = await writer.replaceManagedFields(entry, live.metadata?.resourceVersion ?? '', managed, OPERATOR_FIELD_MANAGER);
    return updated !== undefined;
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

function describeEntry(e: InventoryEntry): string {
  return `${e.kind} ${e.namespace === '' ? '' : `${e.namespace}/`}${e.name}`;
}

/**
 * The rendered object as helm applies it: with the namespace helm gives it (charts often leave it
 * out) and the ownership metadata helm adds to every object of a release. Without that metadata
 * an apply as helm's field manager would remove it, and helm would no longer recognise the object.
 * `body` is a fresh copy (renderedBody), completed in place.
 */
function asHelmApplies(body: Record<string, unknown>, namespace: string, release: { readonly namespace: string; readonly name: string }): KubernetesObject {
  const obj = body as KubernetesObject;
  const meta = (obj.metadata ??= {});
  if (namespace !== '') meta.namespace = namespace;
  meta.labels = { ...meta.labels, [HELM_MANAGED_BY_LABEL]: 'Helm' };
  meta.annotations = { ...meta.annotations, [HELM_RELEASE_NAME_ANNOTATION]: release.name, [HELM_RELEASE_NAMESPACE_ANNOTATION]: release.namespace };
  return obj;
}
