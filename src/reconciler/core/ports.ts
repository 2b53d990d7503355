/**
 * What the reconciler needs from the world besides helm (helm-port.ts): its CRs, release storage,
 * the release's objects, metrics. Each port is an interface of what the reconciler asks, nothing
 * more: the operator wires concrete clients in (src/operator), unit tests wire fakes.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { CachedCustomResource, CustomResource } from '../../k8s/custom-resources.js';
import type { FieldConflict } from '../../k8s/errors.js';
import type { ObjectRef } from '../../k8s/objects.js';
import type { DesiredObject, DriftReport, DryRunApply, RepairPolicy, SeenObjects, Subject } from '../objects/release-object-types.js';
import type { ReadinessSummary } from '../objects/readiness.js';
import type { RolloutProgress } from '../rollout/rollout-gate.js';
import type { Owner } from '../objects/ownership.js';
import type { ReleaseRecord } from '../decide/state.js';
import type { UpgradePlan } from '../plan/upgrade-plan.js';
import type { HeldPlans } from '../plan/held-plans.js';
import type { CrSample } from '../../telemetry/cr-metrics.js';

export interface ReleaseStoragePort {
  records(namespace: string, release: string): Promise<ReleaseRecord[]>;
  /** Deletes the storage of revisions `revisions` of `release` (a revision already gone is no error). */
  deleteRevisions(namespace: string, release: string, revisions: readonly number[]): Promise<void>;
  recordsOf(namespace: string, releases: readonly string[]): Promise<Map<string, ReleaseRecord[]>>;
  /** The record of revision `revision` alone, when it is still the latest and deployed; else undefined. */
  deployed(namespace: string, release: string, revision: number): Promise<ReleaseRecord[] | undefined>;
  /**
   * `deployed`'s answer from a live watch of the storage, without a request; undefined when no
   * live watch covers the namespace, or it does not show `revision` the latest and deployed. What
   * it says is as fresh as the watch, so it is taken as remembered: enough to find the release in
   * sync, never to act on (ADR 0111). Absent: the port has no watch.
   */
  watched?(namespace: string, release: string, revision: number): ReleaseRecord | undefined;
}

/** What the reconciler does with the CRs of its kind (src/k8s/custom-resources.ts implements it). */
export interface CustomResourcesPort {
  /**
   * undefined when the CR does not exist. `version`: the resourceVersion the controller's cache
   * holds, which the port may answer without a request when it last read or wrote that version, or
   * a later one (ADR 0071): the answer is never older than the cache.
   */
  get(namespace: string, name: string, version?: string): Promise<CustomResource | undefined>;
  /** Drops whatever the port keeps of a CR that is gone. */
  forget(namespace: string, name: string): void;
  /** Puts `finalizer` in the CR's list (nothing when it is there already); `cr`'s metadata alone is read. */
  addFinalizer(cr: CachedCustomResource, finalizer: string): Promise<void>;
  /** Removes `finalizers` from the instance `cr.metadata.uid` only; nothing when it is gone. */
  removeFinalizers(cr: CachedCustomResource, finalizers: readonly string[]): Promise<void>;
  /** Merge-patches the status subresource; false when the CR is gone. */
  patchStatus(namespace: string, name: string, status: Record<string, unknown>): Promise<boolean>;
}

/** The cluster's CustomResourceDefinitions, for a chart's `crds/` under `crds: CreateReplace` (chart-crds.ts). */
export interface CrdsPort {
  /** The CRD as the API server has it (status included); undefined when there is none. */
  get(name: string): Promise<Readonly<Record<string, unknown>> | undefined>;
  /** Server-side apply of `crd` as chart-crds.ts's field manager, forced, acting as `identity` (undefined: the operator). */
  apply(identity: string | undefined, crd: Readonly<Record<string, unknown>>): Promise<void>;
  /** Resolves true once the CRD is Established, false when it is not within the port's bound. */
  established(name: string, signal: AbortSignal): Promise<boolean>;
}

/** Reads single objects by reference (the watch's ServiceAccount, uninstall-wait's leftovers). */
export interface ObjectReaderPort {
  /** undefined when the object does not exist. */
  get(ref: ObjectRef): Promise<KubernetesObject | undefined>;
}

export interface ObjectDeleterPort {
  /** Deletes with background propagation, as `helm uninstall` does; false when it was gone already. */
  delete(ref: ObjectRef): Promise<boolean>;
}

/** What actions do with the release's live objects (release-objects.ts implements it). */
export interface ReleaseObjectsPort {
  adopt(s: Subject, desired: readonly DesiredObject[], options?: { readonly created?: boolean }): Promise<SeenObjects>;
  repairDrift(s: Subject, desired: readonly DesiredObject[], policy?: RepairPolicy): Promise<DriftReport>;
  readiness(desired: readonly DesiredObject[], seen?: SeenObjects): Promise<ReadinessSummary>;
  /**
   * Each object's resourceVersion as the dependents cache holds it ('' when it holds none), with
   * no request; undefined when the cache cannot answer for one of them (settled.ts).
   */
  cachedVersions?(desired: readonly DesiredObject[]): string[] | undefined;
  /** The object as the API server has it now, its managedFields included; undefined when there is none. */
  current(ref: ObjectRef): Promise<KubernetesObject | undefined>;
  /**
   * The fields a server-side apply of `body` as helm's field manager, not forced, would take from
   * other managers (a dry run as the subject; helm's and ours left out); empty when none would.
   */
  applyConflicts(s: Subject, body: KubernetesObject): Promise<FieldConflict[]>;
  /**
   * A dry-run server-side apply of `body` as helm's field manager (the upgrade plan): not forced
   * first; when it meets other managers' fields, and `after`, forced, for what it would leave.
   * Rejects only for what is not an answer about the object (the API server away).
   */
  dryRunApply(s: Subject, body: KubernetesObject, how: { readonly after: boolean }): Promise<DryRunApply>;
}

/** Where upgrade plans are kept and platform approvals read (operator/plan-store.ts; docs/adr/0083). */
export interface PlansPort {
  /** Writes the whole plan into the ConfigMap `configMap` of the owner's namespace, owned by the CR, as the operator. */
  save(owner: Owner, configMap: string, plan: UpgradePlan): Promise<void>;
  /** The digest a platform admin approved for the CR (`helm-operator plan approve`); undefined: none. */
  platformApproval(namespace: string, name: string): Promise<string | undefined>;
  /**
   * The plans this process holds CRs for (docs/adr/0097): what a held CR looks again from, never
   * its status, which tenants may write.
   */
  readonly held: HeldPlans;
}

/** The parsed manifest of each CR's deployed revision (manifest-cache.ts implements it). */
export interface ManifestsPort {
  /** The revision last kept for the CR at `namespace/name`, whichever instance it was. */
  revision(namespace: string, name: string): number | undefined;
  /** The objects of `revision`, when they were kept for this very CR instance. */
  get(namespace: string, name: string, uid: string, revision: number): DesiredObject[] | undefined;
  /** The revision last kept for this very CR instance. */
  kept(namespace: string, name: string, uid: string): KeptRevision | undefined;
  remember(name: string, uid: string, release: KeptRelease): Promise<DesiredObject[]>;
  /**
   * Notes that the confirmation's record, the kept revision of this CR instance, was the release's
   * latest and deployed at its `atMs` (read from storage, or just written by helm); nothing when
   * another revision or instance is kept. A later reconcile may go on from it for a while (observe.ts rememberedRecords).
   */
  confirm(cr: { readonly namespace: string; readonly name: string; readonly uid: string }, confirmation: Confirmation): void;
  /** Drops the confirmation: the release may have changed (helm ran and did not end deployed), the next reconcile reads it. */
  unconfirm(namespace: string, name: string): void;
  /** Drops every confirmation (a resync after a leadership takeover). */
  unconfirmAll(): void;
  forget(namespace: string, name: string): void;
}

/** The kept revision's storage record, as this process last saw it latest and deployed. */
export interface Confirmation {
  readonly record: ReleaseRecord;
  readonly atMs: number;
}

/** What a release revision as helm reported it gives the manifest cache. */
export interface KeptRelease {
  readonly namespace: string;
  readonly revision: number;
  readonly manifest: string;
  /** Absent: not known. */
  readonly deleteHooks?: boolean | undefined;
}

/** A revision the manifest cache keeps for a CR instance. */
export interface KeptRevision {
  readonly revision: number;
  readonly objects: readonly DesiredObject[];
  /** Whether a hook runs when it is uninstalled; undefined when helm did not say. */
  readonly deleteHooks: boolean | undefined;
  /** When this process last saw it the latest deployed revision; undefined: not since it was kept. */
  readonly confirmed?: Confirmation | undefined;
}

/** Who deleted a deleted CR's release: a `helm uninstall`, or the operator itself without helm (ADR 0066). */
export type UninstalledBy = 'helm' | 'operator';

/** Release-level metrics (src/telemetry/metrics.ts implements them). */
export interface ReconcilerMetrics {
  releaseState(controller: string, namespace: string, name: string, state: string): void;
  driftCorrected(controller: string, kind: string): void;
  driftConflict(controller: string, kind: string): void;
  /** Releases of deleted CRs uninstalled, by `helm uninstall` or by the operator without helm (ADR 0066). */
  releasesUninstalled(controller: string, by: UninstalledBy, count: number): void;
  forget(controller: string, namespace: string, name: string): void;
  /** Drops every CR of a controller that was stopped (a watches.yaml reload removed or restarted it). */
  forgetController(controller: string): void;
  /**
   * How to read the progress of the controller's rollout (rollout.ts) when metrics are scraped;
   * handed over by each reconcile that looks at it (the last one's stands). Read then, not pushed:
   * it walks every CR of the kind.
   */
  rollout?(controller: string, progress: () => RolloutProgress | undefined): void;
  /** A reconcile took its CR's last settled decision again (settled.ts). */
  settledLook?(controller: string): void;
  /** A CR's state once its reconcile wrote its status (telemetry/cr-metrics.ts). */
  crState?(controller: string, namespace: string, name: string, sample: CrSample): void;
}
