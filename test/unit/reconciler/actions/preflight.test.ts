import { describe, expect, it } from 'vitest';
import { checkConfinement } from '../../../../src/reconciler/actions/preflight.js';
import { Reason } from '../../../../src/reconciler/status/conditions.js';
import { LeadershipLostCancellation } from '../../../../src/runtime/reconcile.js';
import { CHART, desired, FakeHelmError, harness, manifestOf, NAME, NAMESPACE, type HarnessOptions } from './fakes.js';

const confined = (o: HarnessOptions = {}): ReturnType<typeof harness> => harness({ ...o, watch: { confineToNamespace: true, ...o.watch } });
const refusal = (violations: string) => ({
  kind: 'refused',
  reason: Reason.NamespaceConfinementViolation,
  message: `the release would create objects outside namespace ${NAMESPACE}, which this watch confines it to: ${violations}`,
  retry: false,
  event: true,
  stage: 'release',
});

describe('checkConfinement', () => {
  it('lets an unconfined watch go ahead without rendering', async () => {
    const h = harness();
    h.helm.rendered = manifestOf([{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', namespace: 'elsewhere' }]);
    expect(await checkConfinement(h.ctx, desired(), Reason.InstallError)).toBeUndefined();
    expect(h.helm.calls).toStrictEqual([]);
    expect(h.scopeLookups).toStrictEqual([]);
  });

  it("renders the release as helm would install it, with the watch's dry-run option", async () => {
    for (const dryRunOption of ['client', 'server'] as const) {
      const h = confined({ watch: { dryRunOption } });
      const d = desired();
      expect(await checkConfinement(h.ctx, d, Reason.InstallError)).toBeUndefined();
      expect(h.helm.callsOf('render')).toStrictEqual([
        {
          release: NAME,
          namespace: NAMESPACE,
          chart: CHART.path,
          values: d.values,
          labels: d.labels,
          signal: h.ctx.signal,
          dryRun: dryRunOption,
        },
      ]);
    }
  });

  it("lets a release go ahead whose objects all land in the CR's namespace", async () => {
    const h = confined();
    h.helm.rendered = manifestOf([
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'implicit' },
      { apiVersion: 'v1', kind: 'Secret', name: 'explicit', namespace: NAMESPACE },
    ]);
    expect(await checkConfinement(h.ctx, desired(), Reason.InstallError)).toBeUndefined();
  });

  it('refuses objects in another namespace, for good and with an event', async () => {
    const h = confined();
    h.helm.rendered = manifestOf([
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'fine' },
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'settings', namespace: 'other' },
    ]);
    expect(await checkConfinement(h.ctx, desired(), Reason.InstallError)).toStrictEqual(
      refusal('ConfigMap other/settings (namespace other)'),
    );
  });

  it('refuses a cluster-scoped kind the watch does not allow, and accepts one it does', async () => {
    const manifest = manifestOf([
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'reader' },
      { apiVersion: 'v1', kind: 'Namespace', name: 'extra' },
    ]);
    const h = confined({ watch: { allowClusterScoped: ['ClusterRole.rbac.authorization.k8s.io'] } });
    h.helm.rendered = manifest;
    expect(await checkConfinement(h.ctx, desired(), Reason.InstallError)).toStrictEqual(refusal('Namespace extra (cluster-scoped)'));
    const all = confined({ watch: { allowClusterScoped: ['ClusterRole.rbac.authorization.k8s.io', 'Namespace'] } });
    all.helm.rendered = manifest;
    expect(await checkConfinement(all.ctx, desired(), Reason.InstallError)).toBeUndefined();
  });

  it('lists every violation', async () => {
    const h = confined();
    h.helm.rendered = manifestOf([
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'reader' },
      { apiVersion: 'v1', kind: 'Service', name: 'svc', namespace: 'kube-system' },
    ]);
    expect(await checkConfinement(h.ctx, desired(), Reason.InstallError)).toStrictEqual(
      refusal('ClusterRole reader (cluster-scoped), Service kube-system/svc (namespace kube-system)'),
    );
  });

  it("refuses a kind the API server does not serve, even one placed in the CR's namespace: its scope cannot be checked", async () => {
    const h = confined({ unserved: ['Widget'] });
    h.helm.rendered = manifestOf([
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'fine' },
      { apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', namespace: NAMESPACE },
    ]);
    expect(await checkConfinement(h.ctx, desired(), Reason.InstallError)).toStrictEqual(
      refusal('Widget w (kind example.com/v1 Widget is not served, its scope cannot be checked)'),
    );
  });

  it('throws what else the REST mapper throws', async () => {
    const h = confined();
    const broken = { ...h.ctx, isNamespaced: () => Promise.reject(new Error('discovery: connection refused')) };
    await expect(checkConfinement(broken, desired(), Reason.InstallError)).rejects.toThrow('discovery: connection refused');
  });

  it('reports a render failure as the install or upgrade failing, with a RenderFailed event, counted against retries', async () => {
    const h = confined();
    const error = new FakeHelmError('render: template: nginx/templates/x.yaml:3: nil pointer');
    h.helm.fail('render', error);
    expect(await checkConfinement(h.ctx, desired(), Reason.UpgradeError)).toStrictEqual({
      kind: 'helm-failed',
      reason: Reason.UpgradeError,
      event: 'RenderFailed',
      failure: { summary: 'render: template: nginx/templates/x.yaml:3: nil pointer', retryable: true },
      fingerprint: desired().keyedFingerprint,
      cause: error,
    });
  });

  it('is cancelled when leadership is lost while rendering', async () => {
    const h = confined();
    const error = new FakeHelmError('killed');
    h.helm.during = () => {
      h.abort.abort(new LeadershipLostCancellation('lease lost'));
    };
    h.helm.fail('render', error);
    expect(await checkConfinement(h.ctx, desired(), Reason.InstallError)).toStrictEqual({ kind: 'cancelled', cause: error });
  });
});
