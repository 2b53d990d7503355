/**
 * Reads the state of a CR's release: helm's storage records, and for a release that carries no
 * owner label (installed by hand, or by operator-sdk), whether it runs our chart and this CR may
 * adopt it (adoption.ts): only when the watch says so or the release was made for this very CR.
 */
import { isDeepStrictEqual } from 'node:util';
import { adoptionGround } from '../decide/adoption.js';
import { PERIOD_JITTER } from '../decide/period.js';
import { ReleaseChangedError } from '../objects/release-object-types.js';
import type { HelmPort } from './helm-port.js';
import type { KeptRevision, ManifestsPort, ReleaseStoragePort } from './ports.js';
import { ownerKindLabel } from '../decide/release-name.js';
import { determineReleaseState, latestRecord, type ObservedState, type ReleaseRecord } from '../decide/state.js';

export interface ReleaseOwner {
  readonly chartName: string;
  /** This watch's owner-kind label value. */
  readonly ownerKind: string;
  /** The watch's `adoptReleases`: releases of its chart that this operator did not make are adopted. */
  readonly adoptReleases: boolean;
}

/** The owner of a watch's releases. */
export function releaseOwnerOf(watch: {
  readonly kind: string;
  readonly group: string;
  readonly chart: { readonly name: string };
  readonly adoptReleases?: boolean;
}): ReleaseOwner {
  return { chartName: watch.chart.name, ownerKind: ownerKindLabel(watch.kind, watch.group), adoptReleases: watch.adoptReleases === true };
}

/** `uid`: the CR instance's. `stored`: the release's records when the caller has read them already. */
export async function observeRelease(
  ports: { readonly helm: Pick<HelmPort, 'status'>; readonly storage: Pick<ReleaseStoragePort, 'records'> },
  owner: ReleaseOwner,
  at: { readonly namespace: string; readonly name: string; readonly uid: string; readonly fingerprint: string },
  stored?: readonly ReleaseRecord[],
): Promise<ObservedState> {
  const records = stored ?? (await ports.storage.records(at.namespace, at.name));
  const state = determineReleaseState(records, { fingerprint: at.fingerprint, ownerKind: owner.ownerKind });
  if (state.kind !== 'Unmanaged') return state;
  const release = await ports.helm.status(at.name, at.namespace);
  if (release === undefined) return { kind: 'Absent' };
  if (release.chart.name !== owner.chartName) return { kind: 'Conflict', ownerKind: `chart ${release.chart.name}` };
  const ground = adoptionGround({ storageOwnerUids: state.latest.ownerUids ?? [], manifest: release.manifest }, at, owner);
  return ground === undefined
    ? { kind: 'NotOwned', chart: `${release.chart.name}-${release.chart.version}` }
    : { kind: 'OutOfSync', latest: state.latest, adopted: ground };
}

/**
 * Whether the release of this name is ours to uninstall for the CR instance `uid`: never another
 * kind's, never one this operator did not make and may not adopt, never one already gone.
 */
export async function ownsRelease(
  ports: Parameters<typeof observeRelease>[0],
  owner: ReleaseOwner,
  at: { readonly namespace: string; readonly name: string; readonly uid: string },
  stored?: readonly ReleaseRecord[],
): Promise<boolean> {
  const state = await observeRelease(ports, owner, { ...at, fingerprint: '' }, stored);
  return state.kind !== 'Conflict' && state.kind !== 'NotOwned' && state.kind !== 'Absent';
}

/**
 * The release's records for deciding its state. When the reconciler last saw revision N deployed
 * (its manifest is kept) and N is still the latest and deployed, that record alone: the state it
 * decides is the one the whole history gives, read with two GETs instead of a LIST of the
 * namespace's Secrets (see ReleaseStoragePort.deployed). Else every record.
 */
export async function readRecords(
  ports: { readonly storage: ReleaseStoragePort; readonly manifests: Pick<ManifestsPort, 'revision'> },
  namespace: string,
  name: string,
): Promise<ReleaseRecord[]> {
  const known = ports.manifests.revision(namespace, name);
  const latest = known === undefined ? undefined : await ports.storage.deployed(namespace, name, known);
  return latest ?? (await ports.storage.records(namespace, name));
}

/**
 * The longest a revision this process saw latest and deployed is taken as still so without reading
 * the storage (ADR 0069): the reconciles a release's own objects bring while they become ready
 * (a Deployment's status moves several times; under load they wait behind a converge's installs)
 * report readiness from memory. Anything else they would do reads the storage first, so what is
 * remembered only ever delays noticing a change made by hand that left the objects as they were.
 */
export const RECORDS_REMEMBERED_MS = 60_000;

/**
 * Pure: how long records are remembered for a CR whose reconcile period is `periodMs` (0: none).
 * Shorter than the period by its jitter, so every periodic reconcile reads the storage, as before.
 */
export function recordsRememberedMs(periodMs: number): number {
  return periodMs > 0 ? Math.min(RECORDS_REMEMBERED_MS, Math.floor(periodMs * (1 - PERIOD_JITTER))) : RECORDS_REMEMBERED_MS;
}

/** Pure: the kept revision's record, when it was confirmed less than `forMs` before `nowMs`; else undefined (read them). */
export function rememberedRecords(
  kept: Pick<KeptRevision, 'confirmed'> | undefined,
  nowMs: number,
  forMs: number,
): ReleaseRecord[] | undefined {
  const confirmed = kept?.confirmed;
  if (confirmed === undefined) return undefined;
  const age = nowMs - confirmed.atMs;
  return age >= 0 && age < forMs ? [confirmed.record] : undefined;
}

/**
 * The kept revision's record as a live watch of the storage shows it, still the latest and
 * deployed (ADR 0111); undefined when the port has no watch, none covers the namespace, or it shows
 * anything else (read the storage then). Taken as remembered records are: what the watch says is
 * only as fresh as its last event, so it may find the release in sync, and anything more reads.
 */
export function watchedRecords(
  storage: Pick<ReleaseStoragePort, 'watched'>,
  namespace: string,
  name: string,
  kept: Pick<KeptRevision, 'revision'> | undefined,
): ReleaseRecord[] | undefined {
  if (kept === undefined || storage.watched === undefined) return undefined;
  const record = storage.watched(namespace, name, kept.revision);
  return record === undefined ? undefined : [record];
}

/**
 * Pure: whether `records` still show `remembered` as the latest revision, deployed, with the same
 * labels: a release uninstalled and installed again by hand, or by another kind's CR of the same
 * name, starts again at revision 1 with its own labels.
 */
export function stillDeployed(records: readonly ReleaseRecord[], remembered: ReleaseRecord): boolean {
  const latest = latestRecord(records);
  return latest?.revision === remembered.revision && latest.status === 'deployed' && isDeepStrictEqual(latest.labels, remembered.labels);
}

/**
 * A check that `remembered` is still the release's latest and deployed revision (stillDeployed),
 * read once however often it is awaited; it throws ReleaseChangedError when it is not. What a
 * reconcile that went on from remembered records awaits before its first write.
 */
export function confirmedOnce(
  read: () => Promise<readonly ReleaseRecord[]>,
  release: string,
  remembered: ReleaseRecord,
): () => Promise<void> {
  let confirmed: Promise<void> | undefined;
  return () =>
    (confirmed ??= read().then((records) => {
      if (!stillDeployed(records, remembered))
        throw new ReleaseChangedError(
          `revision ${remembered.revision} of release ${release} is no longer its latest deployed revision`,
          records,
        );
    }));
}
