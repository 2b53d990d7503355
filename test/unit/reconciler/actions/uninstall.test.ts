import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { FINALIZER, FINALIZERS, LEGACY_FINALIZER } from '../../../../src/reconciler/core/finalizers.js';
import { Uninstaller } from '../../../../src/reconciler/actions/uninstall.js';
import { Reason } from '../../../../src/reconciler/status/conditions.js';
import type { InventoryEntry } from '../../../../src/reconciler/objects/inventory.js';
import type { Outcome } from '../../../../src/reconciler/core/outcome.js';
import { RELEASE_LABELS } from '../../../../src/reconciler/decide/state.js';
import { uninstallBatchSize } from '../../../../src/reconciler/decide/uninstall-batch-size.js';
import { LeadershipLostCancellation } from '../../../../src/runtime/reconcile.js';
import { CHART, FakeKind, FakeHelmError, harness, NAME, NAMESPACE, OWNER_KIND, record, UID, type Harness } from './fakes.js';

const UNINSTALL_WAIT = 'helm.sdk.operatorframework.io/uninstall-wait';
const OTHERS = { [RELEASE_LABELS.ownerKind]: 'Redis.other.io' };

interface CrOptions {
  readonly uid?: string;
  readonly deleting?: boolean;
  readonly finalizers?: readonly string[];
  readonly annotations?: Record<string, string>;
}

/** A CR of the kind as the controller's cache keeps it. */
const cr = (name: string, o: CrOptions = {}): KubernetesObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Nginx',
  metadata: {
    name,
    namespace: NAMESPACE,
    uid: o.uid ?? `uid-${name}`,
    ...(o.deleting === false ? {} : { deletionTimestamp: new Date('2025-01-01T00:00:00Z') }),
    finalizers: [...(o.finalizers ?? [FINALIZER])],
    ...(o.annotations === undefined ? {} : { annotations: o.annotations }),
  },
});

interface Setup {
  readonly h: Harness;
  /** The controller's cache of the kind, and the requests the batches made. */
  readonly kind: FakeKind;
  /** The Uninstaller, the peer events its outcomes carry moved to `peerEvents`. */
  readonly uninstaller: Pick<Uninstaller, 'run' | 'isHeld'>;
  /** Finalizer removals, as `name: finalizers`. */
  readonly removed: string[];
  /** Events the outcomes carry about peers, as `name type reason: message`. */
  readonly peerEvents: string[];
  readonly forgotten: string[];
  /** `Kind/name` of the release objects that still exist. */
  readonly live: Set<string>;
  /** Makes removeFinalizers fail for these CRs. */
  readonly failRemoval: Set<string>;
  /** What onUninstalled counted, as `by count`. */
  readonly counted: string[];
  /** Objects deleted without helm, as `Kind/name`. */
  readonly deletes: string[];
  /** Makes the delete of these objects (`Kind/name`) fail. */
  readonly failDelete: Set<string>;
}

function setup(
  o: { annotations?: Record<string, string>; inventory?: InventoryEntry[]; adoptReleases?: boolean; lanes?: number } = {},
): Setup {
  const h = harness({
    ...(o.annotations === undefined ? {} : { annotations: o.annotations }),
    ...(o.inventory === undefined ? {} : { status: { inventory: o.inventory } }),
  });
  h.storage.set(NAMESPACE, NAME, [record(1, 'superseded'), record(2, 'deployed')]);
  const kind = new FakeKind().put(cr(NAME, { uid: UID }));
  const removed: string[] = [];
  const peerEvents: string[] = [];
  const forgotten: string[] = [];
  const live = new Set<string>();
  const failRemoval = new Set<string>();
  const counted: string[] = [];
  const deletes: string[] = [];
  const failDelete = new Set<string>();
  const real = new Uninstaller({
    onUninstalled: (by, count) => counted.push(`${by} ${count}`),
    owner: { chartName: CHART.name, ownerKind: OWNER_KIND, adoptReleases: o.adoptReleases === true },
    crs: {
      removeFinalizers: (target, finalizers) => {
        const name = target.metadata.name;
        if (failRemoval.has(name)) return Promise.reject(new Error('conflict'));
        removed.push(`${name}: ${finalizers.join(',')}`);
        return Promise.resolve();
      },
    },
    objects: {
      get: (ref) =>
        Promise.resolve(
          live.has(`${ref.kind}/${ref.name}`) ? { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name } } : undefined,
        ),
      delete: (ref) => {
        const key = `${ref.kind}/${ref.name}`;
        if (failDelete.has(key)) return Promise.reject(new Error(`${key}: forbidden`));
        deletes.push(key);
        return Promise.resolve(live.delete(key));
      },
    },
    cache: kind,
    requeue: kind.requeue,
    forget: (namespace, name) => {
      forgotten.push(`${namespace}/${name}`);
    },
    ...(o.lanes === undefined ? {} : { lanes: o.lanes }),
  });
  const uninstaller = {
    isHeld: (namespace: string, name: string): boolean => real.isHeld(namespace, name),
    run: async (...args: Parameters<Uninstaller['run']>): Promise<Outcome> => {
      const { events = [], ...outcome } = await real.run(...args);
      for (const e of events) peerEvents.push(`${e.about?.metadata?.name ?? '?'} ${e.type} ${e.reason}: ${e.message}`);
      return outcome;
    },
  };
  return { h, kind, uninstaller, removed, peerEvents, forgotten, live, failRemoval, counted, deletes, failDelete };
}

/** Peers being deleted with our finalizer, their releases ours. */
function addPeers(s: Setup, names: readonly string[], o: CrOptions = {}): void {
  for (const name of names) {
    s.kind.put(cr(name, o));
    s.h.storage.set(NAMESPACE, name, [record(1, 'deployed')]);
  }
}

const UNINSTALLED: Outcome = { kind: 'uninstalled', found: true, remaining: [] };
const completed = (name: string): string => `${name} Normal ${Reason.UninstallSuccessful}: Uninstalled release ${name}`;
const ALL_FINALIZERS = FINALIZERS.join(',');

describe('Uninstaller', () => {
  describe('a release of its own', () => {
    it('does not uninstall a release another kind owns', async () => {
      const s = setup();
      s.h.storage.set(NAMESPACE, NAME, [record(1, 'deployed', OTHERS)]);
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual({ kind: 'uninstalled', found: false, remaining: [] });
      expect(s.h.helm.calls).toStrictEqual([]);
    });

    it('does not uninstall a release that is gone already', async () => {
      for (const records of [[], [record(1, 'deployed'), record(2, 'uninstalled')]]) {
        const s = setup();
        s.h.storage.set(NAMESPACE, NAME, records);
        expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual({ kind: 'uninstalled', found: false, remaining: [] });
        expect(s.h.helm.calls).toStrictEqual([]);
      }
    });

    it('leaves an unlabelled release of its chart alone (installed by hand): it was never adopted', async () => {
      const s = setup();
      s.h.storage.set(NAMESPACE, NAME, [record(1, 'deployed', {})]);
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual({ kind: 'uninstalled', found: false, remaining: [] });
      expect(s.h.helm.methods()).toStrictEqual(['status']);
    });

    it('uninstalls an unlabelled release of its chart when the watch adopts such releases (from operator-sdk)', async () => {
      const s = setup({ adoptReleases: true });
      s.h.storage.set(NAMESPACE, NAME, [record(1, 'deployed', {})]);
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      expect(s.h.helm.methods()).toStrictEqual(['status', 'uninstall']);
    });

    it("uninstalls an unlabelled release whose storage names this very CR as owner (operator-sdk's), and no other CR's", async () => {
      const s = setup();
      s.h.storage.set(NAMESPACE, NAME, [{ ...record(1, 'deployed', {}), ownerUids: ['uid-of-another-instance'] }]);
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual({ kind: 'uninstalled', found: false, remaining: [] });
      s.h.storage.set(NAMESPACE, NAME, [{ ...record(1, 'deployed', {}), ownerUids: [UID] }]);
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      expect(s.h.helm.methods()).toStrictEqual(['status', 'status', 'uninstall']);
    });

    it('uninstalls its release alone with one helm uninstall when no peer is being deleted', async () => {
      const s = setup();
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      expect(s.h.helm.callsOf('uninstall')).toStrictEqual([{ release: NAME, namespace: NAMESPACE, signal: s.h.ctx.signal }]);
      expect(s.kind.requested).toStrictEqual([]);
      expect(s.removed).toStrictEqual([]);
      expect(s.peerEvents).toStrictEqual([]);
    });

    it('reports the release as not found when helm found nothing to uninstall', async () => {
      const s = setup();
      s.h.helm.uninstallFound = false;
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual({ kind: 'uninstalled', found: false, remaining: [] });
    });

    it('reports a failed uninstall as an UninstallError', async () => {
      const s = setup();
      const error = new FakeHelmError('uninstall: timed out');
      s.h.helm.fail('uninstall', error);
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual({
        kind: 'helm-failed',
        reason: Reason.UninstallError,
        event: 'ReleaseOperationFailed',
        failure: { summary: 'uninstall: timed out', retryable: true },
        cause: error,
      });
    });

    it('is cancelled when leadership is lost while helm uninstalls', async () => {
      const s = setup();
      const error = new FakeHelmError('killed');
      s.h.helm.during = () => {
        s.h.abort.abort(new LeadershipLostCancellation('lease lost'));
      };
      s.h.helm.fail('uninstall', error);
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual({ kind: 'cancelled', cause: error });
    });
  });

  describe('without helm (uninstall-route.ts)', () => {
    const MANIFEST = [
      ...['a', 'b'].map((n) => `---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${n}\n`),
      '---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: kept\n  annotations:\n    helm.sh/resource-policy: keep\n',
    ].join('');
    /** The deployed revision 2 as this process read it from helm, its objects live. */
    const known = async (
      o: Parameters<typeof setup>[0] & { deleteHooks?: boolean | undefined; revision?: number } = {},
    ): Promise<Setup> => {
      const s = setup(o);
      await s.h.manifests.remember(NAME, UID, {
        namespace: NAMESPACE,
        revision: o.revision ?? 2,
        manifest: MANIFEST,
        deleteHooks: 'deleteHooks' in o ? o.deleteHooks : false,
      });
      s.live.add('ConfigMap/a').add('ConfigMap/b').add('Secret/kept');
      return s;
    };

    it('deletes the objects helm would (not the kept one), then every stored revision, and runs no helm', async () => {
      const s = await known();
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      expect(s.h.helm.calls).toStrictEqual([]);
      expect(s.deletes.sort()).toStrictEqual(['ConfigMap/a', 'ConfigMap/b']);
      expect([...s.live]).toStrictEqual(['Secret/kept']);
      expect(s.h.storage.deleted).toStrictEqual([`${NAMESPACE}/${NAME}@1`, `${NAMESPACE}/${NAME}@2`]);
      expect(s.counted).toStrictEqual(['operator 1']);
    });

    it('reports what is left with uninstall-wait, as after helm', async () => {
      const s = await known({
        annotations: { [UNINSTALL_WAIT]: 'true' },
        inventory: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: NAMESPACE, name: 'a' }],
      });
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      expect(s.h.helm.calls).toStrictEqual([]);
    });

    it.each([
      ['a hook runs on uninstall', { deleteHooks: true }],
      ['whether a hook runs on uninstall is not known', { deleteHooks: undefined }],
      ['the revision read is not the latest', { revision: 1 }],
    ] as const)('uninstalls with helm when %s', async (_, o) => {
      const s = await known(o);
      await s.uninstaller.run(s.h.ctx);
      expect(s.h.helm.methods()).toContain('uninstall');
      expect(s.deletes).toStrictEqual([]);
      expect(s.h.storage.deleted).toStrictEqual([]);
      expect(s.counted).toStrictEqual(['helm 1']);
    });

    it('leaves the rest to helm when a delete fails, keeping the storage for it', async () => {
      const s = await known();
      s.failDelete.add('ConfigMap/b');
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      expect(s.h.helm.methods()).toContain('uninstall');
      expect(s.h.storage.deleted).toStrictEqual([]);
    });

    it('stops, deleting nothing more and reporting nothing, once the lease is lost', async () => {
      const s = await known();
      s.h.helm.leaseHeld = false;
      expect(await s.uninstaller.run(s.h.ctx)).toMatchObject({ kind: 'cancelled' });
      expect(s.deletes).toStrictEqual([]);
      expect(s.h.helm.calls).toStrictEqual([]);
      expect(s.h.storage.deleted).toStrictEqual([]);
    });

    it('reports a storage delete the API server refused as an UninstallError', async () => {
      const s = await known();
      s.h.storage.deleteRevisions = () => Promise.reject(new Error('secrets "sh.helm.release.v1.x.v1" is forbidden'));
      expect(await s.uninstaller.run(s.h.ctx)).toMatchObject({ kind: 'helm-failed', reason: Reason.UninstallError });
      expect(s.h.helm.calls).toStrictEqual([]);
    });
  });

  describe('uninstall-wait', () => {
    const inventory: InventoryEntry[] = [
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: NAMESPACE, name: 'web-config' },
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: NAMESPACE, name: 'web' },
      { apiVersion: 'v1', kind: 'Service', namespace: NAMESPACE, name: 'web' },
    ];

    it('lists the inventory objects that still exist', async () => {
      const s = setup({ annotations: { [UNINSTALL_WAIT]: 'true' }, inventory });
      s.live.add('Deployment/web').add('Service/web');
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual({
        kind: 'uninstalled',
        found: true,
        remaining: ['Deployment/web', 'Service/web'],
      });
    });

    it('lists them also when the release was gone already', async () => {
      const s = setup({ annotations: { [UNINSTALL_WAIT]: 'true' }, inventory });
      s.h.storage.set(NAMESPACE, NAME, []);
      s.live.add('ConfigMap/web-config');
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual({ kind: 'uninstalled', found: false, remaining: ['ConfigMap/web-config'] });
    });

    it('is done once none is left', async () => {
      const s = setup({ annotations: { [UNINSTALL_WAIT]: 'true' }, inventory });
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
    });

    it('does not look without the annotation', async () => {
      const s = setup({ inventory });
      s.live.add('Deployment/web');
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
    });
  });

  describe('a batch with the peers of its namespace being deleted', () => {
    it('uninstalls every release in one helm uninstall and finishes each peer after it', async () => {
      const s = setup();
      addPeers(s, ['cache', 'db']);
      let enqueuedDuringHelm = -1;
      s.h.helm.during = () => {
        enqueuedDuringHelm = s.kind.requested.length;
      };
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      const calls = s.h.helm.callsOf('uninstall');
      expect(calls).toHaveLength(1);
      expect(calls[0]).toMatchObject({ release: NAME, also: ['cache', 'db'], namespace: NAMESPACE, signal: s.h.ctx.signal });
      expect(s.removed).toStrictEqual([`cache: ${ALL_FINALIZERS}`, `db: ${ALL_FINALIZERS}`]);
      expect(s.peerEvents).toStrictEqual([completed('cache'), completed('db')]);
      expect(s.forgotten).toStrictEqual([`${NAMESPACE}/cache`, `${NAMESPACE}/db`]);
      // Every claimed peer is queued again, once the batch is over.
      expect(enqueuedDuringHelm).toBe(0);
      expect(s.kind.requested).toStrictEqual([
        { namespace: NAMESPACE, name: 'cache' },
        { namespace: NAMESPACE, name: 'db' },
      ]);
    });

    it("finishes every peer after a batch that worked, whether or not helm's output named them", async () => {
      const s = setup();
      addPeers(s, ['cache', 'db']);
      s.h.helm.onUninstall = () => ({ found: true });
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      expect(s.peerEvents).toStrictEqual([completed('cache'), completed('db')]);
      expect(s.removed).toStrictEqual([`cache: ${ALL_FINALIZERS}`, `db: ${ALL_FINALIZERS}`]);
    });

    it('has the peer event recorded on the peer itself', async () => {
      const s = setup();
      addPeers(s, ['db']);
      const uninstaller = new Uninstaller({
        owner: { chartName: CHART.name, ownerKind: OWNER_KIND, adoptReleases: false },
        crs: { removeFinalizers: () => Promise.resolve() },
        objects: { get: () => Promise.resolve(undefined), delete: () => Promise.resolve(false) },
        cache: s.kind,
        requeue: s.kind.requeue,
        forget: () => undefined,
      });
      const outcome = await uninstaller.run(s.h.ctx);
      expect(outcome.events?.map((e) => e.about)).toStrictEqual([s.kind.get(NAMESPACE, 'db')]);
    });

    it("takes along peers holding only operator-sdk's earlier finalizer", async () => {
      const s = setup();
      addPeers(s, ['db'], { finalizers: [LEGACY_FINALIZER] });
      await s.uninstaller.run(s.h.ctx);
      expect(s.h.helm.callsOf('uninstall')[0]?.also).toStrictEqual(['db']);
      expect(s.removed).toStrictEqual([`db: ${ALL_FINALIZERS}`]);
    });

    it('holds its peers while it runs: their own reconciles wait, and are queued again afterwards', async () => {
      const s = setup();
      addPeers(s, ['db']);
      const peer = harness({ name: 'db', uid: 'uid-db', shared: s.h });
      let held: Promise<Outcome> | undefined;
      // Noted here and asserted after: an expect thrown inside helm would be caught as a failed batch.
      const heldWhileHelmRan: boolean[] = [];
      s.h.helm.during = () => {
        heldWhileHelmRan.push(s.uninstaller.isHeld(NAMESPACE, 'db'), s.uninstaller.isHeld(NAMESPACE, NAME));
        held = s.uninstaller.run(peer.ctx);
      };
      await s.uninstaller.run(s.h.ctx);
      expect(heldWhileHelmRan).toStrictEqual([true, false]);
      expect(await held).toStrictEqual({ kind: 'uninstall-held' });
      expect(s.uninstaller.isHeld(NAMESPACE, 'db')).toBe(false);
      expect(s.h.helm.callsOf('uninstall')).toHaveLength(1);
    });

    it("finishes the batch's peers only as far as nobody reads their status afterwards", async () => {
      const s = setup();
      addPeers(s, ['a-other']);
      s.kind.put(cr('a-other', { finalizers: [FINALIZER, 'example.com/backup'] }));
      addPeers(s, ['b-wait'], { annotations: { [UNINSTALL_WAIT]: 'true' } });
      addPeers(s, ['c-plain']);
      await s.uninstaller.run(s.h.ctx);
      expect(s.h.helm.callsOf('uninstall')[0]?.also).toStrictEqual(['a-other', 'b-wait', 'c-plain']);
      // The uninstall is reported on each; only the one with nothing else to do loses its finalizer.
      expect(s.peerEvents).toStrictEqual([completed('a-other'), completed('b-wait'), completed('c-plain')]);
      expect(s.removed).toStrictEqual([`c-plain: ${ALL_FINALIZERS}`]);
      expect(s.forgotten).toStrictEqual([`${NAMESPACE}/c-plain`]);
      expect(s.kind.requested.map((r) => r.name)).toStrictEqual(['a-other', 'b-wait', 'c-plain']);
    });

    it('leaves out CRs not being deleted, without our finalizer, or with a name helm refuses', async () => {
      const s = setup();
      addPeers(s, ['live'], { deleting: false });
      addPeers(s, ['foreign'], { finalizers: ['example.com/other'] });
      addPeers(s, ['Bad_Name']);
      await s.uninstaller.run(s.h.ctx);
      expect(s.h.helm.callsOf('uninstall')).toStrictEqual([{ release: NAME, namespace: NAMESPACE, signal: s.h.ctx.signal }]);
      expect(s.kind.requested).toStrictEqual([]);
      expect(s.peerEvents).toStrictEqual([]);
    });

    // ADR 0036: no helm starts for a release while an earlier helm process for it still runs. The
    // peer's own reconcile would wait for it (admit → wait-for-helm); the batch must not uninstall
    // that release beside it either. #claimPeers checks no `helm.running` (uninstall.ts:170-185).
    it('leaves out a peer whose release still has a live helm process (ADR 0036)', async () => {
      const s = setup();
      addPeers(s, ['busy', 'db']);
      s.h.helm.live.add(`${NAMESPACE}/busy`);
      await s.uninstaller.run(s.h.ctx);
      expect(s.h.helm.callsOf('uninstall')[0]?.also).toStrictEqual(['db']);
      expect(s.removed).toStrictEqual([`db: ${ALL_FINALIZERS}`]);
    });

    it('leaves out peers whose release is not ours or is gone, and queues them again', async () => {
      const s = setup();
      addPeers(s, ['foreign', 'gone', 'db']);
      s.h.storage.set(NAMESPACE, 'foreign', [record(1, 'deployed', OTHERS)]);
      s.h.storage.set(NAMESPACE, 'gone', []);
      await s.uninstaller.run(s.h.ctx);
      expect(s.h.helm.callsOf('uninstall')[0]?.also).toStrictEqual(['db']);
      expect(s.peerEvents).toStrictEqual([completed('db')]);
      expect(s.kind.requested.map((r) => r.name)).toStrictEqual(['foreign', 'gone', 'db']);
    });

    it('takes along no peer whose release this operator did not make, unless made for that very peer', async () => {
      const s = setup();
      addPeers(s, ['by-hand', 'migrated', 'other-instance']);
      s.h.storage.set(NAMESPACE, 'by-hand', [record(1, 'deployed', {})]);
      s.h.storage.set(NAMESPACE, 'migrated', [{ ...record(1, 'deployed', {}), ownerUids: ['uid-migrated'] }]);
      s.h.storage.set(NAMESPACE, 'other-instance', [{ ...record(1, 'deployed', {}), ownerUids: ['uid-web'] }]);
      await s.uninstaller.run(s.h.ctx);
      expect(s.h.helm.callsOf('uninstall')[0]?.also).toStrictEqual(['migrated']);
      expect(s.peerEvents).toStrictEqual([completed('migrated')]);
      expect(s.kind.requested.map((r) => r.name).sort()).toStrictEqual(['by-hand', 'migrated', 'other-instance']);
    });

    it('uninstalls alone, as before, when every peer is left out', async () => {
      const s = setup();
      addPeers(s, ['foreign']);
      s.h.storage.set(NAMESPACE, 'foreign', [record(1, 'deployed', OTHERS)]);
      await s.uninstaller.run(s.h.ctx);
      expect(s.h.helm.callsOf('uninstall')).toStrictEqual([{ release: NAME, namespace: NAMESPACE, signal: s.h.ctx.signal }]);
      expect(s.kind.requested.map((r) => r.name)).toStrictEqual(['foreign']);
    });

    it('does not finish a peer created again under its name while the batch ran, or gone from the cache', async () => {
      const s = setup();
      addPeers(s, ['db', 'cache']);
      s.h.helm.during = () => {
        s.kind.put(cr('db', { uid: 'uid-db-2' }));
        s.kind.delete(NAMESPACE, 'cache');
      };
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      expect(s.h.helm.callsOf('uninstall')[0]?.also).toStrictEqual(['db', 'cache']);
      expect(s.peerEvents).toStrictEqual([]);
      expect(s.removed).toStrictEqual([]);
      expect(s.kind.requested.map((r) => r.name)).toStrictEqual(['db', 'cache']);
    });

    it('leaves a peer whose finalizer cannot be removed to its own reconcile', async () => {
      const s = setup();
      addPeers(s, ['cache', 'db']);
      s.failRemoval.add('cache');
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      expect(s.removed).toStrictEqual([`db: ${ALL_FINALIZERS}`]);
      expect(s.forgotten).toStrictEqual([`${NAMESPACE}/db`]);
      expect(s.kind.requested.map((r) => r.name)).toStrictEqual(['cache', 'db']);
    });

    it('finishes no peer when leadership is lost during the batch', async () => {
      const s = setup();
      addPeers(s, ['db']);
      s.h.helm.during = () => {
        s.h.abort.abort(new LeadershipLostCancellation('lease lost'));
      };
      await s.uninstaller.run(s.h.ctx);
      expect(s.peerEvents).toStrictEqual([]);
      expect(s.removed).toStrictEqual([]);
      expect(s.kind.requested.map((r) => r.name)).toStrictEqual(['db']);
    });

    it('uninstalls this release alone when the batch fails, and leaves the peers to their own reconciles', async () => {
      const s = setup();
      addPeers(s, ['cache', 'db']);
      s.h.helm.fail('uninstall', new FakeHelmError('uninstall: cache: timed out'), 1);
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      const calls = s.h.helm.callsOf('uninstall');
      expect(calls.map((c) => c.also)).toStrictEqual([['cache', 'db'], undefined]);
      expect(calls[1]).toStrictEqual({ release: NAME, namespace: NAMESPACE, signal: s.h.ctx.signal });
      expect(s.peerEvents).toStrictEqual([]);
      expect(s.removed).toStrictEqual([]);
      expect(s.kind.requested.map((r) => r.name)).toStrictEqual(['cache', 'db']);
    });

    it("reports this release's own error when it fails alone after the batch", async () => {
      const s = setup();
      addPeers(s, ['db']);
      const error = new FakeHelmError('uninstall: forbidden');
      s.h.helm.fail('uninstall', error);
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual({
        kind: 'helm-failed',
        reason: Reason.UninstallError,
        event: 'ReleaseOperationFailed',
        failure: { summary: 'uninstall: forbidden', retryable: true },
        cause: error,
      });
      expect(s.h.helm.callsOf('uninstall')).toHaveLength(2);
      expect(s.kind.requested.map((r) => r.name)).toStrictEqual(['db']);
    });

    it('finishes the peers helm reported gone before a batch failed (helm 4 goes on past a failure)', async () => {
      const s = setup();
      addPeers(s, ['cache', 'db']);
      s.h.helm.during = (call) => {
        if (call.method !== 'uninstall' || call.request.also === undefined) return;
        s.h.storage.remove(NAMESPACE, 'db');
        call.request.onUninstalled?.('db');
        s.h.helm.fail('uninstall', new FakeHelmError('uninstall: cache: timed out'), 1);
      };
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      expect(s.h.helm.callsOf('uninstall').map((c) => c.also)).toStrictEqual([['cache', 'db'], undefined]);
      expect(s.peerEvents).toStrictEqual([completed('db')]);
      expect(s.removed).toStrictEqual([`db: ${ALL_FINALIZERS}`]);
    });

    it('uninstalls this release alone when helm found it gone and stopped before the others', async () => {
      const s = setup();
      addPeers(s, ['db']);
      // helm 3 stops at the first release it does not find.
      s.h.helm.onUninstall = () => ({ found: false });
      expect(await s.uninstaller.run(s.h.ctx)).toStrictEqual(UNINSTALLED);
      expect(s.h.helm.callsOf('uninstall').map((c) => c.also)).toStrictEqual([['db'], undefined]);
      expect(s.peerEvents).toStrictEqual([]);
      expect(s.removed).toStrictEqual([]);
    });

    it('takes at most 19 peers along', async () => {
      const s = setup();
      const names = Array.from({ length: 25 }, (_, i) => `peer-${String(i).padStart(2, '0')}`);
      addPeers(s, names);
      await s.uninstaller.run(s.h.ctx);
      expect(s.h.helm.callsOf('uninstall')[0]?.also).toStrictEqual(names.slice(0, 19));
      expect(s.kind.requested).toHaveLength(19);
      expect(s.removed).toHaveLength(19);
    });

    it("splits a bulk delete over the workers: helm uninstalls a batch's releases one after the other", async () => {
      // 20 CRs deleted, 4 workers: this batch takes 5 releases, and leaves 15 for three more batches.
      const s = setup({ lanes: 4 });
      const names = Array.from({ length: 19 }, (_, i) => `peer-${String(i).padStart(2, '0')}`);
      addPeers(s, names);
      await s.uninstaller.run(s.h.ctx);
      expect(s.h.helm.callsOf('uninstall')[0]?.also).toStrictEqual(names.slice(0, 4));
      expect(s.removed).toHaveLength(4);
    });

    it('sizes a batch from the CRs no batch holds yet, at most 20 releases', () => {
      expect(uninstallBatchSize(20, 4)).toBe(5);
      expect(uninstallBatchSize(21, 4)).toBe(6);
      // Few at once (the first of a bulk delete): at least four, a process start each is dear.
      expect(uninstallBatchSize(12, 6)).toBe(4);
      expect(uninstallBatchSize(3, 6)).toBe(3);
      expect(uninstallBatchSize(1, 6)).toBe(1);
      expect(uninstallBatchSize(1000, 6)).toBe(20);
      // One slot (or a nonsense count): the whole namespace, as one batch, up to 20.
      expect(uninstallBatchSize(7, 1)).toBe(7);
      expect(uninstallBatchSize(7, 0)).toBe(7);
    });
  });
});
