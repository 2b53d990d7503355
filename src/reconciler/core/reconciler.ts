/**
 * Reconciles one CR of a watched kind into a helm release, level-based and idempotent (the shape of
 * Flux helm-controller's atomic release reconciler, ADR 0038): it reads the CR and its release,
 * asks the pure decisions of next-action.ts for one action, runs it (actions/, one file each),
 * turns the outcome into status and events with the pure `summarize`, and writes both once, on
 * the way out: actions return their events on the outcome, they record none (docs/adr/0062).
 * It is given every collaborator (src/operator wires them) and calls nothing above it: the CR's
 * cached metadata comes with the request, a write that brings its own watch event (adding the
 * finalizer) ends the reconcile, as kube-rs's finalizer helper does (docs/adr/0053), and a
 * reconcile only returns its result. What it reads of other CRs comes from a read-only view of the
 * controller's cache; the reconciles it asks for others (a rollout's next wave, a batch's peers)
 * are requests into a source the controller drains, whose timers stop with it (docs/adr/0073).
 */
import { randomBytes } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Watch } from '../../config/watch.js';
import { describeError } from '../../k8s/errors.js';
import type { EventRecorder } from '../../k8s/events.js';
import {
  TerminalError,
  type CacheReader,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from '../../runtime/reconcile.js';
import type { Wakeups } from '../../runtime/requeue-source.js';
import type { CustomResource } from '../../k8s/custom-resources.js';
import type { Logger } from '../../telemetry/logger.js';
import { correctDrift } from '../actions/correct-drift.js';
import { testsUnreported, testUnreported } from '../actions/release-test.js';
import { FINALIZER, FINALIZERS } from './finalizers.js';
import type { UninstallPort } from './uninstall-port.js';
import { install } from '../actions/install.js';
import { unlock } from '../actions/unlock.js';
import { upgrade } from '../actions/upgrade.js';
import { plannedUpgrade } from '../actions/plan-gate.js';
import type { Desired } from './action-context.js';
import { ConditionType, Reason } from '../status/conditions.js';
import { desiredState, invalidInput } from '../desired/desired.js';
import type { HelmFailure, HelmPort } from './helm-port.js';
import { admit, nextAction, type Action } from '../decide/next-action.js';
import { adoptingMessage, notOwnedMessage } from '../decide/adoption.js';
import { isFirstInstall } from '../decide/first-install.js';
import { confirmedOnce, observeRelease, recordsRememberedMs, releaseOwnerOf, type ReleaseOwner } from './observe.js';
import { ChangedOutsideError, CHANGED_OUTSIDE_EVENT } from '../decide/outside-change.js';
import { ReleaseChangedError } from '../objects/release-object-types.js';
import type { ObservedState, ReleaseRecord } from '../decide/state.js';
import { withEvents, type CrEvent, type Outcome, type Summary } from './outcome.js';
import { parseReleaseAnnotations } from '../decide/annotations.js';
import {
  annotationFloorMs,
  DEFAULT_ANNOTATION_PERIOD_FLOOR_MS,
  periodMs,
  resyncAfterMs,
  withPeriodFloor,
  type PeriodSources,
} from '../decide/period.js';
import type {
  CrdsPort,
  PlansPort,
  CustomResourcesPort,
  ManifestsPort,
  ObjectReaderPort,
  ReconcilerMetrics,
  ReleaseObjectsPort,
  ReleaseStoragePort,
} from './ports.js';
import { crSample } from '../status/cr-sample.js';
import type { StatusDraft } from '../status/status.js';
import { beginReconcile, finalizerFirst, readCR, type Reconcile } from './reconcile-scope.js';
import { previewPlan } from './plan-preview.js';
import type { UpgradePlan } from '../plan/upgrade-plan.js';
import { redactedError } from '../status/redaction.js';
import { missingServiceAccount } from './service-account.js';
import { Rollout, wakeSooner, type RolloutControlPort } from '../rollout/rollout.js';
import { summarize } from '../decide/summarize.js';
import type { ValuesSourcePort } from '../desired/values-from.js';
import { inputsWatched, settles, SettledLooks, type SettledInputs } from './settled.js';

export { FINALIZER, LEGACY_FINALIZER } from './finalizers.js';
export { MAX_FAILED_ATTEMPTS } from '../decide/next-action.js';

export interface HelmReconcilerOptions {
  readonly watch: Watch;
  readonly crs: CustomResourcesPort;
  readonly helm: HelmPort;
  readonly storage: ReleaseStoragePort;
  readonly events: EventRecorder;
  /** The release's live objects (ownership, drift repair, readiness). */
  readonly objects: ReleaseObjectsPort;
  /** The cluster's CRDs, for the chart's `crds/` under `crds: CreateReplace`; undefined: never replaced. */
  readonly crds?: CrdsPort;
  /** Upgrade plans and their approvals (docs/adr/0083); undefined: upgrades are never held for approval. */
  readonly plans?: PlansPort;
  /** Reads the watch's ServiceAccount before helm acts as it. */
  readonly reader: ObjectReaderPort;
  /** The deployed manifest of each CR, kept between reconciles. */
  readonly manifests: ManifestsPort;
  readonly uninstaller: UninstallPort;
  /** The controller's cache of the kind, read-only (the rollout gate reads every CR's status from it). */
  readonly cache: CacheReader;
  /** The controller's request source: the CRs the rollout wakes, and when it looks again. */
  readonly wakeups: Wakeups;
  /** Drops what is kept about a CR whose release is gone (shared with the uninstaller's batches). */
  readonly forget: (namespace: string, name: string) => void;
  /** Secrets and ConfigMaps that CRs take values from. */
  readonly valuesSources?: ValuesSourcePort;
  readonly metrics?: ReconcilerMetrics;
  /** The controller's name, for metrics. */
  readonly controller?: string;
  readonly isNamespaced: (apiVersion: string, kind: string) => Promise<boolean>;
  /** Turns a helm error into a summary for status and whether retrying can help. */
  readonly describeHelmError: (err: unknown) => HelmFailure;
  /** `--reconcile-period`, used when neither the CR nor the watch sets one. */
  readonly defaultReconcilePeriodMs: number;
  /** The shortest `reconcile-period` a CR's annotation may ask for; default 30 s (period.ts). */
  readonly annotationPeriodFloorMs?: number;
  /** How long a helm action runs before the CR shows it as Reconciling; default PROGRESS_DELAY_MS (status-writer.ts). */
  readonly progressDelayMs?: number;
  /** Mask values in OverrideValuesInUse events (`--suppress-override-values`). */
  readonly suppressOverrideValues?: boolean;
  /**
   * The key of the fingerprint status shows (ADR 0044): the same in every replica and across
   * restarts, or the retry budget starts again with each process. Default: random, this process's.
   */
  readonly fingerprintKey?: Uint8Array;
  readonly now?: () => Date;
  /** The admin's pause of this watch's rollout (docs/rollouts.md); undefined: never paused. */
  readonly rolloutControl?: RolloutControlPort;
}

/** A release's state, and whether it was decided from remembered records (ADR 0069). */
interface Seen {
  readonly state: ObservedState;
  readonly remembered: boolean;
}

/** A takeover of a release this operator did not install is never silent: an event says who allowed it. */
function adoptionEvents(name: string, state: ObservedState): CrEvent[] {
  return state.kind === 'OutOfSync' && state.adopted !== undefined
    ? [{ type: 'Normal', reason: 'AdoptingRelease', message: adoptingMessage(name, state.adopted) }]
    : [];
}

/** The fingerprint key of reconcilers not given one: stable for this process only. */
const PROCESS_FINGERPRINT_KEY = randomBytes(32);

/** Decisions per reconcile: an unlock is followed by one more, never by a loop. */
const MAX_ACTIONS = 2;

export class HelmReconciler implements Reconciler {
  readonly #owner: ReleaseOwner;
  readonly #controller: string;
  readonly #fingerprintKey: Uint8Array;
  readonly #rollout: Rollout;
  readonly #settled = new SettledLooks();

  constructor(private readonly o: HelmReconcilerOptions) {
    this.#fingerprintKey = o.fingerprintKey ?? PROCESS_FINGERPRINT_KEY;
    this.#owner = releaseOwnerOf(o.watch);
    this.#controller = o.controller ?? o.watch.kind;
    const { chart, rollout: policy } = o.watch;
    const { rolloutControl: control, metrics, now, cache, wakeups } = o;
    this.#rollout = new Rollout({
      controller: this.#controller,
      cache,
      wakeups,
      policy,
      chartDigest: chart.digest,
      chartVersion: chart.version,
      control,
      metrics,
      now,
      sealKey: this.#fingerprintKey,
    });
  }

  /** `plan diff` (plan-preview.ts): the plan of `cr` as given, against its release; nothing is written. */
  preview(cr: CustomResource, on: { readonly signal: AbortSignal; readonly log: Logger }): Promise<UpgradePlan> {
    return previewPlan(this.o, cr, { ...on, ownerKind: this.#owner.ownerKind, fingerprintKey: this.#fingerprintKey });
  }

  /** After a takeover a previous leader's helm may have written any release's records late: none is remembered. */
  resync(): void {
    this.o.manifests.unconfirmAll();
    this.#settled.clear();
  }

  /** Another replica's CR changed (sharded): the rollout's waves span the kind (rollout.ts `observe`). */
  observe(obj: KubernetesObject): void {
    this.#rollout.observe(obj);
  }

  async reconcile(request: Request, rc: ReconcileContext): Promise<Result> {
    // A batched uninstall holds this CR's release; the batch queues the CR again when it ends.
    if (this.o.uninstaller.isHeld(request.namespace, request.name)) return {};
    const first = finalizerFirst(request, rc.cached, this.o.helm.running(request.name, request.namespace));
    if (first !== undefined) {
      await this.o.crs.addFinalizer(first, FINALIZER);
      return {};
    }
    const inputs = this.#settledInputs(request, rc.cached);
    return this.#settledResult(request, inputs) ?? this.#look(request, rc, inputs);
  }

  /** Found settled from these very inputs (settled.ts): the same decision, not made again; undefined: look in full. */
  #settledResult({ namespace, name }: Request, inputs: SettledInputs | undefined): Result | undefined {
    if (inputs === undefined || this.o.helm.running(name, namespace)) return undefined;
    const settled = this.#settled.unchanged(namespace, name, inputs);
    if (settled === undefined) return undefined;
    this.o.metrics?.settledLook?.(this.#controller);
    return { requeueAfterMs: resyncAfterMs(this.#periodSources(settled.annotationMs)) };
  }

  /** The full look: the CR and its release read, the action decided and done, status and events written once. */
  async #look(request: Request, rc: ReconcileContext, inputs: SettledInputs | undefined): Promise<Result> {
    this.#settled.forget(request.namespace, request.name);
    const { cr, records } = await readCR(this.o, request, rc.cached, { nowMs: this.#nowMs(), rememberMs: this.#rememberMs(rc.cached) });
    if (cr === undefined) {
      // Gone, whether or not our finalizer ran (removed by hand, or by a batch for its peer):
      // nothing kept for it may outlive it.
      this.o.forget(request.namespace, request.name);
      return {};
    }
    const sealing = {
      trust: (d: StatusDraft, uid: string): void => {
        this.#rollout.trust(d, uid);
      },
      seal: (d: StatusDraft, uid: string): void => {
        this.#rollout.seal(d, uid);
      },
    };
    const r = beginReconcile(this.o, cr, { request, rc, records, annotationFloorMs: this.#annotationFloorMs(), sealing });
    const ended = await this.#decideAndAct(r).then(
      (outcome) => ({ outcome }),
      (thrown: unknown) => ({ thrown }),
    );
    const summary = wakeSooner(this.#summary(r, ended), r.wakeMs);
    // The one place a reconcile's status and events are written: what summarize decided.
    r.status.draft.apply(summary.status);
    summary.events.forEach(r.record);
    if ('outcome' in ended && ended.outcome.kind === 'uninstalled' && ended.outcome.remaining.length === 0) {
      this.o.forget(r.ctx.namespace, r.ctx.name);
      this.#rollout.forget(r.ctx.uid);
      // A finalizer that cannot be removed yet (a conflict, the API server away) is retried with backoff.
      await r.status.release().catch((err: unknown) => {
        throw redactedError(err, r.status.redactor);
      });
    } else {
      const status = await r.status.finish();
      if (inputs !== undefined && 'outcome' in ended && settles(ended.outcome, summary, { status, wakeMs: r.wakeMs }))
        this.#settled.remember(r.ctx.namespace, r.ctx.name, inputs, r.ctx.annotations.reconcilePeriodMs);
      this.o.metrics?.crState?.(
        this.#controller,
        r.ctx.namespace,
        r.ctx.name,
        crSample(r.status.draft.current, summary.error === undefined),
      );
    }
    // The controller logs it, causes included (helm's stderr quotes values).
    if (summary.error !== undefined) throw redactedError(summary.error, r.status.redactor);
    return summary.result;
  }

  /** What `outcome` means for the CR; what no action expects (an API server error, a bug) is retried with backoff. */
  #summary(r: Reconcile, ended: { outcome: Outcome } | { thrown: unknown }): Summary {
    if ('outcome' in ended) {
      const { metadata } = r.cr;
      const input = {
        name: r.ctx.name,
        generation: metadata.generation,
        deleting: metadata.deletionTimestamp !== undefined,
        periodMs: this.#period(r),
      };
      return summarize(r.status.draft.current, ended.outcome, input);
    }
    const { thrown } = ended;
    const error = thrown instanceof Error ? thrown : new Error(String(thrown));
    const irreconcilable = {
      type: ConditionType.Irreconcilable,
      status: 'True' as const,
      reason: Reason.ReconcileError,
      message: describeError(thrown),
    };
    return { status: thrown instanceof TerminalError ? [] : [{ set: irreconcilable }], result: {}, error, events: [] };
  }

  /** The gate, then for a live CR its desired state and release, then the actions they pick. */
  async #decideAndAct(r: Reconcile): Promise<Outcome> {
    const { ctx } = r;
    const { metadata } = r.cr;
    const gate = admit({
      helmRunning: ctx.helm.running(ctx.name, ctx.namespace),
      deleting: metadata.deletionTimestamp !== undefined,
      finalizer: (metadata.finalizers ?? []).some((f) => FINALIZERS.includes(f)),
      paused: ctx.annotations.paused,
    });
    const invalid: CrEvent[] =
      gate === 'wait-for-helm'
        ? []
        : ctx.annotations.problems.map((message) => ({ type: 'Warning', reason: 'InvalidAnnotation', message }));
    switch (gate) {
      case 'wait-for-helm':
        return { kind: 'helm-busy' };
      case 'let-go':
        return withEvents({ kind: 'let-go' }, invalid);
      case 'finalize':
        return withEvents(await this.o.uninstaller.run(ctx, (helm) => r.status.during(`Uninstalling release ${ctx.name}`, helm)), invalid);
      case 'pause':
        return withEvents({ kind: 'paused' }, invalid);
      case 'reconcile':
        return withEvents(await this.#converge(r), invalid);
    }
  }

  async #converge(r: Reconcile): Promise<Outcome> {
    const { cr, ctx } = r;
    const invalid =
      invalidInput(cr, ctx.name) ?? (await missingServiceAccount(this.o.reader, ctx.namespace, this.o.watch.serviceAccountName));
    if (invalid !== undefined) return invalid;
    if (!(cr.metadata.finalizers ?? []).includes(FINALIZER)) {
      // The cache had it (finalizerFirst), the CR as read has not: someone removed it since. Its
      // watch event brings the next reconcile, which goes on from the CR as written.
      await this.o.crs.addFinalizer(cr, FINALIZER);
      return { kind: 'finalizer-added' };
    }
    const desired = await desiredState({
      cr,
      namespace: ctx.namespace,
      name: ctx.name,
      watch: this.o.watch,
      ownerKind: this.#owner.ownerKind,
      helmMajor: await this.o.helm.major(),
      identity: ctx.identity,
      valuesSources: this.o.valuesSources,
      redact: r.status.redactor,
      fingerprintKey: this.#fingerprintKey,
    });
    if ('kind' in desired) return desired;
    r.status.draft.rekeyFailures(desired.fingerprint, desired.keyedFingerprint);
    const outcome = (await this.#firstInstall(r, desired)) ?? (await this.#fromStorage(r, desired));
    // helm has just written this revision, deployed: the reconciles its objects bring while they
    // become ready may go on from it without reading the storage (ADR 0069). After anything else
    // but a release found in sync (a failed upgrade, an unlock, a refusal), the storage is read.
    if (outcome.kind === 'installed' || outcome.kind === 'upgraded')
      this.#confirm(r, { revision: outcome.deployment.release.revision, status: 'deployed', labels: desired.labels }, this.#nowMs());
    else if (outcome.kind !== 'in-sync') this.o.manifests.unconfirm(r.ctx.namespace, r.ctx.name);
    return outcome;
  }

  #confirmInSync(r: Reconcile, state: ObservedState): void {
    if (state.kind === 'InSync') this.#confirm(r, state.deployed, r.records.sinceMs);
  }

  #confirm(r: Reconcile, record: ReleaseRecord, atMs: number): void {
    this.o.manifests.confirm({ namespace: r.ctx.namespace, name: r.ctx.name, uid: r.ctx.uid }, { record, atMs });
  }

  /** How long this CR's release records may be remembered: within its reconcile period, from the annotations as cached. */
  #rememberMs(cached: ReconcileContext['cached']): number {
    const annotations = withPeriodFloor(parseReleaseAnnotations(cached?.metadata?.annotations), this.#annotationFloorMs());
    return recordsRememberedMs(periodMs(this.#periodSources(annotations.reconcilePeriodMs)));
  }

  /**
   * The versions a settled look compares (settled.ts); undefined when one of the CR's inputs is not
   * kept current by a watch: values from Secrets or ConfigMaps, the ServiceAccount helm acts as, a
   * release no storage watch shows, objects no dependents cache holds.
   */
  #settledInputs({ namespace, name }: Request, cached: ReconcileContext['cached']): SettledInputs | undefined {
    const metadata = cached?.metadata;
    if (metadata === undefined || !inputsWatched(this.o.watch, metadata)) return undefined;
    const { uid = '', resourceVersion = '' } = metadata;
    const kept = this.o.manifests.kept(namespace, name, uid);
    const record = kept === undefined ? undefined : this.o.storage.watched?.(namespace, name, kept.revision);
    const objects = kept === undefined ? undefined : this.o.objects.cachedVersions?.(kept.objects);
    return record === undefined || objects === undefined ? undefined : { uid, resourceVersion, record, objects };
  }

  #nowMs(): number {
    return (this.o.now?.() ?? new Date()).getTime();
  }

  /** Decides from the release's records what to do, and does it (an unlock, then once more). */
  async #fromStorage(r: Reconcile, desired: Desired): Promise<Outcome> {
    const at = { namespace: r.ctx.namespace, name: r.ctx.name, uid: r.ctx.uid, fingerprint: desired.fingerprint };
    let seen = await this.#observe(r, at, r.records.decide, r.records.remembered);
    const events = adoptionEvents(at.name, seen.state);
    for (let unlocks = 0; ;) {
      const outcome = await this.#attempt(r, seen, desired);
      if (outcome instanceof ReleaseChangedError || outcome instanceof ChangedOutsideError) {
        seen = await this.#decideAgain(r, at, outcome, events);
        continue;
      }
      // Read from storage and found in sync: remembered for the reconciles that follow (ADR 0069).
      if (outcome.kind === 'in-sync' && !seen.remembered) this.#confirmInSync(r, seen.state);
      if (outcome.kind !== 'unlocked') return withEvents(outcome, events);
      events.push(...(outcome.events ?? []));
      seen = { state: await observeRelease(r.ctx, this.#owner, at), remembered: false };
      if (seen.state.kind === 'Locked' || ++unlocks >= MAX_ACTIONS)
        throw new Error(
          `release ${at.name} is still ${seen.state.kind === 'Locked' ? seen.state.latest.status : seen.state.kind} after unlocking it`,
        );
    }
  }

  /**
   * Nothing was written: a release changed since it was remembered is decided again from its
   * records as read; one made outside the operator is out of sync (ADR 0070), and says so.
   */
  async #decideAgain(
    r: Reconcile,
    at: Parameters<typeof observeRelease>[2],
    err: ReleaseChangedError | ChangedOutsideError,
    events: CrEvent[],
  ): Promise<Seen> {
    if (err instanceof ChangedOutsideError) {
      events.push({ type: 'Warning', reason: CHANGED_OUTSIDE_EVENT, message: err.message });
      this.o.metrics?.releaseState(this.#controller, at.namespace, at.name, 'OutOfSync');
      return { state: { kind: 'OutOfSync', latest: err.deployed, deployed: err.deployed }, remembered: false };
    }
    const seen = await this.#observe(r, at, () => Promise.resolve([...err.records]), false);
    events.push(...adoptionEvents(at.name, seen.state));
    return seen;
  }

  /** The release's state from `read`; remembered records only ever report a release in sync, and whatever else they say is read again. */
  async #observe(
    r: Reconcile,
    at: Parameters<typeof observeRelease>[2],
    read: () => Promise<ReleaseRecord[]>,
    remembered: boolean,
  ): Promise<Seen> {
    const state = await observeRelease(r.ctx, this.#owner, at, await read());
    if (remembered && state.kind !== 'InSync') return this.#observe(r, at, r.records.read, false);
    this.o.metrics?.releaseState(this.#controller, at.namespace, at.name, state.kind);
    return { state, remembered };
  }

  /** The action the state picks, done; the error when remembered records turned out stale before anything was written. */
  async #attempt(r: Reconcile, seen: Seen, desired: Desired): Promise<Outcome | ReleaseChangedError | ChangedOutsideError> {
    const action = nextAction({
      state: seen.state,
      fingerprint: desired.keyedFingerprint,
      failedAttempts: r.status.draft.current.failedAttempts,
    });
    const beforeWrite =
      seen.remembered && action.kind === 'correct-drift' ? confirmedOnce(r.records.read, r.ctx.name, action.deployed) : undefined;
    try {
      return await this.#throughRollout(r, action, desired, beforeWrite);
    } catch (err) {
      if ((beforeWrite !== undefined && err instanceof ReleaseChangedError) || err instanceof ChangedOutsideError) return err;
      throw err;
    }
  }

  /** A fleet-only upgrade waits for its wave (rollout.ts); what any action leaves is noted for the rollout. */
  async #throughRollout(r: Reconcile, action: Action, desired: Desired, beforeWrite: (() => Promise<void>) | undefined): Promise<Outcome> {
    const upgrade = action.kind === 'upgrade' ? action.from : undefined;
    const held =
      upgrade === undefined
        ? undefined
        : await this.#rollout.hold(r.status.draft, { namespace: r.ctx.namespace, name: r.ctx.name }, upgrade, desired);
    const outcome = held ?? (await this.#act(r, action, desired, beforeWrite));
    return this.#noted(r, outcome, desired, upgrade !== undefined && Rollout.fleetOnly(upgrade, desired));
  }

  /** Notes what an action left for the rollout (status.rollout, its wake-up, its metrics); its events go with the outcome. */
  #noted(r: Reconcile, outcome: Outcome, desired: Desired, fleetOnly: boolean): Outcome {
    const events: CrEvent[] = [];
    const event = (reason: string, message: string): void => {
      events.push({ type: 'Warning', reason, message });
    };
    r.wakeMs = this.#rollout.note(r.status.draft, outcome, desired, {
      fleetOnly,
      event,
      at: { namespace: r.ctx.namespace, name: r.ctx.name },
    });
    this.#rollout.report(desired.fleetRevision);
    return events.length === 0 ? outcome : { ...outcome, events: [...(outcome.events ?? []), ...events] };
  }

  /** A CR that never had a release is installed without a read of the storage (isFirstInstall); undefined: helm found the name in use, or not a first install. */
  async #firstInstall(r: Reconcile, desired: Desired): Promise<Outcome | undefined> {
    if (!isFirstInstall(r.ctx.status)) return undefined;
    this.o.metrics?.releaseState(this.#controller, r.ctx.namespace, r.ctx.name, 'Absent');
    const outcome = await r.status.during(`Installing release ${r.ctx.name}`, () => install(r.ctx, desired, { presumedAbsent: true }));
    // Helm found the name in use: the records decide, and the rollout notes that path's outcome.
    return outcome === undefined ? undefined : this.#noted(r, outcome, desired, false);
  }

  /** `beforeWrite`: for a drift repair that goes on from remembered records (observe.ts confirmedOnce). */
  async #act(r: Reconcile, action: Action, desired: Desired, beforeWrite?: () => Promise<void>): Promise<Outcome> {
    const { ctx } = r;
    switch (action.kind) {
      case 'report-conflict': {
        const message = `release name "${ctx.name}" in namespace "${ctx.namespace}" is already used by ${action.ownerKind}; rename this resource or delete the other one`;
        return { kind: 'refused', reason: Reason.ReleaseNameConflict, message, retry: false, event: true, stage: 'release' };
      }
      case 'report-not-owned': {
        const message = notOwnedMessage({ namespace: ctx.namespace, name: ctx.name, kind: this.o.watch.kind, chart: action.chart });
        return { kind: 'refused', reason: Reason.ReleaseNotOwned, message, retry: false, event: true, stage: 'release', recheck: 'period' };
      }
      case 'stall':
        return { kind: 'stalled', count: action.count };
      case 'unlock':
        return unlock(ctx, action.latest, action.lastGood);
      case 'install':
        return r.status.during(`Installing release ${ctx.name}`, () => install(ctx, desired, { leftovers: action.leftovers }));
      case 'upgrade':
        // Planning comes first, outside `during`: a held CR is not Reconciling (plan-gate.ts).
        return plannedUpgrade(ctx, desired, action.from, {
          upgrade: () =>
            r.status.during(`Upgrading release ${ctx.name} from revision ${action.from.revision}`, () =>
              upgrade(ctx, desired, action.from),
            ),
          rolloutApproval: () => this.#rollout.approval({ namespace: ctx.namespace, name: ctx.name }, action.from, desired),
        });
      case 'correct-drift': {
        const inSync = await correctDrift(ctx, action.deployed, desired, beforeWrite);
        if (inSync.kind !== 'in-sync' || !testsUnreported(ctx, inSync.revision)) return inSync;
        return r.status.during(`Testing release ${ctx.name} revision ${inSync.revision}`, () => testUnreported(ctx, inSync, desired));
      }
    }
  }

  #annotationFloorMs(): number {
    const sources = { watchMs: this.o.watch.reconcilePeriodMs, defaultMs: this.o.defaultReconcilePeriodMs };
    return annotationFloorMs(sources, this.o.annotationPeriodFloorMs ?? DEFAULT_ANNOTATION_PERIOD_FLOOR_MS);
  }

  #period(r: Reconcile): number {
    return resyncAfterMs(this.#periodSources(r.ctx.annotations.reconcilePeriodMs));
  }

  #periodSources(annotationMs: number | undefined): PeriodSources {
    return { annotationMs, watchMs: this.o.watch.reconcilePeriodMs, defaultMs: this.o.defaultReconcilePeriodMs };
  }
}
