import { describe, expect, it } from 'vitest';
import { install } from '../../../../src/reconciler/actions/install.js';
import { Reason } from '../../../../src/reconciler/status/conditions.js';
import { CHART_LABEL } from '../../../../src/reconciler/objects/ownership.js';
import { determineReleaseState } from '../../../../src/reconciler/decide/state.js';
import { LeadershipLostCancellation } from '../../../../src/runtime/reconcile.js';
import {
  CHART,
  desired,
  entries,
  eventsOf,
  FakeHelmError,
  harness,
  manifestOf,
  NAME,
  NAMESPACE,
  OWNER_KIND,
  READY,
  record,
  UID,
} from './fakes.js';

const INVENTORY = [
  { apiVersion: 'v1', kind: 'ConfigMap', namespace: NAMESPACE, name: 'web-config' },
  { apiVersion: 'apps/v1', kind: 'Deployment', namespace: NAMESPACE, name: 'web' },
];

describe('install', () => {
  it('installs the desired chart and values and reports the deployment, its notes and readiness', async () => {
    const h = harness();
    const d = desired();
    const outcome = await install(h.ctx, d, { leftovers: false });
    expect(outcome).toStrictEqual({
      kind: 'installed',
      deployment: {
        release: {
          name: NAME,
          namespace: NAMESPACE,
          revision: 1,
          chart: CHART.name,
          chartVersion: CHART.version,
          appVersion: CHART.appVersion,
        },
        inventory: INVENTORY,
        ready: READY,
      },
      notes: 'Thanks for installing',
    });
    expect(h.helm.methods()).toStrictEqual(['install']);
    expect(h.helm.callsOf('install')).toStrictEqual([
      {
        release: NAME,
        namespace: NAMESPACE,
        chart: CHART.path,
        values: d.values,
        labels: d.labels,
        signal: h.ctx.signal,
        postRender: expect.any(Function) as unknown,
      },
    ]);
  });

  it('helm 4: takes the applied fields from other managers (conflictPolicy: force, the default), not under conflictPolicy: fail; helm 3 has no conflicts', async () => {
    const forced = harness();
    forced.helm.helmMajor = 4;
    await install(forced.ctx, desired(), { leftovers: false });
    expect(forced.helm.callsOf('install')[0]).toMatchObject({ forceConflicts: true });
    const strict = harness({ watch: { conflictPolicy: 'fail' } });
    strict.helm.helmMajor = 4;
    await install(strict.ctx, desired(), { leftovers: false });
    expect(strict.helm.callsOf('install')[0]).not.toHaveProperty('forceConflicts');
    const v3 = harness();
    await install(v3.ctx, desired(), { leftovers: false });
    expect(v3.helm.callsOf('install')[0]).not.toHaveProperty('forceConflicts');
  });

  it("conflictPolicy: fail: helm's apply conflict on an object that existed is ResourceConflict with what settles it, not retried", async () => {
    const h = harness({ watch: { conflictPolicy: 'fail' } });
    h.helm.helmMajor = 4;
    const text =
      'INSTALLATION FAILED: conflict occurred while applying object demo/web-config /v1, Kind=ConfigMap: Apply failed with 1 conflict: conflict with "someone-else" using v1: .data.greeting';
    h.helm.fail('install', new FakeHelmError(text));
    // What helm 4 leaves: the install's failed revision.
    h.storage.set(NAMESPACE, NAME, [record(1, 'failed')]);
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(outcome).toMatchObject({
      kind: 'helm-failed',
      reason: Reason.ResourceConflict,
      notDeployed: true,
      failure: {
        summary: `${text}; to take such a field back set conflictPolicy: force on the watch, to leave it to its manager add a driftIgnore rule naming it`,
        retryable: false,
      },
    });
    // The object in conflict existed before: only the record goes, no uninstall, which would delete it (remediate.ts).
    expect(h.helm.callsOf('uninstall')).toHaveLength(0);
    expect(await h.storage.records(NAMESPACE, NAME)).toStrictEqual([]);
  });

  it("has helm create the release's objects owned by the CR (render-ownership.ts)", async () => {
    const h = harness();
    await install(h.ctx, desired(), { leftovers: false });
    const rendered = await h.helm.callsOf('install')[0]?.postRender?.('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n');
    const meta = (JSON.parse(rendered ?? '{}') as { metadata?: { labels?: unknown; ownerReferences?: unknown } }).metadata;
    expect(meta?.labels).toStrictEqual({ [CHART_LABEL]: CHART.name });
    expect(meta?.ownerReferences).toStrictEqual([expect.objectContaining({ uid: h.ctx.uid, controller: true }) as unknown]);
  });

  it('stores a release the next reconcile finds in sync with the desired state', async () => {
    const h = harness();
    const d = desired('fp-3');
    await install(h.ctx, d, { leftovers: false });
    const stored = await h.storage.records(NAMESPACE, NAME);
    expect(stored).toStrictEqual([{ revision: 1, status: 'deployed', labels: d.labels }]);
    expect(determineReleaseState(stored, { fingerprint: d.fingerprint, ownerKind: OWNER_KIND })).toStrictEqual({
      kind: 'InSync',
      deployed: stored[0],
    });
  });

  it('adopts the objects as just created, keeps the manifest for this CR instance and hands what adopt saw to readiness', async () => {
    const h = harness();
    await install(h.ctx, desired(), { leftovers: false });
    expect(h.objects.adopted).toHaveLength(1);
    expect(h.objects.adopted[0]?.options).toStrictEqual({ created: true });
    expect(entries(h.objects.adopted[0]?.desired)).toStrictEqual(INVENTORY);
    expect(h.objects.readinessSeen[0]).toBe(h.objects.seen);
    expect(h.objects.order).toStrictEqual(['adopt', 'readiness']);
    expect(entries(h.manifests.get(NAMESPACE, NAME, UID, 1))).toStrictEqual(INVENTORY);
    expect(h.manifests.get(NAMESPACE, NAME, 'another-uid', 1)).toBeUndefined();
  });

  it('reports one OverrideValuesInUse event per watches.yaml override with the install helm ran', async () => {
    const h = harness({ watch: { overrideValues: { 'image.tag': 'v2', replicas: '3' } } });
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(h.helm.methods()).toStrictEqual(['install']);
    expect(eventsOf(outcome)).toStrictEqual([
      { type: 'Warning', reason: 'OverrideValuesInUse', message: 'Chart value "image.tag" overridden to "v2" by operator\'s watches.yaml' },
      { type: 'Warning', reason: 'OverrideValuesInUse', message: 'Chart value "replicas" overridden to "3" by operator\'s watches.yaml' },
    ]);
  });

  it('masks the overridden values in those events with suppressOverrideValues', async () => {
    const h = harness({ watch: { overrideValues: { password: 's3cret' } }, suppressOverrideValues: true });
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(eventsOf(outcome)).toStrictEqual([
      {
        type: 'Warning',
        reason: 'OverrideValuesInUse',
        message: 'Chart value "password" overridden to "****" by operator\'s watches.yaml',
      },
    ]);
  });

  it('records no event when the watch overrides nothing', async () => {
    const h = harness();
    expect(eventsOf(await install(h.ctx, desired(), { leftovers: false }))).toStrictEqual([]);
  });

  it("uninstalls a failed install's leftovers first", async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(1, 'failed')]);
    const outcome = await install(h.ctx, desired(), { leftovers: true });
    expect(outcome.kind).toBe('installed');
    expect(h.helm.methods()).toStrictEqual(['uninstall', 'install']);
    expect(h.helm.callsOf('uninstall')).toStrictEqual([{ release: NAME, namespace: NAMESPACE, signal: h.ctx.signal }]);
  });

  it('does not install when removing the leftovers fails: an InstallError, not counted against retries', async () => {
    const h = harness({ watch: { overrideValues: { a: 'b' } } });
    const error = new FakeHelmError('uninstall: forbidden');
    h.helm.fail('uninstall', error);
    const outcome = await install(h.ctx, desired(), { leftovers: true });
    expect(outcome).toStrictEqual({
      kind: 'helm-failed',
      reason: Reason.InstallError,
      event: 'ReleaseOperationFailed',
      failure: { summary: 'uninstall: forbidden', retryable: true },
      cause: error,
    });
    expect(h.helm.methods()).toStrictEqual(['uninstall']);
  });

  it('reports a failed install as not deployed, counted against the desired state, and removes the release it stored', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(1, 'failed')]);
    const error = new FakeHelmError('install: timed out waiting for the condition');
    h.helm.fail('install', error);
    const outcome = await install(h.ctx, desired('fp-7'), { leftovers: false });
    expect(outcome).toStrictEqual({
      kind: 'helm-failed',
      reason: Reason.InstallError,
      event: 'InstallFailed',
      failure: { summary: 'install: timed out waiting for the condition', retryable: true },
      cause: error,
      fingerprint: 'keyed-fp-7',
      notDeployed: true,
    });
    expect(h.helm.methods()).toStrictEqual(['install', 'uninstall']);
    expect(h.helm.callsOf('uninstall')).toStrictEqual([{ release: NAME, namespace: NAMESPACE, signal: h.ctx.signal }]);
    expect(h.objects.adopted).toStrictEqual([]);
  });

  it('uninstalls nothing after a failed install that stored no release', async () => {
    const h = harness();
    h.helm.fail('install', new FakeHelmError('install: chart requires kubeVersion >= 1.40'));
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(outcome).toMatchObject({ kind: 'helm-failed', notDeployed: true, fingerprint: 'keyed-fp-1' });
    expect(h.storage.reads).toStrictEqual([`${NAMESPACE}/${NAME}`]);
    expect(h.helm.methods()).toStrictEqual(['install']);
  });

  it("still reports the install's failure when removing its release fails too", async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(1, 'failed')]);
    const error = new FakeHelmError('install: boom');
    h.helm.fail('install', error).fail('uninstall', new FakeHelmError('uninstall: boom'));
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(outcome).toMatchObject({ kind: 'helm-failed', reason: Reason.InstallError, event: 'InstallFailed', cause: error });
    expect(h.helm.methods()).toStrictEqual(['install', 'uninstall']);
  });

  it('does not count an install cancelled by shutdown, and still removes its release with a live signal', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(1, 'pending-install')]);
    const error = new FakeHelmError('helm was killed by SIGTERM');
    h.helm.during = (call) => {
      if (call.method === 'install') h.abort.abort(new Error('shutting down'));
    };
    h.helm.fail('install', error);
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(outcome).toStrictEqual({
      kind: 'helm-failed',
      reason: Reason.InstallError,
      event: 'InstallFailed',
      failure: { summary: 'helm was killed by SIGTERM', retryable: true },
      cause: error,
      notDeployed: true,
    });
    expect(outcome).not.toHaveProperty('fingerprint');
    const cleanup = h.helm.callsOf('uninstall');
    expect(cleanup).toHaveLength(1);
    expect(cleanup[0]?.signal).toBeDefined();
    expect(cleanup[0]?.signal).not.toBe(h.ctx.signal);
    expect(cleanup[0]?.signal?.aborted).toBe(false);
  });

  it('is cancelled when leadership is lost while helm installs: nothing is undone or read', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(1, 'pending-install')]);
    const error = new FakeHelmError('helm was killed by SIGTERM');
    h.helm.during = () => {
      h.abort.abort(new LeadershipLostCancellation('lease lost'));
    };
    h.helm.fail('install', error);
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(outcome).toStrictEqual({ kind: 'cancelled', cause: error });
    expect(h.helm.methods()).toStrictEqual(['install']);
    expect(h.storage.reads).toStrictEqual([]);
  });

  it('is cancelled when leadership is lost while the leftovers are removed', async () => {
    const h = harness();
    const error = new FakeHelmError('helm was killed by SIGTERM');
    h.helm.during = () => {
      h.abort.abort(new LeadershipLostCancellation('lease lost'));
    };
    h.helm.fail('uninstall', error);
    expect(await install(h.ctx, desired(), { leftovers: true })).toStrictEqual({ kind: 'cancelled', cause: error });
    expect(h.helm.methods()).toStrictEqual(['uninstall']);
  });

  it('checks confinement first: a refused release is neither installed nor announced', async () => {
    const h = harness({ watch: { confineToNamespace: true, overrideValues: { a: 'b' } } });
    h.helm.rendered = manifestOf([{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', namespace: 'kube-system' }]);
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(outcome).toMatchObject({ kind: 'refused', reason: Reason.NamespaceConfinementViolation });
    expect(h.helm.methods()).toStrictEqual(['render']);
    expect(eventsOf(outcome)).toStrictEqual([]);
  });

  it('installs a confined release that stays in its namespace, rendering it first', async () => {
    const h = harness({ watch: { confineToNamespace: true } });
    const outcome = await install(h.ctx, desired(), { leftovers: false });
    expect(outcome.kind).toBe('installed');
    expect(h.helm.methods()).toStrictEqual(['render', 'install']);
  });
});
