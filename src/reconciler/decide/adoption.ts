/**
 * Whether a CR may take over a release of its name that this operator did not make (no owner
 * label: installed by hand, or by operator-sdk's Helm operator before a migration). Never from the
 * name alone: a tenant who may create CRs must not take over, upgrade with their values and
 * finally uninstall an administrator's release by naming a CR after it (ADR 0042).
 */
import { parseManifest, renderedBody } from '../objects/inventory.js';
import { isPlainObject } from '../../util/plain-object.js';

/** Why a release is handed to the CR. */
export type AdoptionGround =
  /** The watch says so (`adoptReleases: true`): the migration switch from operator-sdk. */
  | 'watch'
  /**
   * The release was made for this very CR instance: its storage Secret (operator-sdk) or an
   * object of its stored manifest (helm-operator-plugins' post-renderer) names the CR's UID as
   * owner. Writing either takes write access to the release's storage Secret, which is already
   * enough to forge the owner label this operator trusts.
   */
  | 'owner-reference';

export interface UnmanagedRelease {
  /** UIDs the latest revision's storage Secret names as owners. */
  readonly storageOwnerUids: readonly string[];
  /** The latest revision's rendered manifest, as helm stored it. */
  readonly manifest: string;
}

/**
 * Pure: on what ground the CR of UID `uid` may adopt `release` (which runs the watch's chart);
 * undefined when it may not.
 */
export function adoptionGround(
  release: UnmanagedRelease,
  cr: { readonly uid: string },
  watch: { readonly adoptReleases: boolean },
): AdoptionGround | undefined {
  if (watch.adoptReleases) return 'watch';
  if (cr.uid === '') return undefined;
  if (release.storageOwnerUids.includes(cr.uid) || manifestOwnerUids(release.manifest).has(cr.uid)) return 'owner-reference';
  return undefined;
}

/** Pure: the owner UIDs the objects of a manifest name; none when it cannot be read. */
export function manifestOwnerUids(manifest: string): Set<string> {
  const uids = new Set<string>();
  let objects: ReturnType<typeof parseManifest>;
  try {
    objects = parseManifest(manifest);
  } catch {
    // Not evidence of anything: the release is then simply not proven to be this CR's.
    return uids;
  }
  for (const o of objects) {
    const meta = renderedBody(o).metadata;
    const refs = isPlainObject(meta) && Array.isArray(meta.ownerReferences) ? (meta.ownerReferences as unknown[]) : [];
    for (const ref of refs) if (isPlainObject(ref) && typeof ref.uid === 'string' && ref.uid !== '') uids.add(ref.uid);
  }
  return uids;
}

/** The CR's status message for a release it may not adopt: whose it is and what to do. */
export function notOwnedMessage(at: {
  readonly namespace: string;
  readonly name: string;
  readonly kind: string;
  readonly chart: string;
}): string {
  return (
    `release "${at.name}" in namespace "${at.namespace}" (chart ${at.chart}) was not installed by this operator, so it is left as it is: ` +
    `not upgraded, and not uninstalled when this ${at.kind} is deleted. ` +
    `To hand releases like it to ${at.kind} resources (a migration from operator-sdk's Helm operator), set adoptReleases: true on the ${at.kind} watch in watches.yaml; ` +
    `otherwise rename this ${at.kind} or uninstall the release`
  );
}

/** The event that records a takeover: who allowed it. */
export function adoptingMessage(release: string, ground: AdoptionGround): string {
  const why = ground === 'watch' ? 'the watch sets adoptReleases: true' : 'its storage or objects name this resource as their owner';
  return `Adopting release ${release}, which this operator did not install: ${why}`;
}
