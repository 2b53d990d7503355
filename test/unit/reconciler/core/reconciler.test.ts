/**
 * The reconciler's orchestration against fakes of every port: which port is asked what, in which
 * order, and what reaches status, events and the queue. The decisions themselves (next-action,
 * outcome, the actions) have tests of their own; these fail when the reconciler wires them wrong.
 */
import { describe, expect, it, vi } from 'vitest';
import type { CachedCustomResource, CustomResource } from '../../../../src/k8s/custom-resources.js';
import type { EventRecorder, EventTarget, EventType } from '../../../../src/k8s/events.js';
import type { ObjectRef } from '../../../../src/k8s/objects.js';
import { FINALIZER } from '../../../../src/reconciler/core/finalizers.js';
import { Uninstaller } from '../../../../src/reconciler/actions/uninstall.js';
import { ConditionType, Reason } from '../../../../src/reconciler/status/conditions.js';
import { ManifestCache } from '../../../../src/reconciler/objects/manifest-cache.js';
import { MAX_FAILED_ATTEMPTS } from '../../../../src/reconciler/decide/next-action.js';
import { CHANGED_OUTSIDE_EVENT } from '../../../../src/reconciler/decide/outside-change.js';
import { RECORDS_REMEMBERED_MS, releaseOwnerOf } from '../../../../src/reconciler/core/observe.js';
import { ReportedError } from '../../../../src/reconciler/core/outcome.js';
import type { CustomResourcesPort, ObjectDeleterPort, ObjectReaderPort } from '../../../../src/reconciler/core/ports.js';
import { HelmReconciler, type HelmReconcilerOptions } from '../../../../src/reconciler/core/reconciler.js';
import { RELEASE_LABELS } from '../../../../src/reconciler/decide/state.js';
import { keepForRollout } from '../../../../src/reconciler/rollout/rollout-members.js';
import { readStatus } from '../../../../src/reconciler/status/status.js';
import {
  VALUES_FROM_ANNOTATION,
  type ValuesReference,
  type ValuesSource,
  type ValuesSourcePort,
} from '../../../../src/reconciler/desired/values-from.js';
import type { Result } from '../../../../src/runtime/reconcile.js';
import { silentLogger } from '../../../../src/telemetry/logger.js';
import { jsonDigest } from '../../../../src/util/canonical-json.js';
import { watchOf } from '../../../support/watch.js';
import {
  CHART,
  describeHelmError,
  FakeKind,
  FakeHelm,
  FakeHelmError,
  FakeObjects,
  FakeStorage,
  fakeIsNamespaced,
  record,
} from '../actions/fakes.js';

const NS = 'apps';
const NAME = 'web';
const PERIOD_MS = 600_000;

const WATCH: HelmReconcilerOptions['watch'] = watchOf(CHART);
const OWNER_KIND = releaseOwnerOf(WATCH).ownerKind;

/** The CRs of the kind as the API server keeps them: finalizers, status, deletion. */
class FakeCustomResources implements CustomResourcesPort {
  readonly #crs = new Map<string, CustomResource>();
  readonly statusPatches: Record<string, unknown>[] = [];
  readonly writes: string[] = [];
  /** How many times a CR was read (a GET of the API server's). */
  reads = 0;
  #version = 1;

  put(cr: CustomResource): void {
    const stored = structuredClone(cr);
    stored.metadata.resourceVersion = String(this.#version++);
    this.#crs.set(`${cr.metadata.namespace ?? ''}/${cr.metadata.name}`, stored);
  }

  /** The CR as stored now (not a copy). */
  stored(namespace: string, name: string): CustomResource | undefined {
    return this.#crs.get(`${namespace}/${name}`);
  }

  /** The CR as the controller's cache holds it: metadata, the Ready condition, the rollout (operator.ts). */
  cached(namespace: string, name: string): CachedCustomResource | undefined {
    const cr = this.#crs.get(`${namespace}/${name}`);
    return cr === undefined ? undefined : keepForRollout(structuredClone(cr));
  }

  /** The resourceVersion each read was told the cache holds. */
  readonly readVersions: (string | undefined)[] = [];

  get(namespace: string, name: string, version?: string): Promise<CustomResource | undefined> {
    this.reads++;
    this.readVersions.push(version);
    const cr = this.#crs.get(`${namespace}/${name}`);
    return Promise.resolve(cr === undefined ? undefined : structuredClone(cr));
  }

  forget(): void {
    // Nothing is kept here between reads.
  }

  addFinalizer(cr: CachedCustomResource, finalizer: string): Promise<void> {
    this.writes.push(`addFinalizer ${finalizer}`);
    const stored = structuredClone(this.#stored(cr.metadata.namespace ?? '', cr.metadata.name));
    stored.metadata.finalizers = [...(stored.metadata.finalizers ?? []), finalizer];
    this.put(stored);
    return Promise.resolve();
  }

  removeFinalizers(cr: CachedCustomResource, finalizers: readonly string[]): Promise<void> {
    this.writes.push('removeFinalizers');
    const key = `${cr.metadata.namespace ?? ''}/${cr.metadata.name}`;
    const stored = structuredClone(this.#stored(cr.metadata.namespace ?? '', cr.metadata.name));
    stored.metadata.finalizers = (stored.metadata.finalizers ?? []).filter((f) => !finalizers.includes(f));
    if (stored.metadata.finalizers.length === 0 && stored.metadata.deletionTimestamp !== undefined) this.#crs.delete(key);
    else this.put(stored);
    return Promise.resolve();
  }

  /** Called after each status patch is stored. */
  afterStatusPatch: (() => void) | undefined;

  patchStatus(namespace: string, name: string, status: Record<string, unknown>): Promise<boolean> {
    this.writes.push('patchStatus');
    this.statusPatches.push(status);
    queueMicrotask(() => this.afterStatusPatch?.());
    const stored = this.#crs.get(`${namespace}/${name}`);
    if (stored === undefined) return Promise.resolve(false);
    // A JSON merge patch of the status' top-level keys: null removes one.
    const merged = Object.entries({ ...stored.status, ...status }).filter(([, v]) => v !== null);
    this.put({ ...stored, status: Object.fromEntries(merged) });
    return Promise.resolve(true);
  }

  #stored(namespace: string, name: string): CustomResource {
    const cr = this.#crs.get(`${namespace}/${name}`);
    if (cr === undefined) throw new Error(`${namespace}/${name} not found`);
    return cr;
  }
}

/** The events recorded, as `{type, reason, message}`; `about`: the name of each event's CR. */
class RecordingEvents implements EventRecorder {
  readonly events: { readonly type: EventType; readonly reason: string; readonly message: string }[] = [];
  readonly about: string[] = [];
  record(target: EventTarget, type: EventType, reason: string, message: string): void {
    this.events.push({ type, reason, message });
    this.about.push(target.metadata?.name ?? '?');
  }
}

/** Secrets and ConfigMaps by `Kind/name`; which were read, as `Kind/name as`. */
class FakeValuesSources implements ValuesSourcePort {
  readonly objects = new Map<string, ValuesSource>();
  readonly reads: string[] = [];
  read(kind: ValuesReference['kind'], _namespace: string, name: string, as?: string): Promise<ValuesSource | undefined> {
    this.reads.push(`${kind}/${name} as ${as ?? 'operator'}`);
    return Promise.resolve(this.objects.get(`${kind}/${name}`));
  }
}

const noObjects: ObjectReaderPort & ObjectDeleterPort = {
  get: (_ref: ObjectRef) => Promise.resolve(undefined),
  delete: (_ref: ObjectRef) => Promise.resolve(false),
};

/** Every object exists (the watch's ServiceAccount, say). */
const everyObject: ObjectReaderPort = {
  get: (ref: ObjectRef) =>
    Promise.resolve({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace: ref.namespace } }),
};

/** `progressDelayMs`: 0 shows each helm action as Reconciling before it starts. */
function setup(
  o: { watch?: Partial<HelmReconcilerOptions['watch']>; progressDelayMs?: number; now?: () => Date; reader?: ObjectReaderPort } = {},
) {
  const storage = new FakeStorage();
  const helm = new FakeHelm(storage);
  const objects = new FakeObjects();
  const crs = new FakeCustomResources();
  const recorder = new RecordingEvents();
  const valuesSources = new FakeValuesSources();
  const kind = new FakeKind();
  const manifests = new ManifestCache(fakeIsNamespaced());
  const forgotten: string[] = [];
  const forget = (namespace: string, name: string): void => {
    manifests.forget(namespace, name);
    forgotten.push(`${namespace}/${name}`);
  };
  const uninstaller = new Uninstaller({
    owner: releaseOwnerOf(WATCH),
    crs,
    objects: noObjects,
    cache: kind,
    requeue: kind.requeue,
    forget,
  });
  const reconciler = new HelmReconciler({
    watch: { ...WATCH, ...o.watch },
    crs,
    helm,
    storage,
    events: recorder,
    objects,
    reader: o.reader ?? noObjects,
    manifests,
    uninstaller,
    cache: kind,
    wakeups: { ...kind.requeue, at: () => ({ cancel: () => undefined }) },
    forget,
    valuesSources,
    isNamespaced: fakeIsNamespaced(),
    describeHelmError,
    defaultReconcilePeriodMs: PERIOD_MS,
    ...(o.progressDelayMs === undefined ? {} : { progressDelayMs: o.progressDelayMs }),
    ...(o.now === undefined ? {} : { now: o.now }),
  });
  /** The reconciles' cancellation (shutdown, lost leadership). */
  const cancel = new AbortController();
  const reconcile = (): Promise<Result> =>
    reconciler.reconcile(
      { namespace: NS, name: NAME },
      { signal: cancel.signal, reconcileID: 'r1', log: silentLogger(), cached: crs.cached(NS, NAME) },
    );
  const cr = (
    o: { finalizers?: string[]; annotations?: Record<string, string>; deleting?: boolean; status?: Record<string, unknown> } = {},
  ): void => {
    crs.put({
      apiVersion: 'example.com/v1',
      kind: 'Nginx',
      metadata: {
        name: NAME,
        namespace: NS,
        uid: 'uid-web',
        generation: 1,
        ...(o.finalizers === undefined ? {} : { finalizers: o.finalizers }),
        ...(o.annotations === undefined ? {} : { annotations: o.annotations }),
        ...(o.deleting === true ? { deletionTimestamp: new Date('2026-01-01T00:00:00Z') } : {}),
      },
      spec: { replicas: 2 },
      ...(o.status === undefined ? {} : { status: o.status }),
    });
  };
  const status = async () => readStatus((await crs.get(NS, NAME))?.status);
  const condition = async (type: string) => (await status()).conditions.find((c) => c.type === type);
  /** The Reconciling condition as stored whenever helm is called, as `{status, reason, message}`. */
  const reconcilingDuringHelm = (): unknown[] => {
    const seen: unknown[] = [];
    helm.during = () => {
      const c = readStatus(crs.stored(NS, NAME)?.status).conditions.find((x) => x.type === ConditionType.Reconciling);
      seen.push(c === undefined ? undefined : { status: c.status, reason: c.reason, message: c.message });
    };
    return seen;
  };
  return {
    cancel,
    reconcilingDuringHelm,
    reconcile,
    reconciler,
    cr,
    crs,
    helm,
    storage,
    objects,
    manifests,
    events: recorder.events,
    valuesSources,
    forgotten,
    status,
    condition,
  };
}

describe('HelmReconciler', () => {
  it('adds its finalizer and returns, leaving the install to the reconcile that write brings', async () => {
    const t = setup();
    t.cr();
    expect(await t.reconcile()).toEqual({});
    expect(t.crs.writes).toEqual([`addFinalizer ${FINALIZER}`]);
    // From the cached metadata: the CR itself is read by the next reconcile, not by this one.
    expect(t.crs.reads).toBe(0);
    expect(t.helm.calls).toEqual([]);
    expect((await t.crs.get(NS, NAME))?.metadata.finalizers).toEqual([FINALIZER]);
  });

  it('reads its CR at the version the cache holds, which the port may answer from its own last read or write', async () => {
    const t = setup({ progressDelayMs: 0 });
    t.cr({ finalizers: [FINALIZER] });
    const cachedVersion = t.crs.cached(NS, NAME)?.metadata.resourceVersion;
    await t.reconcile();
    expect(cachedVersion).toBeDefined();
    expect(t.crs.readVersions).toEqual([cachedVersion]);
  });

  it('adds no finalizer to a paused CR, nor to one being deleted', async () => {
    const paused = setup();
    paused.cr({ annotations: { 'helm.sdk.operatorframework.io/paused': 'true' } });
    await paused.reconcile();
    expect(paused.crs.writes).not.toContain(`addFinalizer ${FINALIZER}`);
    const deleting = setup();
    deleting.cr({ deleting: true, finalizers: ['someone.else/keep'] });
    await deleting.reconcile();
    expect(deleting.crs.writes).toEqual([]);
  });

  it('adds its finalizer to a CR whose spec it will refuse, and refuses it on the next reconcile', async () => {
    const t = setup();
    t.crs.put({
      apiVersion: 'example.com/v1',
      kind: 'Nginx',
      metadata: { name: NAME, namespace: NS, uid: 'uid-web', generation: 1 },
      spec: ['not', 'an', 'object'],
    });
    await t.reconcile();
    expect(t.crs.writes).toEqual([`addFinalizer ${FINALIZER}`]);
    await expect(t.reconcile()).rejects.toThrow('spec must be an object');
    expect(await t.condition(ConditionType.Irreconcilable)).toMatchObject({ status: 'True', reason: Reason.InvalidSpec });
    expect(t.helm.calls).toEqual([]);
  });

  it('installs a CR that has its finalizer, and reports it in status and an event', async () => {
    const t = setup({ progressDelayMs: 0 });
    t.cr({ finalizers: [FINALIZER] });
    const whileHelmRan = t.reconcilingDuringHelm();
    expect(await t.reconcile()).toMatchObject({ requeueAfterMs: expect.any(Number) as number });
    expect(t.helm.methods()).toEqual(['install']);
    expect(t.helm.callsOf('install')[0]).toMatchObject({ release: NAME, namespace: NS, chart: CHART.path, values: { replicas: 2 } });
    // Reconciling was written before helm ran, and the outcome's write cleared it.
    expect(t.crs.writes).toEqual(['patchStatus', 'patchStatus']);
    expect(whileHelmRan).toEqual([{ status: 'True', reason: Reason.Progressing, message: `Installing release ${NAME}` }]);
    expect(await t.condition(ConditionType.Reconciling)).toBeUndefined();
    expect(await t.condition(ConditionType.Deployed)).toMatchObject({ status: 'True', reason: Reason.InstallSuccessful });
    expect(await t.condition(ConditionType.Ready)).toMatchObject({ status: 'True' });
    expect((await t.status()).deployedRelease).toMatchObject({ name: NAME, revision: 1 });
    expect(t.events).toContainEqual(expect.objectContaining({ type: 'Normal', reason: Reason.InstallSuccessful }));
    // A CR that never had a release is installed without a read of the release storage (ADR 0060).
    expect(t.storage.reads).toEqual([]);
  });

  it('writes status once for an install that ends within the progress delay: no Reconciling first', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const t = setup();
      t.cr({ finalizers: [FINALIZER] });
      const whileHelmRan = t.reconcilingDuringHelm();
      await t.reconcile();
      expect(whileHelmRan).toEqual([undefined]);
      expect(t.crs.writes).toEqual(['patchStatus']);
      expect(await t.condition(ConditionType.Deployed)).toMatchObject({ status: 'True', reason: Reason.InstallSuccessful });
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('shows an install that outlasts the progress delay as Reconciling while it runs, then writes its outcome after that', async () => {
    const t = setup({ progressDelayMs: 10 });
    t.cr({ finalizers: [FINALIZER] });
    // helm runs until the Reconciling write has landed.
    t.helm.hold = new Promise((resolve) => (t.crs.afterStatusPatch = resolve));
    await t.reconcile();
    expect(t.crs.writes).toEqual(['patchStatus', 'patchStatus']);
    expect(t.crs.statusPatches[0]).toMatchObject({
      conditions: [expect.objectContaining({ type: ConditionType.Reconciling, status: 'True', message: `Installing release ${NAME}` })],
    });
    expect(await t.condition(ConditionType.Reconciling)).toBeUndefined();
    expect(await t.condition(ConditionType.Deployed)).toMatchObject({ status: 'True', reason: Reason.InstallSuccessful });
  });

  it('shows nothing for a helm action cancelled before the progress delay ran out', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const t = setup({ progressDelayMs: 10 });
      t.cr({ finalizers: [FINALIZER] });
      // Cancelled while helm runs, which then outlasts the delay.
      t.helm.during = () => {
        t.cancel.abort();
        vi.advanceTimersByTime(1_000);
      };
      await t.reconcile().catch(() => undefined);
      const shown = t.crs.statusPatches
        .flatMap((p) => readStatus(p).conditions)
        .filter((c) => c.type === ConditionType.Reconciling && c.status === 'True');
      expect(shown).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('installs a new CR whose name has a release only after helm refused: nothing is removed, the storage decides', async () => {
    const t = setup();
    t.cr({ finalizers: [FINALIZER] });
    t.storage.set(NS, NAME, [record(1, 'deployed', { [RELEASE_LABELS.ownerKind]: OWNER_KIND, [RELEASE_LABELS.fingerprint]: 'before' })]);
    t.helm.release = { ...t.helm.release, revision: 2 };
    await t.reconcile();
    expect(t.helm.methods()).toEqual(['install', 'upgrade']);
    expect(await t.condition(ConditionType.Deployed)).toMatchObject({ status: 'True', reason: Reason.UpgradeSuccessful });
    expect(t.events.filter((e) => e.type === 'Warning')).toEqual([]);
  });

  it('upgrades a release deployed with other values', async () => {
    const t = setup({ progressDelayMs: 0 });
    t.cr({
      finalizers: [FINALIZER],
      status: { deployedRelease: { name: NAME, namespace: NS, revision: 1, chart: CHART.name, chartVersion: CHART.version } },
    });
    t.storage.set(NS, NAME, [record(1, 'deployed', { [RELEASE_LABELS.ownerKind]: OWNER_KIND, [RELEASE_LABELS.fingerprint]: 'before' })]);
    t.helm.release = { ...t.helm.release, revision: 2 };
    const whileHelmRan = t.reconcilingDuringHelm();
    await t.reconcile();
    expect(t.helm.methods()).toEqual(['upgrade']);
    expect(whileHelmRan).toEqual([expect.objectContaining({ status: 'True', message: `Upgrading release ${NAME} from revision 1` })]);
    expect(await t.condition(ConditionType.Deployed)).toMatchObject({ status: 'True', reason: Reason.UpgradeSuccessful });
    expect((await t.status()).deployedRelease).toMatchObject({ revision: 2 });
  });

  it('runs no helm and writes nothing when the deployed release has the desired values', async () => {
    const t = setup();
    t.cr({ finalizers: [FINALIZER] });
    await t.reconcile();
    const installed = t.helm.callsOf('install')[0];
    t.storage.set(NS, NAME, [record(1, 'deployed', installed?.labels)]);
    const writes = t.crs.writes.length;
    expect(await t.reconcile()).toMatchObject({ requeueAfterMs: expect.any(Number) as number });
    expect(t.helm.methods()).toEqual(['install']);
    expect(t.objects.repaired).toHaveLength(1);
    expect(t.crs.writes).toHaveLength(writes);
  });

  /** An installed CR, its clock, and the storage reads counted from here on. */
  async function installed(o: Pick<NonNullable<Parameters<typeof setup>[0]>, 'watch' | 'reader'> = {}) {
    let nowMs = Date.parse('2026-11-28T12:00:00Z');
    const t = setup({ ...o, now: () => new Date(nowMs) });
    t.cr({ finalizers: [FINALIZER] });
    await t.reconcile();
    expect(t.helm.methods()).toEqual(['install']);
    t.storage.reads.length = 0;
    /** Stores the CR as `change` leaves a copy of it; the CR as it was. */
    const edit = (change: (cr: CustomResource) => void): CustomResource => {
      const cr = t.crs.stored(NS, NAME);
      if (cr === undefined) throw new Error('no CR');
      const next = structuredClone(cr);
      change(next);
      t.crs.put(next);
      return cr;
    };
    return { t, edit, advance: (ms: number) => (nowMs += ms) };
  }

  /** Installed, its records remembered no more, and the storage watched from here on. */
  async function watched(o: Parameters<typeof installed>[0] = {}) {
    const { t, edit, advance } = await installed(o);
    advance(RECORDS_REMEMBERED_MS);
    t.storage.watch = { kind: 'live' };
    return { t, edit, labels: t.helm.callsOf('install')[0]?.labels };
  }

  describe('records remembered after an install (ADR 0069)', () => {
    it('reports readiness from the revision helm just wrote, without reading the storage', async () => {
      const { t, advance } = await installed();
      t.objects.ready = { status: 'False', reason: 'ResourcesNotReady', message: '1/2 ready', ready: 1, total: 2 };
      advance(RECORDS_REMEMBERED_MS - 1);
      await t.reconcile();
      expect(t.storage.reads).toEqual([]);
      expect(t.helm.methods()).toEqual(['install']);
      expect(await t.condition(ConditionType.Ready)).toMatchObject({
        status: 'False',
        message: expect.stringContaining('1/2 ready') as string,
      });
    });

    it('reads the storage again once what it remembers is older than RECORDS_REMEMBERED_MS, and remembers that read', async () => {
      const { t, advance } = await installed();
      advance(RECORDS_REMEMBERED_MS);
      await t.reconcile();
      expect(t.storage.reads).toEqual([`${NS}/${NAME}`]);
      // The read confirmed the revision again: the next reconcile goes on from it.
      advance(1_000);
      await t.reconcile();
      expect(t.storage.reads).toEqual([`${NS}/${NAME}`]);
    });

    it('reads the storage before it repairs anything, and repairs nothing towards a revision upgraded by hand since', async () => {
      const { t } = await installed();
      const ours = t.helm.callsOf('install')[0]?.labels;
      // `helm upgrade` by hand, with other values: revision 2 is deployed, and its objects changed.
      t.storage.store(NS, NAME, record(2, 'deployed', { ...ours, [RELEASE_LABELS.fingerprint]: 'by-hand' }));
      t.objects.drifted = 1;
      t.helm.release = { ...t.helm.release, revision: 3 };
      await t.reconcile();
      expect(t.objects.written).toBe(0);
      expect(t.storage.reads.length).toBeGreaterThan(0);
      // Decided from storage: the release is upgraded back to the CR's values, as before ADR 0069.
      expect(t.helm.methods()).toEqual(['install', 'upgrade']);
      expect((await t.status()).deployedRelease).toMatchObject({ revision: 3 });
    });

    it('repairs nothing of a release uninstalled and installed again by hand up to the same revision', async () => {
      const { t } = await installed();
      // Revision 1 again, without this operator's labels: not ours to touch.
      t.storage.set(NS, NAME, [record(1, 'deployed', {})]);
      t.objects.drifted = 1;
      await t.reconcile();
      expect(t.objects.written).toBe(0);
      expect(t.helm.methods()).toEqual(['install', 'status']);
      expect(await t.condition(ConditionType.Irreconcilable)).toMatchObject({ status: 'True', reason: Reason.ReleaseNotOwned });
    });

    it('reads the storage after a failed upgrade, so a spec put back is not taken as in sync from memory', async () => {
      const { t, edit } = await installed();
      const { spec } = edit((cr) => {
        cr.metadata.generation = 2;
        cr.spec = { replicas: 5 };
      });
      t.helm.fail('upgrade', new FakeHelmError('UPGRADE FAILED: timed out'));
      await t.reconcile().catch(() => undefined);
      edit((cr) => {
        cr.metadata.generation = 3;
        cr.spec = spec;
      });
      t.storage.reads.length = 0;
      await t.reconcile().catch(() => undefined);
      expect(t.storage.reads.length).toBeGreaterThan(0);
    });

    it('repairs drift once the storage confirms the revision it remembered', async () => {
      const { t } = await installed();
      t.objects.drifted = 2;
      await t.reconcile();
      expect(t.objects.written).toBe(2);
      // One confirmation for the whole pass, however many objects it writes.
      expect(t.storage.reads).toEqual([`${NS}/${NAME}`]);
      expect(t.helm.methods()).toEqual(['install']);
    });

    it('decides a changed spec from storage, never from memory', async () => {
      const { t, edit } = await installed();
      edit((cr) => {
        cr.metadata.generation = 2;
        cr.spec = { replicas: 5 };
      });
      t.helm.release = { ...t.helm.release, revision: 2 };
      await t.reconcile();
      expect(t.storage.reads.length).toBeGreaterThan(0);
      expect(t.helm.methods()).toEqual(['install', 'upgrade']);
    });

    it('remembers nothing once told to resync (a leadership takeover): a late write of a previous leader is read', async () => {
      const { t } = await installed();
      t.reconciler.resync();
      await t.reconcile();
      expect(t.storage.reads).toEqual([`${NS}/${NAME}`]);
    });

    it('remembers nothing for a CR created again under the same name', async () => {
      const { t, edit } = await installed();
      edit((cr) => {
        cr.metadata.uid = 'uid-web-2';
      });
      await t.reconcile();
      expect(t.storage.reads.length).toBeGreaterThan(0);
    });
  });

  describe('records from the storage watch (ADR 0111)', () => {
    it('finds a release in sync from the watch, past what it remembers, without reading the storage', async () => {
      const { t } = await watched();
      t.objects.ready = { status: 'False', reason: 'ResourcesNotReady', message: '1/2 ready', ready: 1, total: 2 };
      await t.reconcile();
      await t.reconcile();
      expect(t.storage.reads).toEqual([]);
      expect(t.helm.methods()).toEqual(['install']);
      expect(await t.condition(ConditionType.Ready)).toMatchObject({
        status: 'False',
        message: expect.stringContaining('1/2 ready') as string,
      });
    });

    it('reads the storage when the watch shows a revision made since, and upgrades it back', async () => {
      const { t, labels } = await watched();
      t.storage.store(NS, NAME, record(2, 'deployed', { ...labels, [RELEASE_LABELS.fingerprint]: 'by-hand' }));
      t.helm.release = { ...t.helm.release, revision: 3 };
      await t.reconcile();
      expect(t.storage.reads.length).toBeGreaterThan(0);
      expect(t.helm.methods()).toEqual(['install', 'upgrade']);
    });

    it('repairs nothing from a watch that lags: the storage is read before the first write', async () => {
      const { t, labels } = await watched();
      t.storage.watch = { kind: 'lagging', records: [record(1, 'deployed', labels)] };
      t.storage.store(NS, NAME, record(2, 'deployed', { ...labels, [RELEASE_LABELS.fingerprint]: 'by-hand' }));
      t.objects.drifted = 1;
      t.helm.release = { ...t.helm.release, revision: 3 };
      await t.reconcile();
      expect(t.objects.written).toBe(0);
      expect(t.helm.methods()).toEqual(['install', 'upgrade']);
    });

    it('repairs drift the storage confirms, with one read', async () => {
      const { t } = await watched();
      t.objects.drifted = 2;
      await t.reconcile();
      expect(t.objects.written).toBe(2);
      expect(t.storage.reads).toEqual([`${NS}/${NAME}`]);
    });
  });

  describe('settled looks (ADR 0112)', () => {
    /** Installed, watched, every object cached, and found settled once: the next look compares versions. */
    async function settled(o: Parameters<typeof installed>[0] = {}) {
      const { t, edit, labels } = await watched(o);
      t.objects.versions = ['7'];
      await t.reconcile();
      /** What the next look did: CR reads, storage reads, calls on the objects, helm calls, CR writes. */
      const mark = () => ({
        crReads: t.crs.reads,
        storageReads: t.storage.reads.length,
        objects: t.objects.order.length,
        helm: t.helm.calls.length,
        writes: t.crs.writes.length,
      });
      let before = mark();
      const look = async (): Promise<{ result: Result; work: Record<string, number> }> => {
        before = mark();
        const result = await t.reconcile();
        const after = mark();
        const work = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - before[k as keyof typeof before]]));
        return { result, work };
      };
      return { t, edit, look, labels };
    }
    const NONE = { crReads: 0, storageReads: 0, objects: 0, helm: 0, writes: 0 };

    it('decides nothing again from unchanged inputs, and asks to look again after the period', async () => {
      const { look } = await settled();
      for (let i = 0; i < 3; i++) {
        const { result, work } = await look();
        expect(work).toEqual(NONE);
        expect(result.requeueAfterMs).toBeGreaterThanOrEqual(PERIOD_MS * 0.95);
        expect(result.requeueAfterMs).toBeLessThanOrEqual(PERIOD_MS * 1.05);
      }
    });

    it("keeps the CR's own reconcile-period", async () => {
      const { t, edit, look } = await settled();
      edit((cr) => {
        cr.metadata.annotations = { 'helm.sdk.operatorframework.io/reconcile-period': '2m' };
      });
      await t.reconcile();
      const { result, work } = await look();
      expect(work).toEqual(NONE);
      expect(result.requeueAfterMs).toBeGreaterThanOrEqual(120_000 * 0.95);
      expect(result.requeueAfterMs).toBeLessThanOrEqual(120_000 * 1.05);
    });

    type Settled = Awaited<ReturnType<typeof settled>>;
    const changes: [string, (s: Settled) => void][] = [
      [
        'the CR changed',
        (s) => {
          s.edit((cr) => {
            cr.spec = { replicas: 2 };
          });
        },
      ],
      [
        'an object changed',
        (s) => {
          s.t.objects.versions = ['8'];
        },
      ],
      [
        'an object is gone',
        (s) => {
          s.t.objects.versions = [''];
        },
      ],
      [
        'the dependents cache cannot answer',
        (s) => {
          s.t.objects.versions = undefined;
        },
      ],
      [
        'the storage watch cannot answer',
        (s) => {
          s.t.storage.watch = { kind: 'none' };
        },
      ],
      [
        'the storage was read since (a takeover)',
        (s) => {
          s.t.reconciler.resync();
        },
      ],
    ];
    it.each(changes)('looks in full when %s', async (_why, change) => {
      const s = await settled();
      change(s);
      const { work } = await s.look();
      expect(work.objects).toBeGreaterThan(0);
    });

    it('looks in full, and upgrades back, when the watch shows a revision made by hand', async () => {
      const { t, look, labels } = await settled();
      t.storage.store(NS, NAME, record(2, 'deployed', { ...labels, [RELEASE_LABELS.fingerprint]: 'by-hand' }));
      t.helm.release = { ...t.helm.release, revision: 3 };
      const { work } = await look();
      expect(work.helm).toBeGreaterThan(0);
      expect(t.helm.methods()).toEqual(['install', 'upgrade']);
    });

    it('waits for a helm process still running for the release, as a full look does', async () => {
      const { t, look } = await settled();
      t.helm.live.add(`${NS}/${NAME}`);
      const { result } = await look();
      // helm-busy: looked at again soon, not after the period.
      expect(result.requeueAfterMs).toBeLessThan(PERIOD_MS * 0.95);
    });

    it('never takes again a look that was not settled: objects not ready, drift repaired', async () => {
      const notReady = await settled();
      notReady.t.objects.ready = { status: 'False', reason: 'ResourcesNotReady', message: '1/2 ready', ready: 1, total: 2 };
      notReady.t.objects.versions = ['8'];
      await notReady.t.reconcile();
      expect((await notReady.look()).work.objects).toBeGreaterThan(0);

      const drifted = await settled();
      drifted.t.objects.drifted = 1;
      drifted.t.objects.versions = ['8'];
      await drifted.t.reconcile();
      expect(drifted.t.objects.written).toBe(1);
      drifted.t.objects.drifted = 0;
      expect((await drifted.look()).work.objects).toBeGreaterThan(0);
    });

    it('never takes a look again for a CR with values from Secrets or ConfigMaps, or a watch acting as a ServiceAccount', async () => {
      const fromSources = await settled();
      fromSources.edit((cr) => {
        cr.metadata.annotations = { 'helm.sdk.operatorframework.io/values-from': '[]' };
      });
      await fromSources.t.reconcile();
      expect((await fromSources.look()).work.objects).toBeGreaterThan(0);

      const asServiceAccount = await settled({ watch: { serviceAccountName: 'tenant-helm' }, reader: everyObject });
      expect(asServiceAccount.t.helm.methods()).toEqual(['install']);
      expect((await asServiceAccount.look()).work.objects).toBeGreaterThan(0);
    });
  });

  describe('a revision made outside the operator (ADR 0070)', () => {
    /** Installed; then revision 2 made by hand: helm carried the labels, fingerprint included, over to it. */
    const upgradedByHand = async (made: { valuesDigest?: string; chartVersion?: string }) => {
      const t = setup({ progressDelayMs: 0 });
      t.cr({ finalizers: [FINALIZER] });
      await t.reconcile();
      const labels = t.helm.callsOf('install')[0]?.labels;
      t.storage.set(NS, NAME, [record(1, 'superseded', labels), record(2, 'deployed', labels)]);
      t.helm.release = { ...t.helm.release, revision: 2, ...made };
      // What the install left remembered would answer until the next periodic reconcile.
      t.reconciler.resync();
      return t;
    };

    it('is upgraded back when helm stored it with other values, and a Warning says why', async () => {
      const t = await upgradedByHand({ valuesDigest: jsonDigest({ replicas: 3 }) });
      await t.reconcile();
      expect(t.helm.methods()).toEqual(['install', 'status', 'upgrade']);
      expect(t.helm.callsOf('upgrade')[0]?.values).toEqual({ replicas: 2 });
      expect(t.events).toContainEqual({
        type: 'Warning',
        reason: CHANGED_OUTSIDE_EVENT,
        message: expect.stringMatching(
          /^revision 2 was made outside the operator \(its values are not the ones this resource gives\)/,
        ) as string,
      });
      expect(await t.condition(ConditionType.Deployed)).toMatchObject({ status: 'True', reason: Reason.UpgradeSuccessful });
    });

    it('is upgraded back when made from another version of the chart', async () => {
      const t = await upgradedByHand({ valuesDigest: jsonDigest({ replicas: 2 }), chartVersion: '9.9.9' });
      await t.reconcile();
      expect(t.helm.methods()).toEqual(['install', 'status', 'upgrade']);
      expect(t.events).toContainEqual(
        expect.objectContaining({
          reason: CHANGED_OUTSIDE_EVENT,
          message: expect.stringContaining(`its chart is ${CHART.name} 9.9.9, not ${CHART.name} ${CHART.version}`) as string,
        }),
      );
    });

    it('is in sync when helm stored it with the desired values and chart (a restarted operator reads every release so)', async () => {
      const t = await upgradedByHand({ valuesDigest: jsonDigest({ replicas: 2 }) });
      await t.reconcile();
      await t.reconcile();
      expect(t.helm.methods()).toEqual(['install', 'status']);
      expect(t.events.filter((e) => e.type === 'Warning')).toEqual([]);
    });

    it('stops upgrading it back once the desired state has failed its retries', async () => {
      const t = await upgradedByHand({ valuesDigest: jsonDigest({ replicas: 3 }) });
      t.helm.fail('upgrade', new FakeHelmError('admission webhook denied'));
      for (let i = 0; i < 8; i++) await t.reconcile().catch(() => undefined);
      expect(t.helm.callsOf('upgrade')).toHaveLength(MAX_FAILED_ATTEMPTS);
      expect(await t.condition(ConditionType.Stalled)).toMatchObject({ status: 'True' });
    });
  });

  it('uninstalls a deleted CR, then removes its finalizer and forgets it', async () => {
    const t = setup({ progressDelayMs: 0 });
    t.cr({ finalizers: [FINALIZER], deleting: true });
    t.storage.set(NS, NAME, [record(1, 'deployed')]);
    expect(await t.reconcile()).toEqual({});
    expect(t.helm.callsOf('uninstall')).toEqual([expect.objectContaining({ release: NAME, namespace: NS })]);
    // Reconciling before helm; then, as only our finalizer held the CR, nothing more before it goes.
    expect(t.crs.writes).toEqual(['patchStatus', 'removeFinalizers']);
    expect(await t.crs.get(NS, NAME)).toBeUndefined();
    expect(t.forgotten).toEqual([`${NS}/${NAME}`]);
    expect(t.events).toContainEqual(expect.objectContaining({ type: 'Normal', reason: Reason.UninstallSuccessful }));
  });

  it('uninstalls a deleted CR without helm and without marking it Reconciling: the finalizer is the only write', async () => {
    const t = setup();
    t.cr({ finalizers: [FINALIZER], deleting: true });
    t.storage.set(NS, NAME, [record(1, 'deployed')]);
    await t.manifests.remember(NAME, 'uid-web', {
      namespace: NS,
      revision: 1,
      manifest: '---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n',
      deleteHooks: false,
    });
    expect(await t.reconcile()).toEqual({});
    expect(t.helm.calls).toEqual([]);
    expect(t.storage.deleted).toEqual([`${NS}/${NAME}@1`]);
    expect(t.crs.writes).toEqual(['removeFinalizers']);
    expect(await t.crs.get(NS, NAME)).toBeUndefined();
  });

  it('maps a failed install to ReleaseFailed, a counted attempt, a Warning and a retry', async () => {
    const t = setup();
    t.cr({ finalizers: [FINALIZER] });
    t.helm.fail('install', new FakeHelmError('chart exploded'));
    await expect(t.reconcile()).rejects.toBeInstanceOf(ReportedError);
    expect(await t.condition(ConditionType.ReleaseFailed)).toMatchObject({
      status: 'True',
      reason: Reason.InstallError,
      message: 'chart exploded',
    });
    expect((await t.status()).failedAttempts?.count).toBe(1);
    expect(t.events).toContainEqual({ type: 'Warning', reason: 'InstallFailed', message: 'chart exploded' });
  });

  // Which CR a Secret's change goes to is indexed from the CRs' events (src/operator/values-sources.ts).
  it('takes values from the referenced Secret, under the spec', async () => {
    const t = setup();
    t.valuesSources.objects.set('Secret/db', { data: { password: 's3cret' }, optedIn: true });
    t.cr({
      finalizers: [FINALIZER],
      annotations: { [VALUES_FROM_ANNOTATION]: '- {kind: Secret, name: db, key: password, targetPath: auth.password}' },
    });
    await t.reconcile();
    expect(t.helm.callsOf('install')[0]?.values).toEqual({ replicas: 2, auth: { password: 's3cret' } });
    expect(t.valuesSources.reads).toEqual(['Secret/db as operator']);
  });

  describe('events: all from the outcome, recorded on the way out', () => {
    const owned = (fingerprint: string): Record<string, string> => ({
      [RELEASE_LABELS.ownerKind]: OWNER_KIND,
      [RELEASE_LABELS.fingerprint]: fingerprint,
    });
    /** The events recorded while helm ran, as counts: none, as every event waits for the outcome. */
    const recordedDuringHelm = (t: ReturnType<typeof setup>): number[] => {
      const seen: number[] = [];
      t.helm.during = () => {
        seen.push(t.events.length);
      };
      return seen;
    };
    const reasons = (t: ReturnType<typeof setup>): string[] => t.events.map((e) => `${e.type} ${e.reason}`);

    it("an install: a bad annotation, the watch's overrides, then the install", async () => {
      const t = setup({ watch: { overrideValues: { 'image.tag': 'v2' } } });
      t.cr({ finalizers: [FINALIZER], annotations: { 'helm.sdk.operatorframework.io/upgrade-force': 'maybe' } });
      const during = recordedDuringHelm(t);
      await t.reconcile();
      expect(during).toEqual([0]);
      expect(reasons(t)).toEqual(['Warning InvalidAnnotation', 'Warning OverrideValuesInUse', `Normal ${Reason.InstallSuccessful}`]);
    });

    it('an unlock and the upgrade after it', async () => {
      const t = setup();
      t.cr({
        finalizers: [FINALIZER],
        status: { deployedRelease: { name: NAME, namespace: NS, revision: 1, chart: CHART.name, chartVersion: CHART.version } },
      });
      t.storage.set(NS, NAME, [record(1, 'deployed', owned('before')), record(2, 'pending-upgrade', owned('before'))]);
      t.helm.release = { ...t.helm.release, revision: 4 };
      const during = recordedDuringHelm(t);
      await t.reconcile();
      expect(t.helm.methods()).toEqual(['rollback', 'upgrade']);
      expect(during).toEqual([0, 0]);
      expect(reasons(t)).toEqual(['Warning ReleaseUnlocked', `Normal ${Reason.UpgradeSuccessful}`]);
    });

    it("a failed upgrade of the fleet: the rollback, the rollout's failure, then the upgrade's", async () => {
      const t = setup();
      t.cr({
        finalizers: [FINALIZER],
        status: { deployedRelease: { name: NAME, namespace: NS, revision: 1, chart: CHART.name, chartVersion: CHART.version } },
      });
      t.storage.set(NS, NAME, [record(1, 'deployed', owned('before'))]);
      t.helm.fail('upgrade', new FakeHelmError('upgrade: field is immutable'));
      t.helm.during = (call) => {
        // What a failed helm upgrade leaves: a failed revision 2.
        if (call.method === 'upgrade')
          t.storage.set(NS, NAME, [record(1, 'deployed', owned('before')), record(2, 'failed', owned('after'))]);
      };
      await expect(t.reconcile()).rejects.toBeInstanceOf(ReportedError);
      expect(t.helm.methods()).toEqual(['upgrade', 'rollback']);
      expect(reasons(t)).toEqual(['Warning RollbackSuccessful', 'Warning RolloutFailed', 'Warning UpgradeFailed']);
    });

    it('an uninstall', async () => {
      const t = setup();
      t.cr({ finalizers: [FINALIZER], deleting: true });
      t.storage.set(NS, NAME, [record(1, 'deployed')]);
      const during = recordedDuringHelm(t);
      await t.reconcile();
      expect(during).toEqual([0]);
      expect(reasons(t)).toEqual([`Normal ${Reason.UninstallSuccessful}`]);
    });

    it("a paused CR with a bad annotation: only the annotation's", async () => {
      const t = setup();
      t.cr({
        finalizers: [FINALIZER],
        annotations: { 'helm.sdk.operatorframework.io/paused': 'true', 'helm.sdk.operatorframework.io/rollback-force': 'perhaps' },
      });
      await t.reconcile();
      expect(t.helm.calls).toEqual([]);
      expect(reasons(t)).toEqual(['Warning InvalidAnnotation']);
    });
  });
});
