import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CHANGED_OUTSIDE_EVENT } from '../../../src/reconciler/decide/outside-change.js';
import { helmByHand, releaseByHand } from '../../support/helm.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  condition,
  CRs,
  ensureCrd,
  NGINX,
  NGINX_CHART,
  startOperator,
  waitForReconciles,
  type RunningOperator,
} from '../../support/operator.js';

const WATCHES = `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}}\n`;

/**
 * Values of every JSON shape, as a CR's spec holds them and helm stores them after reading our
 * values file (`global` takes any map in the nginx chart's schema): each must compare equal to the
 * CR's own, or every restart would upgrade every release.
 */
const TRICKY = {
  replicaCount: 1,
  // null over a chart default: helm's coalescing must not show in the values it stores.
  affinity: null,
  image: { tag: null },
  podAnnotations: { 'example.com/text': 'é ☃ "quoted" \\ back\ttab', 'example.com/number-like': '007', 'example.com/yes': 'yes' },
  global: {
    float: 1.5,
    tiny: 1e-7,
    huge: 1e21,
    beyondInt64: 2 ** 64,
    beyondSafeInteger: 2 ** 53 + 2,
    negative: -0.25,
    zero: 0,
    none: null,
    empty: {},
    emptyList: [],
    yes: true,
    nested: [{ b: 1, a: [2, { d: null, c: 'x' }] }],
  },
};

/**
 * A release upgraded by hand keeps the labels helm carries over, our fingerprint among them: what
 * helm stored with the revision (its values and chart) says it was not made from the CR (ADR 0070).
 */
describe.each([
  ['helm v4', inject('helmBin')],
  ['helm v3', inject('helm3Bin')],
])('a release changed outside the operator, with %s', (_label, helmBin) => {
  const kc = testKubeConfig();
  const nginx = new CRs(kc, NGINX);
  const apps = kc.makeApiClient(AppsV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator | undefined;

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'outside');
  });
  afterAll(async () => {
    await op?.stop();
    await ns.remove();
  });

  it('is in sync for a restarted operator when made from the CR, whatever the shapes of its values: no upgrade', async () => {
    op = await startOperator({ watches: WATCHES, namespaces: [ns.name], helmBin });
    await nginx.create(ns.name, 'shapes', TRICKY);
    await nginx.waitForCondition(ns.name, 'shapes', { type: 'Deployed', status: 'True' });
    await op.stop();
    // The new process keeps no manifest: its first reconcile reads the release from helm and compares.
    op = await startOperator({ watches: WATCHES, namespaces: [ns.name], helmBin });
    // From the new process's start: its first reconcile may be over before any read of its metrics.
    await waitForReconciles(op, 'nginx-controller', { reconciles: new Map([['nginx-controller', 0]]), helmExecutions: 0 }, 1);
    expect(await releaseByHand('shapes', ns.name)).toMatchObject({ revision: 1, status: 'deployed' });
    expect((await nginx.events(ns.name, 'shapes')).filter((e) => e.reason === CHANGED_OUTSIDE_EVENT)).toEqual([]);
  });

  it('is upgraded back to the CR when upgraded by hand with other values, and a Warning says so', async () => {
    const running = op ?? (await startOperator({ watches: WATCHES, namespaces: [ns.name], helmBin }));
    op = running;
    await nginx.create(ns.name, 'byhand', { replicaCount: 2 });
    await nginx.waitForCondition(ns.name, 'byhand', { type: 'Ready', status: 'True' });
    // Paused while helm runs by hand: a reconcile that found its revision pending, with no helm of
    // the operator's own running, would take it as a dead process's and roll it back (unlock).
    const paused = 'helm.sdk.operatorframework.io/paused';
    await nginx.patch(ns.name, 'byhand', { metadata: { annotations: { [paused]: 'true' } } });
    await nginx.waitForCondition(ns.name, 'byhand', { type: 'Paused', status: 'True' });
    await helmByHand('upgrade', 'byhand', NGINX_CHART, '-n', ns.name, '--reuse-values', '--set', 'replicaCount=3');
    expect((await apps.readNamespacedDeployment({ namespace: ns.name, name: 'byhand-nginx' })).spec?.replicas).toBe(3);
    await nginx.patch(ns.name, 'byhand', { metadata: { annotations: { [paused]: null } } });
    const release = await waitFor('the release upgraded back to the CR’s values', async () => {
      const now = await releaseByHand('byhand', ns.name);
      return now !== undefined && now.revision >= 3 && now.status === 'deployed' ? now : undefined;
    });
    expect(release).toMatchObject({ revision: 3, values: { replicaCount: 2 } });
    // Events are recorded on the way out of the reconcile, and may be listed a moment after helm's record.
    const warnings = await waitFor('the ReleaseChangedOutside event', async () => {
      const found = (await nginx.events(ns.name, 'byhand')).filter((e) => e.reason === CHANGED_OUTSIDE_EVENT);
      return found.length > 0 ? found : undefined;
    });
    expect(warnings.map((e) => [e.type, e.message])).toEqual([
      [
        'Warning',
        "revision 2 was made outside the operator (its values are not the ones this resource gives); upgrading it back to this resource's values and chart",
      ],
    ]);
    const cr = await nginx.waitForCondition(ns.name, 'byhand', { type: 'Ready', status: 'True' });
    expect(condition(cr, 'Deployed')).toMatchObject({ status: 'True', reason: 'UpgradeSuccessful' });
    expect(cr.status?.deployedRelease?.revision).toBe(3);
    expect((await apps.readNamespacedDeployment({ namespace: ns.name, name: 'byhand-nginx' })).spec?.replicas).toBe(2);
  });
});
