/**
 * Reads the state of a CR's release: helm's storage records, and for a release that carries no
 * owner label (installed by hand, or by operator-sdk), whether it runs our chart and this CR may
 * adopt it (adoption.ts): only when the watch says so or the release was made for this very CR.
 */
import { adoptionGround } from './adoption.js';
import type { HelmPort } from './helm-port.js';
import type { ManifestsPort, ReleaseStoragePort } from './ports.js';
import { ownerKindLabel } from './release-name.js';
import { determineReleaseState, type ObservedState, type ReleaseRecord } from './state.js';

export interface ReleaseOwner {
  readonly chartName: string;
  /** This watch's owner-kind label value. */
  readonly ownerKind: string;
  /** The watch's `adoptReleases`: releases of its chart that this operator did not make are adopted. */
  readonly adoptReleases: boolean;
}

/** The owner of a watch's releases. */
export function releaseOwnerOf(watch: { readonly kind: string; readonly group: string; readonly chart: { readonly name: string }; readonly adoptReleases?: boolean }): ReleaseOwner {
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
  return ground === undefined ? { kind: 'NotOwned', chart: `${release.chart.name}-${release.chart.version}` } : { kind: 'OutOfSync', latest: state.latest, adopted: ground };
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
