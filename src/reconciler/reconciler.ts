/**
 * Reconciles one CR of a watched kind into a helm release: level-based and idempotent. It reads the
 * CR and the release's stored state, decides one action from that state alone, runs it through the
 * helm port, and writes the status once on the way out.
 */
import type { Watch } from '../config/watches.js';
import type { CachedCustomResource, CustomResource, CustomResourceClient } from '../k8s/custom-resources.js';
import { describeError, isStatus } from '../k8s/errors.js';
import type { EventRecorder } from '../k8s/events.js';
import type { ObjectClient } from '../k8s/objects.js';
import { boundedRunner } from '../runtime/bounded.js';
import { lostLeadership, TerminalError, type ReconcileContext, type Reconciler, type Request, type Result } from '../runtime/reconcile.js';
import { parseReleaseAnnotations, type ReleaseAnnotations } from './annotations.js';
import { resyncAfterMs } from './period.js';
import { ConditionType, Reason } from './conditions.js';
import type { HelmFailure, HelmPort, ReleaseInfo } from './helm-port.js';
import { NoKindMatchError } from '../k8s/restmapper.js';
import { confinementViolations } from './confinement.js';
import { countFailedRepair, driftRepairStopped } from './drift-budget.js';
import { inventoryOf, parseManifest, type InventoryEntry, type ManifestObject } from './inventory.js';
import { failedReadiness } from './readiness.js';
import type { Owner } from './ownership.js';
import { ReleaseObjects, type DependentsPort, type DesiredObject, type SeenObjects, type Subject as ObjectsSubject } from './release-objects.js';
import { ownerKindLabel, releaseNameProblem } from './release-name.js';
import { determineReleaseState, RELEASE_LABELS, type ReleaseRecord, type ReleaseState } from './state.js';
import { StatusDraft, type DeployedRelease } from './status.js';
import { UninstallClaims, type Batch } from './uninstall-claims.js';
import { Redactor } from './redaction.js';
import { composeReferencedValues, deepMerge, notOptedIn, parseValuesFrom, secretStrings, VALUES_FROM_ANNOTATION, VALUES_SOURCE_LABEL, type ValuesSourcePort } from './values-from.js';
import { fingerprint, isPlainObject, mergeValues, type Values } from './values.js';

export const FINALIZER = 'helm.sdk.operatorframework.io/uninstall-release';
/** operator-sdk's earlier name; still honoured and removed on delete. */
export const LEGACY_FINALIZER = 'helm.sdk.operatorframework.io/uninstall-helm-release';
const FINALIZERS = [FINALIZER, LEGACY_FINALIZER];

/**
 * Failed installs or upgrades of one desired state (same spec, overrides and chart) before the
 * retries stop with a Stalled condition; a new spec or chart starts again. Each failed upgrade
 * leaves a failed revision and a rollback behind, so retrying forever only churns history.
 */
export const MAX_FAILED_ATTEMPTS = 5;

/** While `uninstall-wait` holds a CR, how often to look again for the release's objects. */
const UNINSTALL_WAIT_POLL_MS = 2_000;

/** While a helm process of a stopped controller still runs for the release, how often to look again. */
const HELM_EXIT_POLL_MS = 1_000;

/** Release-level metrics (src/telemetry/metrics.ts implements them). */
export interface ReconcilerMetrics {
  releaseState(controller: string, namespace: string, name: string, state: string): void;
  driftCorrected(controller: string, kind: string): void;
  forget(controller: string, namespace: string, name: string): void;
  /** Drops every CR of a controller that was stopped (a watches.yaml reload removed or restarted it). */
  forgetController(controller: string): void;
}

export interface ReleaseStoragePort {
  records(namespace: string, release: string): Promise<ReleaseRecord[]>;
  recordsOf(namespace: string, releases: readonly string[]): Promise<Map<string, ReleaseRecord[]>>;
  /** The record of revision `revision` alone, when it is still the latest and deployed; else undefined. */
  deployed(namespace: string, release: string, revision: number): Promise<ReleaseRecord[] | undefined>;
}

/** What the reconciler reads of the controller's CR cache. */
export interface CustomResourceCache {
  get(namespace: string, name: string): CachedCustomResource | undefined;
  list(namespace: string): readonly CachedCustomResource[];
}

export interface HelmReconcilerOptions {
  readonly watch: Watch;
  readonly crs: CustomResourceClient;
  readonly helm: HelmPort;
  readonly storage: ReleaseStoragePort;
  readonly events: EventRecorder;
  /** Generic access to the release's objects (ownership, drift repair, uninstall-wait). */
  readonly objects: ObjectClient;
  /** Secrets and ConfigMaps that CRs take values from. */
  readonly valuesSources?: ValuesSourcePort;
  /** The shared dependents cache; undefined when the watch turns dependent watches off. */
  readonly dependents?: DependentsPort;
  readonly metrics?: ReconcilerMetrics;
  /** The controller's name, for metrics. */
  readonly controller?: string;
  readonly isNamespaced: (apiVersion: string, kind: string) => Promise<boolean>;
  /** Turns a helm error into a summary for status and whether retrying can help. */
  readonly describeHelmError: (err: unknown) => HelmFailure;
  /** `--reconcile-period`, used when neither the CR nor the watch sets one. */
  readonly defaultReconcilePeriodMs: number;
  /** Mask values in OverrideValuesInUse events (`--suppress-override-values`). */
  readonly suppressOverrideValues?: boolean;
  /**
   * The controller's cache of CRs, metadata only. Those of a namespace being deleted have their
   * releases uninstalled together, by one helm process (see #uninstall); without the cache, one
   * helm process per CR. A CR the cache no longer has is gone, as controller-runtime's cached
   * client reads it: no GET.
   */
  readonly crCache?: CustomResourceCache;
  /** Queues a reconcile of a CR (the controller's queue): a batched uninstall hands its peers back. */
  readonly requeue?: (request: Request) => void;
  /** Tells the controller that this version of a CR is the reconcile's own write, which it goes on from. */
  readonly expectOwnWrite?: (request: Request, resourceVersion: string) => void;
  readonly now?: () => Date;
}

/** How long the rollback of an upgrade cancelled by shutdown may take (below the controller's ABORT_GRACE_MS). */
const SHUTDOWN_ROLLBACK_MS = 4_000;

/** Releases per `helm uninstall a b c`: one slow or failing batch must not hold many CRs. */
const UNINSTALL_BATCH_MAX = 20;

/** Finalizer removals a batch does for its peers at a time (see #completePeer). */
const PEER_WRITES_IN_FLIGHT = 4;

/** One reconcile's view of its CR; built once, passed to each step. */
interface Subject {
  readonly cr: CustomResource;
  readonly namespace: string;
  readonly name: string;
  readonly annotations: ReleaseAnnotations;
  readonly status: StatusDraft;
  readonly ctx: ReconcileContext;
  /** Who helm and every write to the release's objects act as; undefined: the operator itself. */
  readonly identity: string | undefined;
  /** helm, acting as `identity`. */
  readonly helm: HelmPort;
  /** The release's storage records: read as the reconcile started (see #read), or now. */
  readonly records: () => Promise<ReleaseRecord[]>;
  /** Hides this CR's sensitive values in status, events, logs and the error the reconcile ends with. */
  readonly redact: Redactor;
}

interface Desired {
  readonly values: Values;
  readonly fingerprint: string;
  readonly labels: Readonly<Record<string, string>>;
}

export class HelmReconciler implements Reconciler {
  readonly #ownerKind: string;
  readonly #objects: ReleaseObjects;
  /**
   * The manifest of each CR's deployed revision, so steady-state reconciles need no helm process.
   * Keyed by `namespace/name` and valid only for the CR instance (UID) it was read for: a CR created
   * again under the same name starts a new release whose revision 1 is not the old one's.
   */
  readonly #manifests = new Map<string, { readonly uid: string; readonly revision: number; readonly objects: DesiredObject[] }>();
  /** The CRs whose releases a batched uninstall took along (see #uninstall). */
  readonly #uninstalls = new UninstallClaims();

  constructor(private readonly o: HelmReconcilerOptions) {
    this.#ownerKind = ownerKindLabel(o.watch.kind, o.watch.group);
    const controller = o.controller ?? o.watch.kind;
    this.#objects = new ReleaseObjects({
      objects: o.objects,
      ...(o.dependents === undefined ? {} : { dependents: o.dependents }),
      events: o.events,
      chartName: o.watch.chart.name,
      onDriftCorrected: (kind) => o.metrics?.driftCorrected(controller, kind),
    });
  }

  async reconcile(request: Request, ctx: ReconcileContext): Promise<Result> {
    // A batched uninstall holds this CR's release; the batch queues the CR again when it ends.
    if (this.o.requeue !== undefined && this.#uninstalls.isHeld(`${request.namespace}/${request.name}`)) return {};
    const { cr, records } = await this.#read(request);
    if (cr === undefined) {
      // Gone, whether or not our finalizer ran (removed by hand, or by a batch for its peer): nothing
      // kept for it may outlive it.
      this.#forget(request.namespace, request.name);
      return {};
    }
    const identity = serviceAccountUser(request.namespace, this.o.watch.serviceAccountName);
    const s: Subject = {
      cr,
      namespace: request.namespace,
      name: request.name,
      annotations: parseReleaseAnnotations(cr.metadata.annotations),
      status: new StatusDraft(cr.status, this.o.now),
      ctx,
      identity,
      helm: actingAs(this.o.helm, identity),
      records,
      redact: new Redactor(),
    };
    try {
      return await this.#reconcile(s);
    } catch (err) {
      if (!(err instanceof TerminalError) && !(err instanceof ReportedError)) {
        s.status.setCondition({ type: ConditionType.Irreconcilable, status: 'True', reason: Reason.ReconcileError, message: describeError(err) });
      }
      // The controller logs it, causes included (helm's stderr quotes values).
      throw redactedError(err, s.redact);
    } finally {
      await this.#writeStatusUnlessCancelled(s).catch((err: unknown) => {
        // Status is where users look; when it cannot be written, an event must say why.
        this.#event(s, 'Warning', 'StatusWriteFailed', describeError(err));
        throw redactedError(err, s.redact);
      });
    }
  }

  /**
   * The CR (undefined: gone), and how to read its release's records. A CR the cache no longer has
   * is gone, as controller-runtime's cached client reads it. For a CR not being deleted, which is
   * reconciled from those records, they are read alongside it: one round trip for both. A reconcile
   * that ends before it needs them (a paused CR, invalid input) leaves that read unawaited, so its
   * rejection is marked handled here.
   */
  async #read(request: Request): Promise<{ cr: CustomResource | undefined; records: () => Promise<ReleaseRecord[]> }> {
    const { namespace, name } = request;
    const read = (): Promise<ReleaseRecord[]> => this.#records(namespace, name);
    const cached = this.o.crCache?.get(namespace, name);
    if (this.o.crCache !== undefined && cached === undefined) return { cr: undefined, records: read };
    const early = cached !== undefined && cached.metadata.deletionTimestamp === undefined ? read() : undefined;
    early?.catch(() => undefined);
    return { cr: await this.o.crs.get(namespace, name), records: early === undefined ? read : () => early };
  }

  /**
   * The release's records for deciding its state. When this reconciler last saw revision N
   * deployed and N is still the latest and deployed, that record alone: the state it decides is
   * the one the whole history gives, read with two GETs instead of a LIST of the namespace's
   * Secrets (see ReleaseStoragePort.deployed). Else every record.
   */
  async #records(namespace: string, name: string): Promise<ReleaseRecord[]> {
    const known = this.#manifests.get(`${namespace}/${name}`)?.revision;
    const latest = known === undefined ? undefined : await this.o.storage.deployed(namespace, name, known);
    return latest ?? (await this.o.storage.records(namespace, name));
  }

  async #reconcile(s: Subject): Promise<Result> {
    // A reload or a shutdown's give-up can leave the previous controller's helm running for this
    // release: its pending-* revision is live, and no helm may start beside it (ADR 0036).
    if (s.helm.running(s.name, s.namespace)) return { requeueAfterMs: HELM_EXIT_POLL_MS };
    for (const problem of s.annotations.problems) this.#event(s, 'Warning', 'InvalidAnnotation', problem);
    if (s.cr.metadata.deletionTimestamp !== undefined) return this.#finalize(s);
    if (s.annotations.paused) {
      s.status.setCondition({
        type: ConditionType.Paused,
        status: 'True',
        reason: Reason.PauseReconcileAnnotationTrue,
        message: 'Reconciliation is paused by the helm.sdk.operatorframework.io/paused annotation',
      });
      return {};
    }
    s.status.removeCondition(ConditionType.Paused);
    s.status.setCondition({ type: ConditionType.Initialized, status: 'True', reason: Reason.Reconciled, message: '' });
    this.#validate(s);
    // The release's records do not depend on the finalizer: one round trip for both.
    const [cr, records] = await Promise.all([this.o.crs.addFinalizer(s.cr, FINALIZER), s.records()]);
    const written = cr.metadata.resourceVersion;
    // This reconcile goes on from the CR with its finalizer: that write's event needs no second one.
    if (written !== undefined && written !== s.cr.metadata.resourceVersion) this.o.expectOwnWrite?.({ namespace: s.namespace, name: s.name }, written);
    const desired = await this.#desired(s, cr);
    const state = await this.#state(s, desired, records);
    this.o.metrics?.releaseState(this.o.controller ?? this.o.watch.kind, s.namespace, s.name, state.kind);
    if (this.#stalled(s, state, desired)) return { requeueAfterMs: this.#period(s) };
    await this.#act(s, state, desired);
    s.status.setObservedGeneration(s.cr.metadata.generation);
    return { requeueAfterMs: this.#period(s) };
  }

  /**
   * Whether helm must not be tried again: the same desired state already failed
   * MAX_FAILED_ATTEMPTS times. Says so in a Stalled condition; a new state clears it.
   */
  #stalled(s: Subject, state: ReleaseState, desired: Desired): boolean {
    const failed = s.status.current.failedAttempts;
    const wouldAct = state.kind === 'Absent' || state.kind === 'FailedInstall' || state.kind === 'OutOfSync';
    if (wouldAct && failed?.fingerprint === desired.fingerprint && failed.count >= MAX_FAILED_ATTEMPTS) {
      this.#markStalled(s, failed.count);
      return true;
    }
    s.status.removeCondition(ConditionType.Stalled);
    return false;
  }

  #markStalled(s: Subject, count: number): void {
    s.status.setCondition({
      type: ConditionType.Stalled,
      status: 'True',
      reason: Reason.RetriesExhausted,
      message: `helm failed ${count} times with this spec and chart; retries stopped until the spec or the chart changes`,
    });
    s.status.setObservedGeneration(s.cr.metadata.generation);
  }

  #period(s: Subject): number {
    return resyncAfterMs({ annotationMs: s.annotations.reconcilePeriodMs, watchMs: this.o.watch.reconcilePeriodMs, defaultMs: this.o.defaultReconcilePeriodMs });
  }

  /** Input that no retry can fix: report it and wait for the user to edit the CR. */
  #validate(s: Subject): void {
    const nameProblem = releaseNameProblem(s.name);
    if (nameProblem !== undefined) this.#irreconcilable(s, Reason.InvalidReleaseName, nameProblem);
    if (s.cr.spec !== undefined && s.cr.spec !== null && !isPlainObject(s.cr.spec)) {
      this.#irreconcilable(s, Reason.InvalidSpec, 'spec must be an object: its fields are the chart values');
    }
  }

  #irreconcilable(s: Subject, reason: string, message: string): never {
    s.status.setCondition({ type: ConditionType.Irreconcilable, status: 'True', reason, message });
    s.status.setObservedGeneration(s.cr.metadata.generation);
    throw new TerminalError(message);
  }

  async #desired(s: Subject, cr: CustomResource): Promise<Desired> {
    const spec = isPlainObject(cr.spec) ? cr.spec : {};
    const values = mergeValues(deepMerge(await this.#referencedValues(s), spec), this.o.watch.overrideValues);
    const fp = fingerprint({ chartDigest: this.o.watch.chart.digest, values, helmMajor: await this.o.helm.major() });
    return { values, fingerprint: fp, labels: { [RELEASE_LABELS.fingerprint]: fp, [RELEASE_LABELS.ownerKind]: this.#ownerKind } };
  }

  /**
   * The values the CR takes from Secrets and ConfigMaps, merged under its spec. A reference that
   * cannot be read blocks helm (a release without its secrets would be wrong) and is retried;
   * messages name objects and keys, never what they hold.
   */
  async #referencedValues(s: Subject): Promise<Values> {
    const parsed = parseValuesFrom(s.cr.metadata.annotations?.[VALUES_FROM_ANNOTATION]);
    if ('problem' in parsed) {
      this.o.valuesSources?.track(s.namespace, s.name, []);
      return this.#irreconcilable(s, Reason.InvalidValuesReference, parsed.problem);
    }
    this.o.valuesSources?.track(s.namespace, s.name, parsed.refs);
    if (parsed.refs.length === 0) return {};
    const sources = this.o.valuesSources;
    if (sources === undefined) throw new Error('values from Secrets and ConfigMaps are not available in this operator');
    // Under a ServiceAccount, read as it: the operator's own access must not widen the CR author's.
    const read = await Promise.all(parsed.refs.map((r) => sources.read(r.kind, s.namespace, r.name, s.identity).catch((err: unknown) => this.#unreadable(s, r, err))));
    const data = read.map((r) => r?.data);
    s.redact.add(secretStrings(parsed.refs, data));
    const refused = s.identity === undefined ? [] : notOptedIn(parsed.refs, read);
    const composed = composeReferencedValues(parsed.refs, data);
    const problem =
      refused.length > 0
        ? { reason: Reason.ValuesReferenceNotAllowed, message: notAllowedMessage(s.namespace, refused) }
        : composed.missing.length > 0
        ? { reason: Reason.ValuesReferenceNotFound, message: `values reference not found in namespace ${s.namespace}: ${composed.missing.join(', ')}` }
        : composed.invalid.length > 0
          ? { reason: Reason.InvalidValuesReference, message: `values reference is not a YAML map of values: ${composed.invalid.join(', ')} (set targetPath to use it as one value)` }
          : undefined;
    if (problem === undefined) return composed.values;
    s.status.setCondition({ type: ConditionType.Irreconcilable, status: 'True', reason: problem.reason, message: problem.message });
    this.#event(s, 'Warning', problem.reason, problem.message);
    throw new ReportedError(problem.message);
  }

  /** A reference the ServiceAccount may not read: refused like one that did not opt in, naming who. */
  #unreadable(s: Subject, ref: { kind: string; name: string }, err: unknown): never {
    if (!isStatus(err, 403)) throw err;
    const message = `${s.identity ?? 'the operator'} may not read ${ref.kind} ${ref.name} of namespace ${s.namespace}: grant it get on ${ref.kind === 'Secret' ? 'secrets' : 'configmaps'} there, or reference another object`;
    s.status.setCondition({ type: ConditionType.Irreconcilable, status: 'True', reason: Reason.ValuesReferenceNotAllowed, message });
    this.#event(s, 'Warning', Reason.ValuesReferenceNotAllowed, message);
    throw new ReportedError(message);
  }

  /**
   * With `confineToNamespace`, the release is rendered first and refused when it would create
   * anything outside the CR's namespace or a cluster-scoped kind the watch does not allow.
   * Nothing is created; only a change of the spec or the chart can help.
   */
  async #checkConfinement(s: Subject, desired: Desired): Promise<void> {
    if (!this.o.watch.confineToNamespace) return;
    let manifest: string;
    try {
      manifest = await s.helm.render(this.#request(s, desired));
    } catch (err) {
      const failure = this.o.describeHelmError(err);
      return this.#fail(s, { reason: Reason.InstallError, event: 'RenderFailed' }, failure, err);
    }
    const rendered = parseManifest(manifest);
    const served: ManifestObject[] = [];
    const unknown: InventoryEntry[] = [];
    for (const o of rendered) {
      const ok = await this.o.isNamespaced(o.apiVersion, o.kind).then(
        () => true,
        (err: unknown) => {
          if (err instanceof NoKindMatchError) return false;
          throw err;
        },
      );
      if (ok) served.push(o);
      else unknown.push({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.namespace ?? '', name: o.name });
    }
    const entries = await inventoryOf(served, s.namespace, this.o.isNamespaced);
    const violations = confinementViolations(entries, { namespace: s.namespace, allowClusterScoped: this.o.watch.allowClusterScoped }, unknown);
    if (violations.length === 0) return;
    const message = `the release would create objects outside namespace ${s.namespace}, which this watch confines it to: ${violations.join(', ')}`;
    this.#event(s, 'Warning', Reason.NamespaceConfinementViolation, message);
    this.#irreconcilable(s, Reason.NamespaceConfinementViolation, message);
  }

  /** `stored`: the release's storage records when the caller has read them already. */
  async #state(s: Pick<Subject, 'namespace' | 'name' | 'helm'>, desired: Desired, stored?: readonly ReleaseRecord[]): Promise<ReleaseState> {
    const records = stored ?? (await this.o.storage.records(s.namespace, s.name));
    const state = determineReleaseState(records, { fingerprint: desired.fingerprint, ownerKind: this.#ownerKind });
    if (state.kind !== 'Unmanaged') return state;
    // No owner label: installed by hand or by operator-sdk. Adopt it only when it runs our chart.
    const release = await s.helm.status(s.name, s.namespace);
    if (release === undefined) return { kind: 'Absent' };
    if (release.chart.name === this.o.watch.chart.name) return { kind: 'OutOfSync', latest: state.latest };
    return { kind: 'Conflict', ownerKind: `chart ${release.chart.name}` };
  }

  async #act(s: Subject, state: ReleaseState, desired: Desired): Promise<void> {
    switch (state.kind) {
      case 'Conflict':
        this.#event(s, 'Warning', Reason.ReleaseNameConflict, conflictMessage(s, state.ownerKind));
        this.#irreconcilable(s, Reason.ReleaseNameConflict, conflictMessage(s, state.ownerKind));
        break;
      case 'Locked': {
        await this.#unlock(s, state);
        const next = await this.#state(s, desired);
        // Decide once more, never in a loop: a release still locked is an error to back off from.
        if (next.kind === 'Locked') throw new Error(`release ${s.name} is still ${next.latest.status} after unlocking it`);
        return this.#act(s, next, desired);
      }
      case 'FailedInstall':
        await this.#helm(s, Reason.InstallError, () => s.helm.uninstall({ release: s.name, namespace: s.namespace, signal: s.ctx.signal }));
        return this.#install(s, desired);
      case 'Absent':
        return this.#install(s, desired);
      case 'OutOfSync':
        return this.#upgrade(s, desired, state.deployed ?? state.latest);
      case 'InSync':
        return this.#inSync(s, state.deployed);
      case 'Unmanaged':
        throw new Error('unreachable: Unmanaged is resolved by #state');
    }
  }

  /**
   * A pending-* release was left by a process that died mid-operation (only the leader acts, one
   * key at a time). Roll back to the last good revision, or remove a first install that never
   * completed; either way helm accepts new operations afterwards.
   */
  async #unlock(s: Subject, state: Extract<ReleaseState, { kind: 'Locked' }>): Promise<void> {
    const { release, namespace } = { release: s.name, namespace: s.namespace };
    const was = `revision ${state.latest.revision} was left ${state.latest.status}`;
    if (state.lastGood === undefined) {
      await this.#helm(s, Reason.InstallError, () => s.helm.uninstall({ release, namespace, signal: s.ctx.signal }));
      this.#event(s, 'Warning', 'ReleaseUnlocked', `Release ${release} ${was}; removed the unfinished install`);
      return;
    }
    const revision = state.lastGood.revision;
    await this.#helm(s, Reason.UpgradeError, () =>
      s.helm.rollback({ release, namespace, revision, force: false, signal: s.ctx.signal }),
    );
    this.#event(s, 'Warning', 'ReleaseUnlocked', `Release ${release} ${was}; rolled back to revision ${revision}`);
  }

  async #install(s: Subject, desired: Desired): Promise<void> {
    await this.#checkConfinement(s, desired);
    this.#overrideEvents(s);
    let release: ReleaseInfo;
    try {
      release = await s.helm.install(this.#request(s, desired));
    } catch (err) {
      throwIfCancelled(s, err);
      const failure = this.o.describeHelmError(err);
      // helm may have stored a failed revision: remove it so the next attempt starts clean (helm#3338).
      if ((await this.o.storage.records(s.namespace, s.name)).length > 0) {
        await s.helm.uninstall({ release: s.name, namespace: s.namespace, signal: cleanupSignal(s) }).catch((e: unknown) => {
          s.ctx.log.error({ error: s.redact.text(describeError(e)) }, 'Could not remove the failed install');
        });
      }
      s.status.setCondition({ type: ConditionType.Deployed, status: 'False', reason: Reason.InstallError, message: failure.summary });
      return this.#fail(s, { reason: Reason.InstallError, event: 'InstallFailed' }, this.#counted(s, desired, failure), err);
    }
    await this.#succeeded(s, release, Reason.InstallSuccessful);
  }

  async #upgrade(s: Subject, desired: Desired, before: ReleaseRecord): Promise<void> {
    await this.#checkConfinement(s, desired);
    this.#overrideEvents(s);
    let release: ReleaseInfo;
    try {
      release = await s.helm.upgrade({ ...this.#request(s, desired), force: s.annotations.upgradeForce });
    } catch (err) {
      throwIfCancelled(s, err);
      await this.#rollbackFailedUpgrade(s, before);
      return this.#fail(s, { reason: Reason.UpgradeError, event: 'UpgradeFailed' }, this.#counted(s, desired, this.o.describeHelmError(err)), err);
    }
    await this.#succeeded(s, release, Reason.UpgradeSuccessful);
  }

  /**
   * When the failed upgrade stored a new revision, go back to the one that was serving. A forced
   * rollback (the default, as in operator-sdk) replaces objects, which fails on immutable fields
   * where a plain rollback works (operator-sdk#6494, helm-operator-plugins#421): it falls back to
   * a plain one instead of leaving the release failed. A new revision that is deployed is no
   * failure: a cancelled helm that finished its upgrade anyway (it outlived the cancel) must not
   * be undone (ADR 0036).
   */
  async #rollbackFailedUpgrade(s: Subject, before: ReleaseRecord): Promise<void> {
    const records = await this.o.storage.records(s.namespace, s.name);
    const latest = records.reduce<ReleaseRecord | undefined>((a, r) => (a === undefined || r.revision > a.revision ? r : a), undefined);
    if (latest === undefined || latest.revision <= before.revision || latest.status === 'deployed') return;
    if (!(before.status === 'deployed' || before.status === 'superseded')) return;
    const attempts = s.annotations.rollbackForce ? [true, false] : [false];
    const errors: string[] = [];
    const signal = cleanupSignal(s);
    for (const force of attempts) {
      try {
        await s.helm.rollback({ release: s.name, namespace: s.namespace, revision: before.revision, force, signal });
        const how = force ? '' : errors.length > 0 ? ' without force, after the forced rollback failed' : '';
        this.#event(s, 'Warning', 'RollbackSuccessful', `Rolled release ${s.name} back to revision ${before.revision}${how}`);
        return;
      } catch (err) {
        errors.push(this.o.describeHelmError(err).summary);
      }
    }
    this.#event(s, 'Warning', 'RollbackFailed', `Rollback of ${s.name} to revision ${before.revision} failed: ${errors.join('; then: ')}`);
  }

  /**
   * Counts the failure against the desired state; the last allowed one is not retried. A cancelled
   * helm (shutdown, a reload restarting the controller) is not the release failing: it is reported
   * but not counted, or restarts during long upgrades would end in Stalled.
   */
  #counted(s: Subject, desired: Desired, failure: HelmFailure): HelmFailure {
    if (s.ctx.signal.aborted) return failure;
    const count = s.status.recordFailure(desired.fingerprint);
    if (count < MAX_FAILED_ATTEMPTS) return failure;
    this.#markStalled(s, count);
    return { summary: `${failure.summary} (failed ${count} times; retries stopped until the spec or the chart changes)`, retryable: false };
  }

  #request(s: Subject, desired: Desired): Parameters<HelmPort['install']>[0] {
    return {
      release: s.name,
      namespace: s.namespace,
      chart: this.o.watch.chart.path,
      values: desired.values,
      labels: desired.labels,
      signal: s.ctx.signal,
    };
  }

  async #succeeded(s: Subject, release: ReleaseInfo, reason: Reason): Promise<void> {
    const message = release.notes.trim() === '' ? `Release ${release.name} revision ${release.revision} deployed` : release.notes;
    s.status.setCondition({ type: ConditionType.Deployed, status: 'True', reason, message });
    s.status.setCondition({ type: ConditionType.ReleaseFailed, status: 'False', reason, message: '' });
    s.status.setCondition({ type: ConditionType.Irreconcilable, status: 'False', reason: Reason.Reconciled, message: '' });
    s.status.clearFailures();
    this.#driftSettled(s);
    const objects = await this.#remember(s, release);
    s.status.setRelease(deployedRelease(release), objects.map((o) => o.entry));
    const seen = await this.#objects.adopt(this.#subject(s), objects, { created: reason === Reason.InstallSuccessful });
    await this.#setReady(s, objects, seen);
    const verb = reason === Reason.InstallSuccessful ? 'Installed' : 'Upgraded';
    this.#event(s, 'Normal', reason, `${verb} release ${release.name}: revision ${release.revision}, chart ${release.chart.name}-${release.chart.version}`);
  }

  /**
   * Nothing for helm to do. The objects are checked against the deployed manifest (kept from the
   * install or upgrade; fetched from helm only after a restart), drift is repaired unless the CR
   * turns that off, and readiness is summarised.
   */
  async #inSync(s: Subject, deployed: ReleaseRecord): Promise<void> {
    const objects = await this.#deployedObjects(s, deployed);
    const unrepaired = s.annotations.driftRepair ? await this.#repairDrift(s, deployed.revision, objects) : undefined;
    if (!s.annotations.driftRepair) this.#driftSettled(s);
    // After the repair: a recreated object needs its owner and chart label at once, or its own
    // events would not be routed back here until the next periodic reconcile.
    await this.#setReady(s, objects, await this.#objects.adopt(this.#subject(s), objects));
    const reason = deployed.revision === 1 ? Reason.InstallSuccessful : Reason.UpgradeSuccessful;
    const prior = s.status.current.conditions.find((c) => c.type === ConditionType.Deployed);
    const message = prior?.status === 'True' ? prior.message : `Release ${s.name} revision ${deployed.revision} deployed`;
    s.status.setCondition({ type: ConditionType.Deployed, status: 'True', reason: prior?.status === 'True' ? prior.reason : reason, message });
    s.status.setCondition({ type: ConditionType.ReleaseFailed, status: 'False', reason, message: '' });
    s.status.setCondition({ type: ConditionType.Irreconcilable, status: 'False', reason: Reason.Reconciled, message: '' });
    s.status.clearFailures();
    // The release stays deployed and its other objects were handled; back off and try again.
    if (unrepaired !== undefined) throw new ReportedError(unrepaired);
  }

  /** The deployed revision's objects: kept from this CR instance's last install or upgrade, else read from helm. */
  async #deployedObjects(s: Subject, deployed: ReleaseRecord): Promise<DesiredObject[]> {
    const known = this.#manifests.get(keyOf(s));
    if (known?.uid === uidOf(s) && known.revision === deployed.revision) return known.objects;
    const release = await s.helm.status(s.name, s.namespace);
    if (release === undefined) throw new Error(`release ${s.name} vanished while being read`);
    const objects = await this.#remember(s, release);
    s.status.setRelease(deployedRelease(release), objects.map((o) => o.entry));
    return objects;
  }

  /**
   * Repairs drift of the deployed revision. What the API server refuses is reported in the
   * Drifted condition and retried with backoff, up to the retry budget (drift-budget.ts); the pass
   * that spends it says so once, in the condition and a Warning event, and repair then stops
   * until an upgrade or a spec change. Resolves with a summary of the failures while they are
   * still to be retried.
   */
  async #repairDrift(s: Subject, revision: number, objects: readonly DesiredObject[]): Promise<string | undefined> {
    const key = { revision, generation: s.cr.metadata.generation };
    if (driftRepairStopped(s.status.current.driftRepairFailures, key)) return undefined;
    const report = await this.#objects.repairDrift(this.#subject(s), objects);
    if (report.failures.length === 0) {
      this.#driftSettled(s);
      return undefined;
    }
    const { record, exhausted } = countFailedRepair(s.status.current.driftRepairFailures, key);
    s.status.setDriftRepairFailures(record);
    const summary = report.failures.map((f) => `${f.object}: ${f.message}`).join('; ');
    if (!exhausted) {
      s.status.setCondition({ type: ConditionType.Drifted, status: 'True', reason: Reason.DriftRepairFailed, message: `Could not restore the release manifest: ${summary}` });
      return summary;
    }
    const message = `Drift repair of revision ${revision} failed ${record.count} times; it stays stopped until an upgrade or a spec change: ${summary}`;
    s.status.setCondition({ type: ConditionType.Drifted, status: 'True', reason: Reason.RetriesExhausted, message });
    this.#event(s, 'Warning', Reason.RetriesExhausted, message);
    return undefined;
  }

  #driftSettled(s: Subject): void {
    s.status.clearDriftRepairFailures();
    s.status.removeCondition(ConditionType.Drifted);
  }

  /** Parses and keeps the release's manifest, paired with where each object lives. */
  async #remember(s: Subject, release: ReleaseInfo): Promise<DesiredObject[]> {
    const rendered = parseManifest(release.manifest);
    const entries = await inventoryOf(rendered, release.namespace, this.o.isNamespaced);
    const objects = rendered.map((r, i) => ({ rendered: r, entry: entries[i] as InventoryEntry }));
    this.#manifests.set(keyOf(s), { uid: uidOf(s), revision: release.revision, objects });
    return objects;
  }

  async #setReady(s: Subject, objects: readonly DesiredObject[], seen: SeenObjects): Promise<void> {
    const summary = await this.#objects.readiness(objects, seen);
    s.status.setCondition({ type: ConditionType.Ready, status: summary.status, reason: summary.reason, message: summary.message });
  }

  #subject(s: Subject): ObjectsSubject {
    const w = this.o.watch;
    const owner: Owner = {
      apiVersion: w.group === '' ? w.version : `${w.group}/${w.version}`,
      kind: w.kind,
      group: w.group,
      namespace: s.namespace,
      name: s.name,
      uid: s.cr.metadata.uid ?? '',
    };
    return { cr: s.cr, owner, log: s.ctx.log, identity: s.identity, redact: (text) => s.redact.text(text) };
  }

  /** Records a failed helm operation and ends the reconcile: with backoff, or for good when only an edit can help. */
  #fail(s: Subject, why: { reason: Reason; event: string }, unredacted: HelmFailure, cause: unknown): never {
    // helm's and the API server's error text quotes the values it refused.
    const failure = { ...unredacted, summary: s.redact.text(unredacted.summary) };
    s.status.setCondition({ type: ConditionType.ReleaseFailed, status: 'True', reason: why.reason, message: failure.summary });
    s.status.setCondition(failedReadiness(why.reason, failure.summary, s.status.current.deployedRelease?.revision));
    this.#event(s, 'Warning', why.event, failure.summary);
    if (!failure.retryable) {
      s.status.setObservedGeneration(s.cr.metadata.generation);
      throw new TerminalError(failure.summary, { cause });
    }
    throw new ReportedError(failure.summary, { cause });
  }

  /** Runs a helm step whose failure is reported with `reason` and retried with backoff. */
  async #helm<T>(s: Subject, reason: Reason, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      throwIfCancelled(s, err);
      return this.#fail(s, { reason, event: 'ReleaseOperationFailed' }, this.o.describeHelmError(err), err);
    }
  }

  async #finalize(s: Subject): Promise<Result> {
    const finalizers = s.cr.metadata.finalizers ?? [];
    if (!finalizers.some((f) => FINALIZERS.includes(f))) return {};
    const result = await this.#releaseGone(s);
    if (result === undefined) return {};
    if (s.annotations.uninstallWait) {
      const remaining = await this.#remaining(s.status.current.inventory ?? []);
      if (remaining.length > 0) {
        s.status.setCondition({
          type: ConditionType.Deployed,
          status: 'False',
          reason: Reason.UninstallSuccessful,
          message: `Waiting until all resources are deleted: ${remaining.length} left (${remaining.slice(0, 3).join(', ')})`,
        });
        return { requeueAfterMs: UNINSTALL_WAIT_POLL_MS };
      }
    }
    s.status.setCondition({ type: ConditionType.Deployed, status: 'False', reason: Reason.UninstallSuccessful, message: 'Release uninstalled' });
    s.status.setCondition({ type: ConditionType.ReleaseFailed, status: 'False', reason: Reason.UninstallSuccessful, message: '' });
    s.status.setRelease(undefined, undefined);
    this.#forget(s.namespace, s.name);
    if (result.found) this.#event(s, 'Normal', Reason.UninstallSuccessful, `Uninstalled release ${s.name}`);
    if (finalizers.every((f) => FINALIZERS.includes(f))) {
      // No other finalizer holds the CR: it is gone as soon as ours is off, and its status with it.
      s.status.discard();
    } else {
      // The status goes first: once the finalizer is off, the object may vanish at any moment. It is
      // best effort: a status that cannot be written must not keep the CR from being deleted.
      await this.#writeStatus(s).catch((err: unknown) => {
        this.#event(s, 'Warning', 'StatusWriteFailed', describeError(err));
      });
    }
    await this.o.crs.removeFinalizers(s.cr, FINALIZERS);
    return {};
  }

  /**
   * Uninstalls the CR's release unless it is not ours or already gone; undefined while another
   * CR's batched uninstall holds it (that batch queues this CR again when it ends, and this worker
   * is free for other CRs meanwhile).
   */
  async #releaseGone(s: Subject): Promise<{ found: boolean } | undefined> {
    if (this.#uninstalls.isHeld(keyOf(s)) && this.o.requeue !== undefined) return undefined;
    return this.#uninstalls.finalize(keyOf(s), uidOf(s), async (batched) => {
      // A batch that claimed this very CR reported its release gone, and nothing installs it again.
      if (batched) return { found: true };
      return (await this.#ownsRelease(s)) ? await this.#uninstall(s) : { found: false };
    });
  }

  /** Whether the release named after this CR is ours to uninstall (never another kind's). */
  async #ownsRelease(s: Pick<Subject, 'namespace' | 'name' | 'helm'>, stored?: readonly ReleaseRecord[]): Promise<boolean> {
    const state = await this.#state(s, { fingerprint: '', labels: {}, values: {} }, stored);
    return state.kind !== 'Conflict' && state.kind !== 'Absent';
  }

  /**
   * Uninstalls this CR's release, and with it the releases of the other CRs of its namespace that
   * are being deleted (from the cache: finalizer still ours, release ours, no finalizer running for
   * them), in one `helm uninstall a b c`: a helm process costs more than uninstalling one small
   * release. Each of those CRs still gets its own reconcile, which waits for the batch, finds its
   * release gone and reports it uninstalled. When the batch fails (helm 4 goes on past a failed
   * release, helm 3 stops), this CR's release is uninstalled alone, with its own error, and every
   * peer whose release is still there does its own in its reconcile.
   */
  async #uninstall(s: Subject): Promise<{ found: boolean }> {
    const batch = this.#claimPeers(s);
    try {
      return await this.#uninstallWith(s, batch);
    } finally {
      // Whatever ended this reconcile, no peer waits forever and no claim outlives the batch; each
      // peer still here is reconciled again and finds its release as it is.
      for (const name of batch.end()) this.o.requeue?.({ namespace: s.namespace, name });
    }
  }

  async #uninstallWith(s: Subject, batch: Batch): Promise<{ found: boolean }> {
    const peers = await this.#ownedPeers(s, batch.names);
    for (const name of batch.names) if (!peers.includes(name)) batch.settle(name, false);
    const single = (): Promise<{ found: boolean }> =>
      this.#helm(s, Reason.UninstallError, () => s.helm.uninstall({ release: s.name, namespace: s.namespace, signal: s.ctx.signal }));
    if (peers.length === 0) return single();
    // Each peer is finished as soon as helm reports its release gone, while helm goes on with the
    // next ones: the batch's CRs go away one by one, not all at its end.
    const finishing = new Map<string, Promise<void>>();
    const gate = boundedRunner(PEER_WRITES_IN_FLIGHT);
    const finish = (name: string): void => {
      if (peers.includes(name) && !finishing.has(name)) finishing.set(name, gate(() => this.#completePeer(s, name, batch)));
    };
    const ok = await this.#batchUninstall(s, peers, finish);
    // After a success every peer's release is gone, whether or not helm's output said so.
    if (ok) peers.forEach(finish);
    await Promise.all(finishing.values());
    if (ok) return { found: true };
    const rest = peers.filter((name) => !finishing.has(name));
    const left = await this.#ownedPeers(s, rest);
    for (const name of rest) batch.settle(name, !left.includes(name));
    // This release was ours when the batch started: gone now, by the batch or by this call.
    await single();
    return { found: true };
  }

  /** `helm uninstall` of this CR's release and `peers`; false when any of them may still be there. */
  async #batchUninstall(s: Subject, peers: readonly string[], onUninstalled: (release: string) => void): Promise<boolean> {
    try {
      // found: false means this release vanished meanwhile, and helm 3 then stopped before the others.
      return (await s.helm.uninstall({ release: s.name, also: peers, namespace: s.namespace, signal: s.ctx.signal, onUninstalled })).found;
    } catch (err) {
      s.ctx.log.info({ releases: [s.name, ...peers], error: s.redact.text(this.o.describeHelmError(err).summary) }, 'Batched uninstall failed; uninstalling one by one');
      return false;
    }
  }

  /** Those of `names` (CRs of `s`'s namespace) whose releases are there and ours: one storage read for all. */
  async #ownedPeers(s: Subject, names: readonly string[]): Promise<string[]> {
    if (names.length === 0) return [];
    const stored = await this.o.storage.recordsOf(s.namespace, names);
    const owned: string[] = [];
    for (const name of names) if (await this.#ownsRelease(this.#peer(s, name), stored.get(name) ?? [])) owned.push(name);
    return owned;
  }

  /**
   * For a peer whose release the batch uninstalled (helm reported it gone), reports the uninstall
   * and does what its own reconcile would do next, from the cache and without reading it again:
   * removes the finalizer. That only where nobody reads a status afterwards (no other finalizer, no
   * uninstall-wait); the others, and any whose write fails, are left to their own reconcile after
   * the batch, which finds the release gone in storage. The claim is settled only once the peer is
   * done, so no reconcile of the peer runs meanwhile.
   */
  async #completePeer(s: Subject, name: string, batch: Batch): Promise<void> {
    const cr = this.o.crCache?.get(s.namespace, name);
    // Only the instance the batch claimed: another CR that took the name has a release of its own.
    if (cr !== undefined && batch.holds(name, cr.metadata.uid) && !lostLeadership(s.ctx.signal)) {
      this.o.events.record(cr, 'Normal', Reason.UninstallSuccessful, `Uninstalled release ${name}`);
      const finalizers = cr.metadata.finalizers ?? [];
      if (finalizers.every((f) => FINALIZERS.includes(f)) && !parseReleaseAnnotations(cr.metadata.annotations).uninstallWait) {
        try {
          await this.o.crs.removeFinalizers(cr, FINALIZERS);
          this.#forget(s.namespace, name);
        } catch (err) {
          s.ctx.log.info({ peer: name, error: describeError(err) }, 'Could not finish a batched uninstall for its CR; its own reconcile will');
        }
      }
    }
    batch.settle(name, true);
  }

  /** Drops what this reconciler keeps about a CR whose release is gone. */
  #forget(namespace: string, name: string): void {
    this.#manifests.delete(`${namespace}/${name}`);
    this.o.valuesSources?.track(namespace, name, []);
    this.o.metrics?.forget(this.o.controller ?? this.o.watch.kind, namespace, name);
  }

  /**
   * Claims, synchronously, the other CRs of `s`'s namespace whose releases #uninstall may take
   * along: their reconciles wait for the batch (see #releaseGone) instead of running helm alongside.
   */
  #claimPeers(s: Subject): Batch {
    const batch = this.#uninstalls.begin(s.namespace);
    for (const cr of this.o.crCache?.list(s.namespace) ?? []) {
      if (batch.names.length >= UNINSTALL_BATCH_MAX - 1) break;
      const { name, uid } = cr.metadata;
      const eligible =
        name !== s.name &&
        uid !== undefined &&
        cr.metadata.deletionTimestamp !== undefined &&
        (cr.metadata.finalizers ?? []).some((f) => FINALIZERS.includes(f)) &&
        releaseNameProblem(name) === undefined;
      if (eligible) batch.claim(name, uid);
    }
    return batch;
  }

  #peer(s: Subject, name: string): Pick<Subject, 'namespace' | 'name' | 'helm'> {
    return { namespace: s.namespace, name, helm: s.helm };
  }

  /** The inventory objects that still exist, as `Kind/name`. */
  async #remaining(inventory: readonly InventoryEntry[]): Promise<string[]> {
    const left: string[] = [];
    for (const e of inventory) if ((await this.o.objects.get(e)) !== undefined) left.push(`${e.kind}/${e.name}`);
    return left;
  }

  #overrideEvents(s: Subject): void {
    for (const [key, value] of Object.entries(this.o.watch.overrideValues)) {
      const shown = this.o.suppressOverrideValues === true ? '****' : value;
      this.#event(s, 'Warning', 'OverrideValuesInUse', `Chart value "${key}" overridden to "${shown}" by operator's watches.yaml`);
    }
  }

  #event(s: Subject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.o.events.record(s.cr, type, reason, s.redact.text(message));
  }

  /**
   * A reconcile cancelled because leadership was lost writes nothing: another replica may already
   * be reconciling this CR, and this draft would overwrite its status. (Shutting down, the replica
   * still leads: what its cancelled reconcile did is reported.)
   */
  async #writeStatusUnlessCancelled(s: Subject): Promise<void> {
    if (lostLeadership(s.ctx.signal)) {
      s.ctx.log.debug('Reconcile cancelled by lost leadership: status left to the new leader');
      return;
    }
    await this.#writeStatus(s);
  }

  async #writeStatus(s: Subject): Promise<void> {
    const patch = s.status.patch();
    if (Object.keys(patch).length === 0) return;
    await this.o.crs.patchStatus(s.namespace, s.name, s.redact.deep(patch));
    s.status.markWritten();
  }
}

/**
 * A helm call failed because leadership was lost (its helm process was stopped): that is not the
 * release failing, and another replica may already own it, so no cleanup, rollback or report.
 * Whatever helm left (a pending revision) is the next leader's to unlock. A shutdown while still
 * leading goes on like any failure: the replica cleans up what it started.
 */
function throwIfCancelled(s: Subject, err: unknown): void {
  if (lostLeadership(s.ctx.signal)) throw err;
}

/**
 * The signal for undoing what a failed helm operation left (a failed install's release, a failed
 * upgrade's revision). Shutting down while still leading (a cancellation for lost leadership never
 * gets here), that is still ours to undo, within the controller's abort grace period.
 */
function cleanupSignal(s: Subject): AbortSignal {
  return s.ctx.signal.aborted ? AbortSignal.timeout(SHUTDOWN_ROLLBACK_MS) : s.ctx.signal;
}

/**
 * The error a reconcile ends with, as the controller may log it: without the sensitive values its
 * message or causes quote. Its kind (terminal or not) is kept; its causes go, as they are raw
 * helm or API server text. Unchanged when the CR has nothing sensitive.
 */
function redactedError(err: unknown, redact: Redactor): unknown {
  if (redact.empty) return err;
  const message = redact.text(err instanceof Error ? err.message : describeError(err));
  if (err instanceof ReportedError) return new ReportedError(message);
  if (err instanceof TerminalError || (err instanceof Error && err.cause instanceof TerminalError)) return new TerminalError(message);
  return new Error(message);
}

function notAllowedMessage(namespace: string, refused: readonly string[]): string {
  return (
    `values reference not allowed: ${refused.join(', ')} of namespace ${namespace} not labelled ${VALUES_SOURCE_LABEL}="true". ` +
    'This watch acts as a ServiceAccount, so only objects that opt in can be referenced: label them if their content may go into releases of this namespace'
  );
}

/** A failure already written to status and events; the queue retries it with backoff. */
export class ReportedError extends Error {
  override readonly name = 'ReportedError';
}

const keyOf = (s: Subject): string => `${s.namespace}/${s.name}`;
/** The CR instance: a CR deleted and created again under its name has a new UID. */
const uidOf = (s: Subject): string => s.cr.metadata.uid ?? '';

function conflictMessage(s: Subject, owner: string): string {
  return (
    `release name "${s.name}" in namespace "${s.namespace}" is already used by ${owner}; ` +
    'rename this resource or delete the other one'
  );
}

function deployedRelease(r: ReleaseInfo): DeployedRelease {
  return {
    name: r.name,
    namespace: r.namespace,
    revision: r.revision,
    chart: r.chart.name,
    chartVersion: r.chart.version,
    ...(r.chart.appVersion === undefined ? {} : { appVersion: r.chart.appVersion }),
  };
}

/** The user a ServiceAccount of the CR's namespace authenticates as, for impersonation. */
export function serviceAccountUser(namespace: string, serviceAccount: string | undefined): string | undefined {
  return serviceAccount === undefined ? undefined : `system:serviceaccount:${namespace}:${serviceAccount}`;
}

/** `helm` with every cluster-facing call made as `impersonate`. */
function actingAs(helm: HelmPort, impersonate: string | undefined): HelmPort {
  if (impersonate === undefined) return helm;
  return {
    major: () => helm.major(),
    install: (r) => helm.install({ ...r, impersonate }),
    upgrade: (r) => helm.upgrade({ ...r, impersonate }),
    uninstall: (r) => helm.uninstall({ ...r, impersonate }),
    rollback: (r) => helm.rollback({ ...r, impersonate }),
    status: (release, namespace) => helm.status(release, namespace, { impersonate }),
    render: (r) => helm.render(r),
    running: (release, namespace) => helm.running(release, namespace),
  };
}
