/**
 * The objects of a deployed release after helm is done with them: marked as owned by their CR,
 * repaired when they drift from the release manifest, and summarised into a readiness condition.
 * The desired state is the manifest helm returned (kept per revision), so nothing is re-rendered.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { describeError, fieldConflicts, isStatus, type FieldConflict } from '../../k8s/errors.js';
import type { ObjectClient, ObjectRef } from '../../k8s/objects.js';
import { mapBounded } from '../../runtime/bounded.js';
import { applyWouldChange, changedFields, changedPaths, driftedPaths, type FieldPath } from '../drift/drift.js';
import { isWithin, withLiveFields } from '../drift/drift-ignore.js';
import { otherManagerOf } from './field-owner.js';
import { takeOver, type ManagedFieldsEntry } from './field-takeover.js';
import { renderedBody, type InventoryEntry, type ManifestObject } from './inventory.js';
import { createdOwnershipPatch, ownershipPatch } from './ownership.js';
import type { CrEvent } from '../core/outcome.js';
import type { ReleaseObjectsPort } from '../core/ports.js';
import { objectReadiness, summarizeReadiness, type CustomReadiness, type ObjectReadiness, type ReadinessSummary } from './readiness.js';
import type { DesiredObject, DriftReport, DryRunApply, RepairPolicy, SeenObjects, Subject } from './release-object-types.js';

/** The API server's answers about an applied object itself (invalid, forbidden, not served, conflicting, immutable), not about reaching it. */
const isRefusal = (err: unknown): boolean => [400, 403, 404, 409, 422].some((code) => isStatus(err, code));

/** helm's field manager: drift repairs apply the chart's fields as helm itself would. */
export const HELM_FIELD_MANAGER = 'helm';
/** What helm writes on every object of a release to recognise it as the release's. */
const HELM_MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
const HELM_RELEASE_NAME_ANNOTATION = 'meta.helm.sh/release-name';
const HELM_RELEASE_NAMESPACE_ANNOTATION = 'meta.helm.sh/release-namespace';
/** Ours, for the ownership metadata only. */
export const OPERATOR_FIELD_MANAGER = 'helm-operator';
/** The managers whose fields are the release's own: helm's, and ours (also operator-sdk's client-side one). */
export const RELEASE_FIELD_MANAGERS: readonly string[] = [HELM_FIELD_MANAGER, OPERATOR_FIELD_MANAGER];

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
  readonly chartName: string;
  /** The watch's healthChecks (health-rules.ts); undefined: the built-in rules only. */
  readonly health?: CustomReadiness;
  readonly onDriftCorrected?: (kind: string) => void;
  /** A fight over a field of an object of `kind` was found (drift-fight.ts). */
  readonly onDriftConflict?: (kind: string) => void;
}

/**
 * What a subject's check before a write threw (ReleaseChangedError, or the storage read failing):
 * it ends the whole pass as it is, never counted as the failed repair of one object.
 */
class NotWritten extends Error {
  override readonly name = 'NotWritten';
}

async function checkedBeforeWrite(beforeWrite: Subject['beforeWrite']): Promise<void> {
  try {
    await beforeWrite?.();
  } catch (err) {
    throw new NotWritten('the check before a write failed', { cause: err });
  }
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
   * Keyed by the manifest object, so a new revision starts afresh and old entries are collected;
   * the fields left alone are part of the value, so a change of them judges the object again.
   */
  readonly #verified = new WeakMap<ManifestObject, string>();

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
    if (patch === undefined || live === undefined) return live;
    await s.beforeWrite?.();
    // A miss (object gone, or changed since read) is settled by the event that caused it.
    return this.o.objects.as(s.identity).mergePatch(patch, OPERATOR_FIELD_MANAGER);
  }

  /**
   * An object the install has just created carries no ownership yet: one JSON patch adds it, with
   * no GET first. undefined when it does not apply (see createdOwnershipPatch); #stamp then reads.
   */
  async #stampCreated(s: Subject, d: DesiredObject): Promise<KubernetesObject | undefined> {
    const ops = createdOwnershipPatch({
      entry: d.entry,
      owner: s.owner,
      chartName: this.o.chartName,
      renderedAnnotations: d.rendered.annotations,
    });
    return this.o.objects.as(s.identity).jsonPatch(d.entry, ops, OPERATOR_FIELD_MANAGER);
  }

  /**
   * Puts back what differs from the manifest: missing objects and fields the chart sets. A repair
   * the API server rejects is reported in the result, not thrown: it must not block the release.
   */
  async repairDrift(s: Subject, desired: readonly DesiredObject[], policy?: RepairPolicy): Promise<DriftReport> {
    let repaired = 0;
    const failures: DriftReport['failures'] = [];
    const events: CrEvent[] = [];
    for (const d of desired) {
      let outcome: RepairOutcome;
      try {
        outcome = await this.#repairOne(s, d, policy);
      } catch (err) {
        if (err instanceof NotWritten) throw err.cause instanceof Error ? err.cause : err;
        outcome = { kind: 'failed', message: describeError(err) };
      }
      if (outcome.kind === 'unchanged') continue;
      const what = describeEntry(d.entry);
      const message = s.redact?.(outcome.message) ?? outcome.message;
      if (outcome.kind === 'failed') {
        failures.push({ object: what, message });
        s.log.warn({ object: what, error: message }, 'Drift repair failed');
        events.push({
          type: 'Warning',
          reason: 'DriftRepairFailed',
          message: `Could not restore ${what} to the release manifest: ${message}`,
        });
        continue;
      }
      repaired++;
      this.o.onDriftCorrected?.(d.entry.kind);
      s.log.info({ object: what }, 'Drift corrected');
      events.push({ type: 'Normal', reason: 'DriftCorrected', message });
    }
    return { repaired, failures, events };
  }

  /** `seen`: objects just read or written (see {@link adopt}); the others come from the cache or a GET. */
  async readiness(desired: readonly DesiredObject[], seen: SeenObjects = new Map()): Promise<ReadinessSummary> {
    const results = await mapBounded(
      desired,
      OBJECTS_IN_FLIGHT,
      async (d): Promise<{ entry: InventoryEntry; readiness: ObjectReadiness | 'unknown' }> => ({
        entry: d.entry,
        readiness: objectReadiness(d.entry, seen.get(d.entry) ?? (await this.#live(d.entry)), this.o.health),
      }),
    );
    return summarizeReadiness(results);
  }

  cachedVersions(desired: readonly DesiredObject[]): string[] | undefined {
    const versions: string[] = [];
    for (const d of desired) {
      const cached = this.o.dependents?.get(d.entry);
      if (cached?.known !== true) return undefined;
      versions.push(cached.object?.metadata?.resourceVersion ?? '');
    }
    return versions;
  }

  current(ref: ObjectRef): Promise<KubernetesObject | undefined> {
    return this.o.objects.get(ref);
  }

  async applyConflicts(s: Subject, body: KubernetesObject): Promise<FieldConflict[]> {
    // Anything else the apply would be refused for (a kind not served yet, an invalid field) is
    // helm's to report, in its own words.
    return [...(await this.dryRunApply(s, body, { after: false })).conflicts];
  }

  async dryRunApply(s: Subject, body: KubernetesObject, how: { readonly after: boolean }): Promise<DryRunApply> {
    const writer = this.o.objects.as(s.identity);
    try {
      return {
        kind: 'applied',
        after: await writer.apply(body, { fieldManager: HELM_FIELD_MANAGER, force: false, dryRun: true }),
        conflicts: [],
      };
    } catch (err) {
      const all = fieldConflicts(err);
      if (all.length === 0) {
        if (!isRefusal(err)) throw err;
        return { kind: 'refused', message: describeError(err), conflicts: [] };
      }
      const conflicts = all.filter((c) => !RELEASE_FIELD_MANAGERS.includes(c.manager));
      if (!how.after) return { kind: 'refused', message: describeError(err), conflicts };
      // What the upgrade would leave once it took those fields (`conflictPolicy: force`): the forced dry run's answer.
      try {
        return {
          kind: 'applied',
          after: await writer.apply(body, { fieldManager: HELM_FIELD_MANAGER, force: true, dryRun: true }),
          conflicts,
        };
      } catch (forced) {
        if (!isRefusal(forced)) throw forced;
        return { kind: 'refused', message: describeError(forced), conflicts };
      }
    }
  }

  async #repairOne(s: Subject, d: DesiredObject, policy: RepairPolicy | undefined): Promise<RepairOutcome> {
    const live = await this.#live(d.entry, true);
    const ignored = policy?.ignored(d) ?? [];
    // The steady state: this very version of the object was found to match (no manifest parse).
    if (live !== undefined && this.#verified.get(d.rendered) === verifiedAs(live, ignored)) return UNCHANGED;
    const rendered = asHelmApplies(renderedBody(d.rendered), d.entry.namespace, s.owner);
    if (live === undefined) {
      await checkedBeforeWrite(s.beforeWrite);
      // Born with its owner and chart label: the label-filtered watch sees it from the first event.
      // Whole, ignored fields included: there is nobody else's value to keep.
      await this.o.objects.as(s.identity).apply(withOwnership(rendered, this.#ownership(s, d, undefined)), HELM_APPLY);
      return { kind: 'repaired', message: `Recreated ${describeEntry(d.entry)}, which had been deleted` };
    }
    if (driftedPaths(withLiveFields(rendered, live, ignored), live).length === 0) return this.#verify(d, live, ignored);
    return this.#restore(d, { rendered, ignored, policy, beforeWrite: s.beforeWrite }, this.o.objects.as(s.identity));
  }

  /**
   * Restores the fields the chart sets of an object that looks drifted in the cache, but those
   * ignored and those the policy finds another controller fighting over, which keep their live value.
   */
  async #restore(
    d: DesiredObject,
    how: {
      rendered: KubernetesObject;
      ignored: readonly FieldPath[];
      policy: RepairPolicy | undefined;
      beforeWrite: Subject['beforeWrite'];
    },
    writer: ObjectClient,
  ): Promise<RepairOutcome> {
    // The cache may lag behind the server: what the server will say is compared with what it has.
    const current = await this.o.objects.get(d.entry);
    if (current === undefined) return UNCHANGED;
    let ignored = how.ignored;
    let desired = withLiveFields(how.rendered, current, ignored);
    if (driftedPaths(desired, current).length === 0) return this.#verify(d, current, ignored);
    const dryRun = await this.#dryRun(writer, desired);
    if (dryRun !== undefined && !applyWouldChange(dryRun, current)) return this.#verify(d, current, ignored);
    // Before fights are counted: a write that the check stops must count for nothing.
    await checkedBeforeWrite(how.beforeWrite);
    let notRestored: (() => void) | undefined;
    if (dryRun !== undefined && how.policy !== undefined) {
      const restoring = changedFields(current, dryRun);
      const judged = this.#fights(d.entry, how.policy, current, restoring);
      const held = judged.held;
      notRestored = judged.notRestored;
      if (held.length > 0) {
        ignored = [...ignored, ...held];
        if (restoring.every((p) => held.some((h) => isWithin(p, h)))) return this.#verify(d, current, ignored);
        desired = withLiveFields(how.rendered, current, ignored);
      }
    }
    // Only a write that changed the object restored anything: a claim that found it changed since
    // the GET (its status, while a Deployment rolls out), a failed apply, or an apply that changed
    // nothing is not counted toward a fight.
    const outcome = await this.#write(d, writer, { desired, ignored, current }).catch((err: unknown) => {
      notRestored?.();
      throw err;
    });
    if (outcome === UNCHANGED) notRestored?.();
    return outcome;
  }

  /** Claims the chart's fields and applies `desired` over `current`; UNCHANGED when that changed nothing. */
  async #write(
    d: DesiredObject,
    writer: ObjectClient,
    w: { desired: KubernetesObject; ignored: readonly FieldPath[]; current: KubernetesObject },
  ): Promise<RepairOutcome> {
    const { desired, ignored, current } = w;
    // Fields left alone are not claimed from their managers: the apply keeps their value, not more.
    // False when the object changed since the GET: its own event brings the next reconcile.
    if (!(await this.#claimFields(writer, d.entry, withLiveFields(desired, undefined, ignored), current))) return UNCHANGED;
    const result = await writer.apply(desired, HELM_APPLY);
    this.#verify(d, result, ignored);
    // The event names what the server changed, not what the comparison with the manifest flagged
    // (fields the server omits, like `false` and `[]`); an apply that changed nothing is no repair.
    const changed = changedPaths(current, result);
    if (changed.length === 0) return UNCHANGED;
    const shown = changed.slice(0, 3).join(', ') + (changed.length > 3 ? `, …and ${changed.length - 3} more` : '');
    return { kind: 'repaired', message: `Restored ${shown} of ${describeEntry(d.entry)} to the release manifest` };
  }

  /** The fields about to be restored that the policy finds fought over, to be left as they are, and how to uncount the rest. */
  #fights(
    entry: InventoryEntry,
    policy: RepairPolicy,
    current: KubernetesObject,
    restoring: readonly FieldPath[],
  ): { held: readonly FieldPath[]; notRestored: () => void } {
    const { hold, found, notRestored } = policy.judge(entry, rewritesOf(current, restoring));
    for (let i = 0; i < found; i++) this.o.onDriftConflict?.(entry.kind);
    return { held: hold, notRestored };
  }

  /** Remembers that `obj`, at its resourceVersion, matches the manifest object of `d` but the fields `ignored`. */
  #verify(d: DesiredObject, obj: KubernetesObject, ignored: readonly FieldPath[]): RepairOutcome {
    this.#verified.set(d.rendered, verifiedAs(obj, ignored));
    return UNCHANGED;
  }

  /**
   * The API server normalises values (defaults, quantities, int-or-string), so only a dry run of
   * the apply says whether it would change the object, and what. undefined when the server rejects
   * it, which means it would change it: typically two entries where the chart has one, which the
   * field claim below resolves.
   */
  async #dryRun(writer: ObjectClient, desired: KubernetesObject): Promise<KubernetesObject | undefined> {
    try {
      return await writer.apply(desired, { ...HELM_APPLY, dryRun: true });
    } catch (err) {
      if (isStatus(err, 422) || isStatus(err, 409)) return undefined;
      throw err;
    }
  }

  /**
   * Moves the chart's fields, and entries whose keys were edited by hand, from other field
   * managers into helm's apply ownership (see field-takeover.ts). False when the object changed
   * or vanished meanwhile: its own event brings the next reconcile.
   */
  async #claimFields(writer: ObjectClient, entry: InventoryEntry, desired: KubernetesObject, live: KubernetesObject): Promise<boolean> {
    const claimant = {
      manager: HELM_FIELD_MANAGER,
      apiVersion: live.apiVersion ?? entry.apiVersion,
      time: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    const managed = takeOver((live.metadata?.managedFields ?? []) as ManagedFieldsEntry[], desired, live, claimant);
    if (managed === undefined) return true;
    const updated = await writer.replaceManagedFields(entry, live.metadata?.resourceVersion ?? '', managed, OPERATOR_FIELD_MANAGER);
    return updated !== undefined;
  }

  #ownership(s: Subject, d: DesiredObject, live: KubernetesObject | undefined): KubernetesObject | undefined {
    return ownershipPatch({
      entry: d.entry,
      owner: s.owner,
      chartName: this.o.chartName,
      live,
      renderedAnnotations: d.rendered.annotations,
    });
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

/** What {@link ReleaseObjects.#verified} holds: the object's version and the fields left alone. */
function verifiedAs(obj: KubernetesObject, ignored: readonly FieldPath[]): string {
  return ignored.length === 0 ? (obj.metadata?.resourceVersion ?? '') : `${obj.metadata?.resourceVersion ?? ''} ${JSON.stringify(ignored)}`;
}

/** The fields about to be restored that another field manager than the repair's own wrote, and who. */
function rewritesOf(current: KubernetesObject, paths: readonly FieldPath[]): { path: FieldPath; manager: string }[] {
  const entries = (current.metadata?.managedFields ?? []) as ManagedFieldsEntry[];
  return paths.flatMap((path) => {
    const manager = otherManagerOf(entries, current, path, { ours: RELEASE_FIELD_MANAGERS });
    return manager === undefined ? [] : [{ path, manager }];
  });
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
export function asHelmApplies(
  body: Record<string, unknown>,
  namespace: string,
  release: { readonly namespace: string; readonly name: string },
): KubernetesObject {
  const obj = body as KubernetesObject;
  const meta = (obj.metadata ??= {});
  if (namespace !== '') meta.namespace = namespace;
  meta.labels = { ...meta.labels, [HELM_MANAGED_BY_LABEL]: 'Helm' };
  meta.annotations = {
    ...meta.annotations,
    [HELM_RELEASE_NAME_ANNOTATION]: release.name,
    [HELM_RELEASE_NAMESPACE_ANNOTATION]: release.namespace,
  };
  return obj;
}
