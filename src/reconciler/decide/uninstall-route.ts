/**
 * Pure: whether a deleted CR's release may be uninstalled by the operator itself instead of by a
 * `helm uninstall` process (ADR 0066): the same deletes helm would make (each object of the latest
 * revision with background propagation, except those helm keeps, then every storage Secret), made
 * with the operator's own client, whose discovery is warm. Only where this process knows exactly
 * what helm would do: anything unknown, or anything helm does besides those deletes (hooks), goes
 * to helm.
 */
import type { KeptRevision } from '../core/ports.js';
import type { DesiredObject } from '../objects/release-object-types.js';
import { latestRecord, type ReleaseRecord } from './state.js';

const RESOURCE_POLICY = 'helm.sh/resource-policy';
/** Release states of an operation still in flight, which helm's uninstall handles. */
const IN_FLIGHT: ReadonlySet<string> = new Set(['pending-install', 'pending-upgrade', 'pending-rollback', 'uninstalling']);

export type UninstallRoute =
  | { readonly by: 'operator'; readonly objects: readonly DesiredObject[]; readonly revisions: readonly number[] }
  | { readonly by: 'helm'; readonly because: string };

export interface RouteInput {
  /** The watch acts as a ServiceAccount of its own: every change goes through helm as that user. */
  readonly impersonates: boolean;
  /** A helm process of ours still works on the release. */
  readonly helmRunning: boolean;
  /** The release's stored revisions. */
  readonly records: readonly ReleaseRecord[];
  /** The revision this process last read from helm for this very CR instance. */
  readonly kept: KeptRevision | undefined;
}

/** helm's uninstall leaves an object annotated `helm.sh/resource-policy: keep`. */
const keptByHelm = (o: DesiredObject): boolean => o.rendered.annotations[RESOURCE_POLICY] === 'keep';

/** Which way the release goes; for the operator, what it deletes; for helm, why. */
export function uninstallRoute(i: RouteInput): UninstallRoute {
  const helm = (because: string): UninstallRoute => ({ by: 'helm', because });
  if (i.impersonates) return helm('the watch acts as a ServiceAccount of its own');
  if (i.helmRunning) return helm('a helm process still works on the release');
  if (i.kept === undefined) return helm('this process has not read the release');
  const latest = latestRecord(i.records);
  if (latest === undefined) return helm('the release has no stored revision');
  if (latest.revision !== i.kept.revision) return helm(`revision ${latest.revision} is newer than the one read (${i.kept.revision})`);
  if (IN_FLIGHT.has(latest.status)) return helm(`revision ${latest.revision} is ${latest.status}`);
  if (i.kept.deleteHooks !== false)
    return helm(i.kept.deleteHooks === true ? 'the release has delete hooks' : 'whether the release has delete hooks is not known');
  return { by: 'operator', objects: i.kept.objects.filter((o) => !keptByHelm(o)), revisions: i.records.map((r) => r.revision) };
}
