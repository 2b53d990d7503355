/**
 * What one reconcile works with: its CR as read (with the release's records read alongside when
 * they will be needed), the actions' view of it, the status writer, and the one event writer that
 * records the reconcile's events (the outcome's, and a failed status write's), redacted, about the
 * CR or the peer an event names.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Watch } from '../../config/watch.js';
import type { CachedCustomResource, CustomResource } from '../../k8s/custom-resources.js';
import type { EventRecorder } from '../../k8s/events.js';
import type { ReconcileContext, Request } from '../../runtime/reconcile.js';
import { FINALIZER, FINALIZERS } from './finalizers.js';
import type { ActionContext } from './action-context.js';
import { parseReleaseAnnotations } from '../decide/annotations.js';
import { isFirstInstall } from '../decide/first-install.js';
import type { HelmFailure, HelmPort } from './helm-port.js';
import { helmActingFor } from './helm-identity.js';
import { admit } from '../decide/next-action.js';
import { readRecords, rememberedRecords, watchedRecords } from './observe.js';
import type { CrEvent } from './outcome.js';
import { withPeriodFloor } from '../decide/period.js';
import type { CrdsPort, PlansPort, CustomResourcesPort, ManifestsPort, ReleaseObjectsPort, ReleaseStoragePort } from './ports.js';
import { Redactor } from '../status/redaction.js';
import type { ReleaseRecord } from '../decide/state.js';
import { readStatus, StatusDraft } from '../status/status.js';
import { StatusWriter } from './status-writer.js';

/** One reconcile: the actions' view of the CR, and what only the reconciler handles. */
export interface Reconcile {
  readonly cr: CustomResource;
  readonly ctx: ActionContext;
  readonly status: StatusWriter;
  /** The release's storage records this reconcile decides from (see readCR). */
  readonly records: ReleaseRecords;
  /** The one event writer: the summary's events, on the way out. */
  readonly record: (event: CrEvent) => void;
  /** When the rollout wants this CR looked at again (its health still undecided). */
  wakeMs?: number;
}

/** The records a reconcile decides from, and where they came from. */
export interface ReleaseRecords {
  /** Read from storage as the reconcile started, or now; or remembered. */
  readonly decide: () => Promise<ReleaseRecord[]>;
  /**
   * `decide` answers from this process's memory (observe.ts rememberedRecords): enough to report
   * readiness, never to act on; `read` gets them from storage.
   */
  readonly remembered: boolean;
  readonly read: () => Promise<ReleaseRecord[]>;
  /** When the reconcile began reading them (a confirmation is dated from then). */
  readonly sinceMs: number;
}

export interface ScopePorts {
  readonly watch: Watch;
  readonly crs: CustomResourcesPort;
  readonly helm: HelmPort;
  readonly storage: ReleaseStoragePort;
  readonly objects: ReleaseObjectsPort;
  readonly manifests: ManifestsPort;
  readonly crds?: CrdsPort;
  readonly plans?: PlansPort;
  readonly events: EventRecorder;
  readonly isNamespaced: (apiVersion: string, kind: string) => Promise<boolean>;
  readonly describeHelmError: (err: unknown) => HelmFailure;
  readonly now?: () => Date;
  readonly suppressOverrideValues?: boolean;
  readonly progressDelayMs?: number;
}

/**
 * The CR (undefined: gone), and the records of its release. A CR the controller's cache no longer
 * has is gone, as controller-runtime's cached client reads it. The CR is read at the version the
 * cache holds or later: the port answers that version from its own last read or write (ADR 0069).
 * For a CR not being deleted and holding our finalizer, which is reconciled from those records,
 * they are read alongside it (one round trip for both), or remembered when this process confirmed
 * them a moment ago (rememberedRecords) or a live watch of the storage shows them unchanged
 * (watchedRecords). A reconcile that ends before it needs them leaves that
 * read unawaited, so its rejection is marked handled here.
 */
export async function readCR(
  ports: Pick<ScopePorts, 'crs' | 'storage' | 'manifests'>,
  request: Request,
  cached: ReconcileContext['cached'],
  clock: { readonly nowMs: number; readonly rememberMs: number },
): Promise<{ cr: CustomResource | undefined; records: ReleaseRecords }> {
  const { nowMs } = clock;
  const { namespace, name } = request;
  const read = (): Promise<ReleaseRecord[]> => readRecords(ports, namespace, name);
  const fromStorage = (decide: () => Promise<ReleaseRecord[]>): ReleaseRecords => ({ decide, remembered: false, read, sinceMs: nowMs });
  const metadata = cached?.metadata;
  if (cached === undefined || metadata === undefined) return { cr: undefined, records: fromStorage(read) };
  const live = decidesFromRecords(cached);
  const remembered = live ? unread(ports, request, metadata.uid ?? '', clock) : undefined;
  const early = live && remembered === undefined ? read() : undefined;
  early?.catch(() => undefined);
  const cr = await ports.crs.get(namespace, name, metadata.resourceVersion);
  if (remembered !== undefined)
    return { cr, records: { decide: () => Promise.resolve(remembered), remembered: true, read, sinceMs: nowMs } };
  return { cr, records: fromStorage(early === undefined ? read : () => early) };
}

/**
 * The records of the kept revision when they need no read: remembered (confirmed a moment ago), or
 * shown unchanged by a live watch of the storage; undefined: read them.
 */
function unread(
  ports: Pick<ScopePorts, 'storage' | 'manifests'>,
  { namespace, name }: Request,
  uid: string,
  clock: { readonly nowMs: number; readonly rememberMs: number },
): ReleaseRecord[] | undefined {
  const kept = ports.manifests.kept(namespace, name, uid);
  return rememberedRecords(kept, clock.nowMs, clock.rememberMs) ?? watchedRecords(ports.storage, namespace, name, kept);
}

/** A live CR holding our finalizer is reconciled from its records; one about to be installed for the first time reads none (isFirstInstall). */
function decidesFromRecords(cached: KubernetesObject): boolean {
  const metadata = cached.metadata ?? {};
  return (
    metadata.deletionTimestamp === undefined &&
    (metadata.finalizers ?? []).includes(FINALIZER) &&
    !isFirstInstall(readStatus((cached as { status?: unknown }).status))
  );
}

/**
 * Pure: the CR as cached, when all its reconcile has to do is add our finalizer: a live CR without
 * it, not paused, nothing else holding it. That write needs the metadata alone, so the CR is not
 * read (its watch event brings the reconcile that reads it and installs); a CR that turns out to be
 * invalid gets the finalizer too, as operator-sdk's do, and lets it go when deleted (ADR 0068).
 */
export function finalizerFirst(
  request: Request,
  cached: ReconcileContext['cached'],
  helmRunning: boolean,
): CachedCustomResource | undefined {
  const metadata = cached?.metadata;
  if (cached === undefined || metadata === undefined) return undefined;
  const finalizers = metadata.finalizers ?? [];
  // The common case, every reconcile of an installed CR, decided before the annotations are parsed.
  if (finalizers.includes(FINALIZER)) return undefined;
  const gate = admit({
    helmRunning,
    deleting: metadata.deletionTimestamp !== undefined,
    finalizer: finalizers.some((f) => FINALIZERS.includes(f)),
    paused: parseReleaseAnnotations(metadata.annotations).paused,
  });
  if (gate !== 'reconcile') return undefined;
  // What the finalizer patch reads: where the CR is, and the list its JSON patch tests.
  const listed = metadata.finalizers === undefined ? {} : { finalizers: metadata.finalizers };
  return {
    apiVersion: cached.apiVersion ?? '',
    kind: cached.kind ?? '',
    metadata: { name: request.name, namespace: request.namespace, ...listed },
  };
}

/** `annotationFloorMs`: the shortest reconcile period the CR's annotation may ask for (period.ts). */
export function beginReconcile(
  ports: ScopePorts,
  cr: CustomResource,
  at: {
    request: Request;
    rc: ReconcileContext;
    records: ReleaseRecords;
    annotationFloorMs: number;
    /** What the draft carries on of the status it was read from (the rollout's, docs/adr/0101), and what it adds before each write. */
    sealing?: { readonly trust: (draft: StatusDraft, uid: string) => void; readonly seal: (draft: StatusDraft, uid: string) => void };
  },
): Reconcile {
  const { request, rc } = at;
  const { namespace, name } = request;
  const redactor = new Redactor();
  const redact = (text: string): string => redactor.text(text);
  const { helm, identity } = helmActingFor(ports.helm, ports.watch, request, redact);
  const draft = new StatusDraft(cr.status, ports.now, redact);
  const uid = cr.metadata.uid ?? '';
  at.sealing?.trust(draft, uid);
  const record = (e: CrEvent): void => {
    ports.events.record(e.about ?? cr, e.type, e.reason, redact(e.message));
  };
  const ctx: ActionContext = {
    namespace,
    name,
    uid,
    generation: cr.metadata.generation,
    annotations: withPeriodFloor(parseReleaseAnnotations(cr.metadata.annotations), at.annotationFloorMs),
    status: draft.current,
    signal: rc.signal,
    log: rc.log,
    redact,
    identity,
    helm,
    storage: ports.storage,
    objects: ports.objects,
    manifests: ports.manifests,
    ...(ports.crds === undefined ? {} : { crds: ports.crds }),
    ...(ports.plans === undefined ? {} : { plans: ports.plans }),
    watch: ports.watch,
    isNamespaced: ports.isNamespaced,
    describeHelmError: ports.describeHelmError,
    suppressOverrideValues: ports.suppressOverrideValues === true,
  };
  const delay = ports.progressDelayMs === undefined ? {} : { progressDelayMs: ports.progressDelayMs };
  const sealing = at.sealing;
  const beforeWrite =
    sealing === undefined
      ? {}
      : {
          beforeWrite: (d: StatusDraft): void => {
            sealing.seal(d, uid);
          },
        };
  const status = new StatusWriter({ crs: ports.crs, cr, ctx, draft, redactor, record, ...delay, ...beforeWrite });
  return { cr, ctx, status, records: at.records, record };
}
