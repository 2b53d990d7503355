/**
 * Pure: whether a deleted CR's release may be uninstalled by the garbage collector instead of by
 * helm (ADR 0066). Its objects are rendered owned by the CR (ADR 0060), so once the CR is gone the
 * garbage collector deletes every one that only the CR owns, exactly what `helm uninstall` would
 * delete, and the uninstall itself is only helm's storage: no helm process, no request per object.
 * Only where nothing else would differ from helm's uninstall; anything unknown goes to helm.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KeptRevision } from './ports.js';
import type { DesiredObject } from './release-object-types.js';
import type { ReleaseRecord } from './state.js';

/** Finalizers that change nothing about what the garbage collector deletes once the CR is gone. */
const FOREGROUND_DELETION = 'foregroundDeletion';
const RESOURCE_POLICY = 'helm.sh/resource-policy';
/** Release states helm's uninstall handles that a storage delete would not (an operation still in flight). */
const IN_FLIGHT: ReadonlySet<string> = new Set(['pending-install', 'pending-upgrade', 'pending-rollback', 'uninstalling']);

export type UninstallRoute = { readonly by: 'collector'; readonly revisions: readonly number[] } | { readonly by: 'helm'; readonly because: string };

export interface RouteInput {
  readonly cr: { readonly namespace: string; readonly finalizers: readonly string[] };
  /** This operator's own finalizers (the CR's uninstall finalizer and its legacy name). */
  readonly ownFinalizers: readonly string[];
  readonly uninstallWait: boolean;
  /** The watch acts as a ServiceAccount of its own: every write goes through helm as that user. */
  readonly impersonates: boolean;
  /** The release's stored revisions. */
  readonly records: readonly ReleaseRecord[];
  /** The revision this process last read from helm for this very CR instance. */
  readonly kept: KeptRevision | undefined;
}

const kept = (o: DesiredObject): boolean => o.rendered.annotations[RESOURCE_POLICY] === 'keep';

/** Which way the release goes, and for helm why: every condition is one helm's uninstall would behave differently under. */
export function uninstallRoute(i: RouteInput): UninstallRoute {
  const helm = (because: string): UninstallRoute => ({ by: 'helm', because });
  if (i.uninstallWait) return helm('uninstall-wait reports the objects left, which helm deletes before it returns');
  if (i.impersonates) return helm('the watch acts as a ServiceAccount of its own');
  const other = i.cr.finalizers.filter((f) => !i.ownFinalizers.includes(f) && f !== FOREGROUND_DELETION);
  // `orphan` (kubectl delete --cascade=orphan) would keep every object; any other keeps the CR, and so its objects, alive.
  if (other.length > 0) return helm(`the CR has another finalizer (${other.join(', ')})`);
  if (i.kept === undefined) return helm('this process has not read the release');
  const latest = i.records.reduce<ReleaseRecord | undefined>((a, r) => (a === undefined || r.revision > a.revision ? r : a), undefined);
  if (latest === undefined) return helm('the release has no stored revision');
  if (latest.revision !== i.kept.revision) return helm(`revision ${latest.revision} is newer than the one read (${i.kept.revision})`);
  if (IN_FLIGHT.has(latest.status)) return helm(`revision ${latest.revision} is ${latest.status}`);
  if (i.kept.deleteHooks !== false) return helm(i.kept.deleteHooks === true ? 'the release has delete hooks' : 'whether the release has delete hooks is not known');
  const unowned = i.kept.objects.find((o) => !kept(o) && o.entry.namespace !== i.cr.namespace);
  if (unowned !== undefined) return helm(`${unowned.entry.kind}/${unowned.entry.name} is outside the CR's namespace (no owner reference)`);
  return { by: 'collector', revisions: i.records.map((r) => r.revision) };
}

/**
 * Pure: why the live objects (undefined: gone) of a revision routed to the collector would not all
 * be deleted as helm would: an object helm deletes must name the CR instance `uid` as its only
 * owner (the collector keeps an object while any other owner lives), and one helm keeps must not
 * name it at all. undefined when they would.
 */
export function liveOwnershipProblem(objects: readonly DesiredObject[], live: readonly (KubernetesObject | undefined)[], uid: string): string | undefined {
  for (const [i, o] of objects.entries()) {
    const refs = live[i]?.metadata?.ownerReferences;
    if (live[i] === undefined) continue;
    const ours = (refs ?? []).filter((r) => r.uid === uid).length;
    const what = `${o.entry.kind}/${o.entry.name}`;
    if (kept(o)) {
      if (ours > 0) return `${what} is kept by helm but owned by the CR`;
    } else if (ours === 0 || (refs ?? []).length > ours) {
      return ours === 0 ? `${what} is not owned by the CR` : `${what} has another owner`;
    }
  }
  return undefined;
}
