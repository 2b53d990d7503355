import { describe, expect, it } from 'vitest';
import { upgrade } from '../../../../src/reconciler/actions/upgrade.js';
import { Reason } from '../../../../src/reconciler/status/conditions.js';
import { rulesFingerprint } from '../../../../src/reconciler/drift/drift-ignore.js';
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
  type Harness,
} from './fakes.js';

const UPGRADE_FORCE = 'helm.sdk.operatorframework.io/upgrade-force';
const ROLLBACK_FORCE = 'helm.sdk.operatorframework.io/rollback-force';

/** A release deployed at revision 2 whose upgrade to revision 3 fails, leaving `left` as revision 3 (none: nothing stored). */
function failingUpgrade(o: { annotations?: Record<string, string>; left?: 'failed' | 'deployed' | 'pending-upgrade' } = {}): {
  h: Harness;
  error: FakeHelmError;
} {
  const h = harness({ ...(o.annotations === undefined ? {} : { annotations: o.annotations }) });
  h.storage.set(NAMESPACE, NAME, [record(1, 'superseded'), record(2, 'deployed'), ...(o.left === undefined ? [] : [record(3, o.left)])]);
  const error = new FakeHelmError('upgrade: cannot patch Deployment "web": field is immutable');
  h.helm.fail('upgrade', error);
  return { h, error };
}

describe('upgrade', () => {
  it('upgrades to the desired chart and values, without force by default, and reports the deployment', async () => {
    const h = harness();
    h.helm.release = {
      revision: 3,
      manifest: manifestOf([{ apiVersion: 'v1', kind: 'ConfigMap', name: 'web-config' }]),
      notes: 'upgraded',
      status: 'deployed',
    };
    const d = desired();
    const outcome = await upgrade(h.ctx, d, record(2, 'deployed'));
    expect(outcome).toStrictEqual({
      kind: 'upgraded',
      deployment: {
        release: {
          name: NAME,
          namespace: NAMESPACE,
          revision: 3,
          chart: CHART.name,
          chartVersion: CHART.version,
          appVersion: CHART.appVersion,
        },
        inventory: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: NAMESPACE, name: 'web-config' }],
        ready: READY,
      },
      notes: 'upgraded',
    });
    expect(h.helm.callsOf('upgrade')).toStrictEqual([
      {
        release: NAME,
        namespace: NAMESPACE,
        chart: CHART.path,
        values: d.values,
        labels: d.labels,
        signal: h.ctx.signal,
        postRender: expect.any(Function) as unknown,
        force: false,
        forceConflicts: false,
      },
    ]);
    expect(h.objects.adopted.map((a) => a.options)).toStrictEqual([{ created: false }]);
    expect(entries(h.manifests.get(NAMESPACE, NAME, UID, 3))).toHaveLength(1);
  });

  it('stores a revision that supersedes the deployed one, in sync with the desired state', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(1, 'superseded'), record(2, 'deployed')]);
    h.helm.release = { ...h.helm.release, revision: 3 };
    const d = desired('fp-4');
    await upgrade(h.ctx, d, record(2, 'deployed'));
    const stored = await h.storage.records(NAMESPACE, NAME);
    expect(stored.map((r) => [r.revision, r.status])).toStrictEqual([
      [1, 'superseded'],
      [2, 'superseded'],
      [3, 'deployed'],
    ]);
    expect(determineReleaseState(stored, { fingerprint: d.fingerprint, ownerKind: OWNER_KIND })).toMatchObject({
      kind: 'InSync',
      deployed: { revision: 3 },
    });
  });

  it('forces the upgrade when the CR asks for it', async () => {
    const h = harness({ annotations: { [UPGRADE_FORCE]: 'true' } });
    await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(h.helm.callsOf('upgrade')[0]?.force).toBe(true);
  });

  it('reports the OverrideValuesInUse events with the upgrade helm ran', async () => {
    const h = harness({ watch: { overrideValues: { 'image.tag': 'v2' } } });
    const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(h.helm.methods()).toStrictEqual(['upgrade']);
    expect(eventsOf(outcome)).toStrictEqual([
      { type: 'Warning', reason: 'OverrideValuesInUse', message: 'Chart value "image.tag" overridden to "v2" by operator\'s watches.yaml' },
    ]);
  });

  it('reports a failed upgrade as an UpgradeError counted against the desired state, still deployed', async () => {
    const { h, error } = failingUpgrade({ left: 'failed' });
    const outcome = await upgrade(h.ctx, desired('fp-9'), record(2, 'deployed'));
    expect(outcome).toStrictEqual({
      kind: 'helm-failed',
      reason: Reason.UpgradeError,
      event: 'UpgradeFailed',
      failure: { summary: 'upgrade: cannot patch Deployment "web": field is immutable', retryable: true },
      cause: error,
      fingerprint: 'keyed-fp-9',
      events: [{ type: 'Warning', reason: 'RollbackSuccessful', message: `Rolled release ${NAME} back to revision 2` }],
    });
    expect(h.objects.adopted).toStrictEqual([]);
  });

  it('rolls a failed upgrade that stored a new revision back to the one that was serving, forced by default', async () => {
    const { h } = failingUpgrade({ left: 'failed' });
    const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(h.helm.methods()).toStrictEqual(['upgrade', 'rollback']);
    expect(h.helm.callsOf('rollback')).toStrictEqual([
      { release: NAME, namespace: NAMESPACE, revision: 2, force: true, signal: h.ctx.signal },
    ]);
    expect(eventsOf(outcome)).toStrictEqual([
      { type: 'Warning', reason: 'RollbackSuccessful', message: `Rolled release ${NAME} back to revision 2` },
    ]);
  });

  it('rolls back a pending revision the failed upgrade left', async () => {
    const { h } = failingUpgrade({ left: 'pending-upgrade' });
    await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(h.helm.callsOf('rollback').map((r) => r.revision)).toStrictEqual([2]);
  });

  it('rolls back to a superseded revision that was serving', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(1, 'superseded'), record(2, 'failed')]);
    h.helm.fail('upgrade', new FakeHelmError('upgrade: boom'));
    await upgrade(h.ctx, desired(), record(1, 'superseded'));
    expect(h.helm.callsOf('rollback').map((r) => r.revision)).toStrictEqual([1]);
  });

  it('does not undo a newer revision that is deployed: a cancelled helm that finished anyway (ADR 0036)', async () => {
    const { h } = failingUpgrade({ left: 'deployed' });
    const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(outcome.kind).toBe('helm-failed');
    expect(h.helm.methods()).toStrictEqual(['upgrade']);
    expect(eventsOf(outcome)).toStrictEqual([]);
  });

  it('rolls nothing back when the failed upgrade stored no new revision', async () => {
    const { h } = failingUpgrade();
    const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(outcome.kind).toBe('helm-failed');
    expect(h.storage.reads).toStrictEqual([`${NAMESPACE}/${NAME}`]);
    expect(h.helm.methods()).toStrictEqual(['upgrade']);
    expect(eventsOf(outcome)).toStrictEqual([]);
  });

  it('rolls nothing back to a revision that was not serving (from a failed latest)', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, [record(1, 'superseded'), record(2, 'failed'), record(3, 'failed')]);
    h.helm.fail('upgrade', new FakeHelmError('upgrade: boom'));
    await upgrade(h.ctx, desired(), record(2, 'failed'));
    expect(h.helm.methods()).toStrictEqual(['upgrade']);
  });

  it('rolls back without force when the CR turns forced rollbacks off', async () => {
    const { h } = failingUpgrade({ annotations: { [ROLLBACK_FORCE]: 'false' }, left: 'failed' });
    const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(h.helm.callsOf('rollback').map((r) => r.force)).toStrictEqual([false]);
    expect(eventsOf(outcome)).toStrictEqual([
      { type: 'Warning', reason: 'RollbackSuccessful', message: `Rolled release ${NAME} back to revision 2` },
    ]);
  });

  it('falls back to a plain rollback when the forced one fails', async () => {
    const { h } = failingUpgrade({ left: 'failed' });
    h.helm.fail('rollback', new FakeHelmError('rollback: Service "web" is invalid: spec.clusterIP: field is immutable'), 1);
    const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(h.helm.callsOf('rollback').map((r) => [r.revision, r.force])).toStrictEqual([
      [2, true],
      [2, false],
    ]);
    expect(eventsOf(outcome)).toStrictEqual([
      {
        type: 'Warning',
        reason: 'RollbackSuccessful',
        message: `Rolled release ${NAME} back to revision 2 without force, after the forced rollback failed`,
      },
    ]);
  });

  it('reports both errors when the forced and the plain rollback fail', async () => {
    const { h } = failingUpgrade({ left: 'failed' });
    let n = 0;
    h.helm.during = (call) => {
      if (call.method === 'rollback') h.helm.fail('rollback', new FakeHelmError(`rollback failure ${++n}`));
    };
    const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(outcome).toMatchObject({ kind: 'helm-failed', reason: Reason.UpgradeError, event: 'UpgradeFailed' });
    expect(h.helm.callsOf('rollback').map((r) => r.force)).toStrictEqual([true, false]);
    expect(eventsOf(outcome)).toStrictEqual([
      {
        type: 'Warning',
        reason: 'RollbackFailed',
        message: `Rollback of ${NAME} to revision 2 failed: rollback failure 1; then: rollback failure 2`,
      },
    ]);
  });

  it('reports the one error of a failed plain rollback', async () => {
    const { h } = failingUpgrade({ annotations: { [ROLLBACK_FORCE]: 'false' }, left: 'failed' });
    h.helm.fail('rollback', new FakeHelmError('rollback: no'));
    const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(h.helm.callsOf('rollback')).toHaveLength(1);
    expect(eventsOf(outcome)).toStrictEqual([
      { type: 'Warning', reason: 'RollbackFailed', message: `Rollback of ${NAME} to revision 2 failed: rollback: no` },
    ]);
  });

  it('does not count an upgrade cancelled by shutdown, and rolls it back with a live signal', async () => {
    const { h, error } = failingUpgrade({ left: 'pending-upgrade' });
    h.helm.during = (call) => {
      if (call.method === 'upgrade') h.abort.abort(new Error('shutting down'));
    };
    const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(outcome).toStrictEqual({
      kind: 'helm-failed',
      reason: Reason.UpgradeError,
      event: 'UpgradeFailed',
      failure: { summary: error.message, retryable: true },
      cause: error,
      events: [{ type: 'Warning', reason: 'RollbackSuccessful', message: `Rolled release ${NAME} back to revision 2` }],
    });
    const rollback = h.helm.callsOf('rollback');
    expect(rollback).toHaveLength(1);
    expect(rollback[0]?.signal).not.toBe(h.ctx.signal);
    expect(rollback[0]?.signal?.aborted).toBe(false);
  });

  it('is cancelled when leadership is lost while helm upgrades: nothing is rolled back or read', async () => {
    const { h, error } = failingUpgrade({ left: 'pending-upgrade' });
    h.helm.during = () => {
      h.abort.abort(new LeadershipLostCancellation('lease lost'));
    };
    expect(await upgrade(h.ctx, desired(), record(2, 'deployed'))).toStrictEqual({ kind: 'cancelled', cause: error });
    expect(h.helm.methods()).toStrictEqual(['upgrade']);
    expect(h.storage.reads).toStrictEqual([]);
  });

  describe('fields another field manager holds (ADR 0072)', () => {
    const CA = '/webhooks/0/clientConfig/caBundle';
    const WEBHOOK = JSON.stringify({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'cfg' },
      webhooks: [{ name: 'a.example.com', timeoutSeconds: 10, clientConfig: { caBundle: '' } }],
    });
    const injected = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: {
        name: 'cfg',
        managedFields: [
          {
            manager: 'helm',
            operation: 'Apply',
            apiVersion: 'admissionregistration.k8s.io/v1',
            fieldsV1: { 'f:webhooks': { 'k:{"name":"a.example.com"}': { 'f:timeoutSeconds': {} } } },
          },
          {
            manager: 'injector',
            operation: 'Update',
            apiVersion: 'admissionregistration.k8s.io/v1',
            fieldsV1: { 'f:webhooks': { 'k:{"name":"a.example.com"}': { 'f:clientConfig': { 'f:caBundle': {} } } } },
          },
        ],
      },
      webhooks: [{ name: 'a.example.com', timeoutSeconds: 10, clientConfig: { caBundle: 'CA' } }],
    };
    const fight = {
      kind: 'MutatingWebhookConfiguration',
      name: 'cfg',
      path: CA,
      manager: 'injector',
      restores: 3,
      since: '2026-01-01T00:00:00Z',
      conflict: true,
    };
    /** What the upgrade's post-renderer makes of the chart's webhook, as a parsed object. */
    const postRendered = async (h: Harness): Promise<Record<string, unknown>> => {
      const render = h.helm.callsOf('upgrade')[0]?.postRender;
      if (render === undefined) throw new Error('no post-renderer');
      const doc = (await render(`${WEBHOOK}\n`)).split('\n').find((l) => l.startsWith('{'));
      return JSON.parse(doc ?? '{}') as Record<string, unknown>;
    };
    const caBundleOf = (o: Record<string, unknown>): unknown =>
      (o.webhooks as { clientConfig: Record<string, unknown> }[])[0]?.clientConfig.caBundle;

    it('helm 4: applies server-side taking conflicts by default, and leaves out a field an ignore rule names that another manager owns', async () => {
      const h = harness({
        clusterScoped: ['MutatingWebhookConfiguration'],
        watch: { driftIgnore: [{ paths: [CA], target: { kind: 'MutatingWebhookConfiguration' } }] },
      });
      h.helm.helmMajor = 4;
      h.objects.live.set('MutatingWebhookConfiguration//cfg', injected);
      await upgrade(h.ctx, desired(), record(2, 'deployed'));
      expect(h.helm.callsOf('upgrade')[0]).toMatchObject({ force: false, forceConflicts: true });
      const applied = await postRendered(h);
      expect(caBundleOf(applied)).toBeUndefined();
      expect((applied.webhooks as { timeoutSeconds: number }[])[0]?.timeoutSeconds).toBe(10);
      // Stamped with its owner too.
      expect((applied.metadata as { labels?: Record<string, string> }).labels).toBeDefined();
    });

    it('helm 3: carries the live value of a field in a reported fight', async () => {
      const h = harness({
        clusterScoped: ['MutatingWebhookConfiguration'],
        status: { driftFights: { revision: 2, rules: rulesFingerprint([]), fields: [fight] } },
      });
      h.objects.live.set('MutatingWebhookConfiguration//cfg', injected);
      h.helm.release = { ...h.helm.release, revision: 3 };
      const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
      expect(h.helm.callsOf('upgrade')[0]).toMatchObject({ force: false, forceConflicts: false });
      expect(caBundleOf(await postRendered(h))).toBe('CA');
      // The fight is kept for the new revision: the next upgrade leaves the field too.
      expect(outcome).toMatchObject({
        kind: 'upgraded',
        fights: { revision: 3, fields: [{ path: CA, manager: 'injector', conflict: true }] },
      });
    });

    it('reads no live object when nothing is held and the policy forces', async () => {
      const h = harness();
      h.helm.helmMajor = 4;
      await upgrade(h.ctx, desired(), record(2, 'deployed'));
      await postRendered(h).catch(() => undefined);
      expect(h.objects.order).not.toContain('current');
      expect(h.objects.dryRuns).toStrictEqual([]);
    });

    it('conflictPolicy: fail: a field another manager holds stops the upgrade before helm, as ResourceConflict, not retried, not rolled back', async () => {
      const h = harness({ clusterScoped: ['MutatingWebhookConfiguration'], watch: { conflictPolicy: 'fail' } });
      h.helm.helmMajor = 4;
      h.objects.conflicts.set('MutatingWebhookConfiguration/cfg', [
        { manager: 'kubectl', field: '.webhooks[name="a.example.com"].timeoutSeconds' },
      ]);
      h.storage.set(NAMESPACE, NAME, [record(1, 'superseded'), record(2, 'deployed')]);
      // As helm: the post-renderer's failure fails the upgrade before a revision is stored.
      let message = '';
      h.helm.during = (call) => {
        if (call.method !== 'upgrade') return;
        const render = call.request.postRender;
        h.helm.hold = (render === undefined ? Promise.resolve('') : render(`${WEBHOOK}\n`)).then(
          () => undefined,
          (err: unknown) => {
            message = (err as Error).message;
            h.helm.fail(
              'upgrade',
              new FakeHelmError(`UPGRADE FAILED: error while running post render on files: helm-operator post-renderer: ${message}`),
            );
          },
        );
      };
      const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
      expect(h.helm.callsOf('upgrade')[0]).toMatchObject({ forceConflicts: false });
      expect(message).toContain('MutatingWebhookConfiguration cfg: field /webhooks/0/timeoutSeconds is owned by field manager "kubectl"');
      expect(outcome).toMatchObject({
        kind: 'helm-failed',
        reason: Reason.ResourceConflict,
        failure: { retryable: false, fieldConflict: true },
      });
      expect(h.helm.methods()).toStrictEqual(['upgrade']);
      expect(eventsOf(outcome)).toStrictEqual([]);
    });
  });

  it("helm's own apply conflict: ResourceConflict with what settles it, not retried, not rolled back (its failed revision stays)", async () => {
    const { h } = failingUpgrade({ left: 'failed' });
    const text =
      'UPGRADE FAILED: Apply failed with 1 conflict: conflict with "kubectl-scale" with subresource "scale" using apps/v1: .spec.replicas';
    h.helm.fail('upgrade', new FakeHelmError(text));
    const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(outcome).toMatchObject({
      kind: 'helm-failed',
      reason: Reason.ResourceConflict,
      failure: {
        summary: `${text}; to take such a field back set conflictPolicy: force on the watch, to leave it to its manager add a driftIgnore rule naming it`,
        retryable: false,
      },
    });
    expect(h.helm.methods()).toStrictEqual(['upgrade']);
  });

  it('checks confinement first: a refused release is not upgraded', async () => {
    const h = harness({ watch: { confineToNamespace: true } });
    h.helm.rendered = manifestOf([{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'admin-too' }]);
    const outcome = await upgrade(h.ctx, desired(), record(2, 'deployed'));
    expect(outcome).toMatchObject({ kind: 'refused', reason: Reason.NamespaceConfinementViolation });
    expect(h.helm.methods()).toStrictEqual(['render']);
  });
});
