/**
 * Uninstalls a deleted CR's release: where this process knows exactly what helm would delete, by
 * making those deletes itself (uninstall-route.ts, ADR 0066). Otherwise with helm, and then the
 * releases of other CRs of its namespace that are being
 * deleted too go in the same `helm uninstall a b c`: a helm process costs more than uninstalling a
 * small release, and `kubectl delete --all` deletes many at once. Which CRs a batch holds is
 * claimed per CR instance (UID) and forgotten when the batch ends (uninstall-claims.ts).
 */
import type { CachedCustomResource } from '../../k8s/custom-resources.js';
import { describeError } from '../../k8s/errors.js';
import { boundedRunner } from '../../runtime/bounded.js';
import { lostLeadership, type CacheReader } from '../../runtime/reconcile.js';
import type { Requeue } from '../../runtime/requeue-source.js';
import { parseReleaseAnnotations } from '../decide/annotations.js';
import { Reason } from '../status/conditions.js';
import type { InventoryEntry } from '../objects/inventory.js';
import { ownsRelease, type ReleaseOwner } from '../core/observe.js';
import { withEvents, type CrEvent, type Outcome } from '../core/outcome.js';
import type { CustomResourcesPort, ObjectDeleterPort, ObjectReaderPort, UninstalledBy } from '../core/ports.js';
import { releaseNameProblem } from '../decide/release-name.js';
import type { ReleaseRecord } from '../decide/state.js';
import { uninstallBatchSize } from '../decide/uninstall-batch-size.js';
import { UninstallClaims, type Batch } from '../core/uninstall-claims.js';
import { uninstallRoute } from '../decide/uninstall-route.js';
import { failureOf, type ActionContext } from '../core/action-context.js';
import { FINALIZERS } from '../core/finalizers.js';
import type { AroundHelm, UninstallPort } from '../core/uninstall-port.js';

/** Finalizer removals a batch does for its peers at a time (see #completePeer). */
const PEER_WRITES_IN_FLIGHT = 4;
/** Object deletes one uninstall without helm has in flight (helm makes them one at a time). */
const OBJECT_DELETES_IN_FLIGHT = 4;

/** The leader lease was lost during an uninstall without helm: the rest is the next leader's. */
class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

export interface UninstallerOptions {
  readonly owner: ReleaseOwner;
  readonly crs: Pick<CustomResourcesPort, 'removeFinalizers'>;
  /** Reads the release's objects (uninstall-wait) and deletes them (an uninstall without helm). */
  readonly objects: ObjectReaderPort & ObjectDeleterPort;
  /** The controller's cache of the kind, read-only: the namespace's CRs being deleted, the peers' metadata. */
  readonly cache: Pick<CacheReader, 'get' | 'list'>;
  /** Where a batch asks for its peers' reconciles when it ends (the controller's request source). */
  readonly requeue: Requeue;
  /** Drops what the reconciler keeps about a CR whose release is gone. */
  readonly forget: (namespace: string, name: string) => void;
  /** How many batches the namespace's deleted CRs are split into, to run side by side (the workers). Default 1. */
  readonly lanes?: number;
  /** Counts releases uninstalled, this CR's and a batch's peers', by how. */
  readonly onUninstalled?: (by: UninstalledBy, count: number) => void;
}

/** `by`: how a release that was found went. */
type Gone = { readonly found: false } | { readonly found: true; readonly by: UninstalledBy };

export class Uninstaller implements UninstallPort {
  readonly #claims = new UninstallClaims();

  constructor(private readonly o: UninstallerOptions) {}

  /** Whether a batched uninstall running now holds the release of `namespace/name`. */
  isHeld(namespace: string, name: string): boolean {
    return this.#claims.isHeld(`${namespace}/${name}`);
  }

  /**
   * Uninstalls the CR's release unless it is not ours or already gone; with uninstall-wait, then
   * waits for its objects. `uninstall-held` while another CR's batch holds it: that batch queues
   * this CR again when it ends, and this worker is free for other CRs meanwhile. The outcome
   * carries the events of the peers a batch finished, whatever became of this CR's own release.
   * `aroundHelm` wraps only what helm does (the reconciler shows it as Reconciling if it lasts): an
   * uninstall without helm is over in a few requests, and the CR goes with it.
   */
  async run(ctx: ActionContext, aroundHelm: AroundHelm = (helm) => helm()): Promise<Outcome> {
    if (this.isHeld(ctx.namespace, ctx.name)) return { kind: 'uninstall-held' };
    const peers: CrEvent[] = [];
    const gone = await this.#claims.finalizing(`${ctx.namespace}/${ctx.name}`, async (): Promise<Gone | Outcome> => {
      const records = await ctx.storage.records(ctx.namespace, ctx.name);
      // A release this CR never owned (ADR 0042) is left as it is: the finalizer just goes.
      if (!(await ownsRelease(ctx, this.o.owner, ctx, records))) return { found: false };
      const direct = await this.#uninstallDirectly(ctx, records);
      if (direct !== undefined) return direct;
      return aroundHelm(() => this.#uninstall(ctx, peers));
    });
    if ('kind' in gone) return withEvents(gone, peers);
    if (gone.found) this.o.onUninstalled?.(gone.by, 1);
    const remaining = ctx.annotations.uninstallWait ? await this.#remaining(ctx.status.inventory ?? []) : [];
    return withEvents({ kind: 'uninstalled', found: gone.found, remaining }, peers);
  }

  /**
   * Uninstalls the release without helm where this process knows exactly what helm would delete
   * (uninstall-route.ts, ADR 0066): each object, then the storage, with the operator's own client.
   * undefined when helm must do it, or finish it: an object whose delete fails for any reason but
   * "already gone" leaves the rest to helm, which skips what is gone.
   */
  async #uninstallDirectly(ctx: ActionContext, records: readonly ReleaseRecord[]): Promise<Gone | Outcome | undefined> {
    const route = uninstallRoute({
      impersonates: ctx.identity !== undefined,
      helmRunning: ctx.helm.running(ctx.name, ctx.namespace),
      records,
      kept: ctx.manifests.kept(ctx.namespace, ctx.name, ctx.uid),
    });
    if (route.by === 'helm') {
      ctx.log.debug({ because: route.because }, 'Uninstalling with helm');
      return undefined;
    }
    // Asked before each write, as helm's runner asks before a writer: another replica may own the name now.
    const fenced = (): void => {
      if (!ctx.helm.mayChangeReleases() || ctx.signal.aborted) throw new LeaseLostError();
    };
    const gate = boundedRunner(OBJECT_DELETES_IN_FLIGHT);
    try {
      await Promise.all(
        route.objects.map(async (o) =>
          gate(async () => {
            fenced();
            await this.o.objects.delete(o.entry);
          }),
        ),
      );
    } catch (err) {
      if (err instanceof LeaseLostError || ctx.signal.aborted) return { kind: 'cancelled', cause: err };
      ctx.log.info({ error: ctx.redact(describeError(err)) }, 'Deleting the release objects failed; uninstalling with helm');
      return undefined;
    }
    try {
      fenced();
      await ctx.storage.deleteRevisions(ctx.namespace, ctx.name, route.revisions);
    } catch (err) {
      if (err instanceof LeaseLostError) return { kind: 'cancelled', cause: err };
      return failureOf(ctx, err, { reason: Reason.UninstallError, event: 'ReleaseOperationFailed' });
    }
    ctx.log.debug({ objects: route.objects.length, revisions: route.revisions.length }, 'Uninstalled the release without helm');
    return { found: true, by: 'operator' };
  }

  /**
   * Uninstalls this CR's release, and with it the releases of the other CRs of its namespace that
   * are being deleted (from the controller's cache: finalizer still ours, release ours, no
   * finalizer running for them). Each of those is finished as soon as helm reports its release
   * gone (see #completePeer). When the batch fails (helm 4 goes on past a failed release, helm 3
   * stops), this CR's release is uninstalled alone, with its own error, and every peer whose
   * release is still there does its own in its reconcile.
   */
  async #uninstall(ctx: ActionContext, peerEvents: CrEvent[]): Promise<Gone | Outcome> {
    const batch = this.#claimPeers(ctx);
    try {
      return await this.#uninstallWith(ctx, batch, peerEvents);
    } finally {
      // Whatever ended this reconcile, no peer waits forever and no claim outlives the batch; each
      // peer still here is reconciled again and finds its release as it is.
      for (const name of batch.end()) this.o.requeue.request({ namespace: ctx.namespace, name });
    }
  }

  async #uninstallWith(ctx: ActionContext, batch: Batch, peerEvents: CrEvent[]): Promise<Gone | Outcome> {
    const peers = await this.#ownedPeers(ctx, batch);
    const single = async (): Promise<Gone | Outcome> => {
      try {
        const { found } = await ctx.helm.uninstall({ release: ctx.name, namespace: ctx.namespace, signal: ctx.signal });
        return found ? { found, by: 'helm' } : { found };
      } catch (err) {
        return failureOf(ctx, err, { reason: Reason.UninstallError, event: 'ReleaseOperationFailed' });
      }
    };
    if (peers.length === 0) return single();
    const finishing = new Map<string, Promise<void>>();
    const gate = boundedRunner(PEER_WRITES_IN_FLIGHT);
    const finish = (name: string): void => {
      if (peers.includes(name) && !finishing.has(name))
        finishing.set(
          name,
          gate(() => this.#completePeer(ctx, name, { batch, events: peerEvents })),
        );
    };
    const ok = await this.#batchUninstall(ctx, peers, finish);
    // After a success every peer's release is gone, whether or not helm's output said so.
    if (ok) peers.forEach(finish);
    await Promise.all(finishing.values());
    if (ok) return { found: true, by: 'helm' };
    // This release was ours when the batch started: gone now, by the batch or by this call.
    const alone = await single();
    return 'kind' in alone ? alone : { found: true, by: 'helm' };
  }

  /** `helm uninstall` of this CR's release and `peers`; false when any of them may still be there. */
  async #batchUninstall(ctx: ActionContext, peers: readonly string[], onUninstalled: (release: string) => void): Promise<boolean> {
    try {
      // found: false means this release vanished meanwhile, and helm 3 then stopped before the others.
      return (await ctx.helm.uninstall({ release: ctx.name, also: peers, namespace: ctx.namespace, signal: ctx.signal, onUninstalled }))
        .found;
    } catch (err) {
      ctx.log.info(
        { releases: [ctx.name, ...peers], error: ctx.redact(ctx.describeHelmError(err).summary) },
        'Batched uninstall failed; uninstalling one by one',
      );
      return false;
    }
  }

  /**
   * Those CRs of the batch whose releases are there and ours, each for the very instance the batch
   * claimed (a release may be ours for one CR's UID only): one storage read for all.
   */
  async #ownedPeers(ctx: ActionContext, batch: Batch): Promise<string[]> {
    const { names } = batch;
    if (names.length === 0) return [];
    const stored = await ctx.storage.recordsOf(ctx.namespace, names);
    const owned: string[] = [];
    for (const name of names) {
      const uid = (this.o.cache.get(ctx.namespace, name) as CachedCustomResource | undefined)?.metadata.uid;
      if (uid === undefined || !batch.holds(name, uid)) continue;
      if (await ownsRelease(ctx, this.o.owner, { namespace: ctx.namespace, name, uid }, stored.get(name) ?? [])) owned.push(name);
    }
    return owned;
  }

  /**
   * For a peer whose release the batch uninstalled, notes its event and does what its own
   * reconcile would do next, from the cache and without reading it again: removes the finalizer.
   * That only where nobody reads a status afterwards (no other finalizer, no uninstall-wait); the
   * others, and any whose write fails, are left to their own reconcile after the batch, which
   * finds the release gone in storage (the claim keeps it from running before the batch ends).
   */
  async #completePeer(ctx: ActionContext, name: string, of: { readonly batch: Batch; readonly events: CrEvent[] }): Promise<void> {
    const { batch, events } = of;
    const cr = this.o.cache.get(ctx.namespace, name) as CachedCustomResource | undefined;
    // Only the instance the batch claimed: another CR that took the name has a release of its own.
    if (cr !== undefined && batch.holds(name, cr.metadata.uid) && !lostLeadership(ctx.signal)) {
      events.push({ type: 'Normal', reason: Reason.UninstallSuccessful, message: `Uninstalled release ${name}`, about: cr });
      this.o.onUninstalled?.('helm', 1);
      const finalizers = cr.metadata.finalizers ?? [];
      if (finalizers.every((f) => FINALIZERS.includes(f)) && !parseReleaseAnnotations(cr.metadata.annotations).uninstallWait) {
        try {
          await this.o.crs.removeFinalizers(cr, FINALIZERS);
          this.o.forget(ctx.namespace, name);
        } catch (err) {
          ctx.log.info(
            { peer: name, error: describeError(err) },
            'Could not finish a batched uninstall for its CR; its own reconcile will',
          );
        }
      }
    }
  }

  /**
   * Claims, synchronously, the other CRs of the namespace whose releases #uninstall may take
   * along: their reconciles wait for the batch instead of running helm alongside. A release that
   * a helm process of ours still works on is left to its own CR, which waits for it (ADR 0036).
   */
  #claimPeers(ctx: ActionContext): Batch {
    const batch = this.#claims.begin(ctx.namespace);
    const eligible = this.o.cache.list(ctx.namespace).flatMap((cr) => this.#peer(ctx, cr.metadata ?? {}));
    const size = uninstallBatchSize(eligible.length + 1, this.o.lanes ?? 1);
    for (const { name, uid } of eligible) {
      if (batch.names.length >= size - 1) break;
      batch.claim(name, uid);
    }
    return batch;
  }

  /** `[the CR]` when its release may join this CR's batch, else `[]`. */
  #peer(
    ctx: ActionContext,
    meta: { name?: string; uid?: string; deletionTimestamp?: unknown; finalizers?: string[] },
  ): { name: string; uid: string }[] {
    const { name, uid, deletionTimestamp, finalizers } = meta;
    const eligible =
      name !== undefined &&
      name !== ctx.name &&
      uid !== undefined &&
      deletionTimestamp !== undefined &&
      (finalizers ?? []).some((f) => FINALIZERS.includes(f)) &&
      releaseNameProblem(name) === undefined &&
      !this.isHeld(ctx.namespace, name) &&
      !ctx.helm.running(name, ctx.namespace);
    return eligible ? [{ name, uid }] : [];
  }

  /** The inventory objects that still exist, as `Kind/name`. */
  async #remaining(inventory: readonly InventoryEntry[]): Promise<string[]> {
    const left: string[] = [];
    for (const e of inventory) if ((await this.o.objects.get(e)) !== undefined) left.push(`${e.kind}/${e.name}`);
    return left;
  }
}
