/**
 * Moved from the operator-level test/integration/operator/changed-outside.test.ts (issue 45, item 2),
 * reconcile by reconcile. A release upgraded by hand keeps the labels helm carries over, our
 * fingerprint among them: what helm stored with the revision (its values and chart) says it was not
 * made from the CR (ADR 0070). A reconciler that starts with no memory of the release (the
 * operator restarted) compares what helm stored with the CR's values, whatever their shapes.
 */
import { AppsV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { CHANGED_OUTSIDE_EVENT } from '../../src/reconciler/decide/outside-change.js';
import { helmByHand, releaseByHand } from '../support/helm.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { condition, CRs, ensureCrd, NGINX, NGINX_CHART } from '../support/operator.js';
import { READY, startReconcilers, withReconcilers } from '../support/reconciler-harness.js';

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

describe.concurrent.each([
  ['helm v4', inject('helmBin')],
  ['helm v3', inject('helm3Bin')],
])('a release changed outside the operator, with %s', (label, helmBin) => {
  const kc = testKubeConfig();
  const nginx = new CRs(kc, NGINX);
  const apps = kc.makeApiClient(AppsV1Api);
  const prefix = `outside-${label.replace(/\W+/g, '')}`;

  beforeAll(() => ensureCrd(kc, NGINX));

  it('is in sync for a restarted operator when made from the CR, whatever the shapes of its values: no upgrade', async () => {
    const ns = await createNamespace(kc, prefix);
    try {
      const first = await startReconcilers({ watches: WATCHES, namespaces: [ns.name], helmBin });
      try {
        await nginx.create(ns.name, 'shapes', TRICKY);
        expect(condition((await first.reconcileUntilSettled(`${ns.name}/shapes`)).cr, 'Deployed')?.status).toBe('True');
      } finally {
        await first.stop();
      }
      // A new operator keeps no manifest: its first reconcile reads the release from helm and compares.
      const restarted = await startReconcilers({ watches: WATCHES, namespaces: [ns.name], helmBin });
      try {
        const { cr } = await restarted.reconcileUntilSettled(`${ns.name}/shapes`);
        expect(condition(cr, 'Deployed')?.status).toBe('True');
        expect(cr?.status?.deployedRelease?.revision).toBe(1);
      } finally {
        await restarted.stop();
      }
      expect(await releaseByHand('shapes', ns.name)).toMatchObject({ revision: 1, status: 'deployed' });
      expect((await nginx.events(ns.name, 'shapes')).filter((e) => e.reason === CHANGED_OUTSIDE_EVENT)).toEqual([]);
    } finally {
      await ns.remove();
    }
  });

  it('is upgraded back to the CR when upgraded by hand with other values, and a Warning says so', () =>
    withReconcilers(prefix, { watches: WATCHES, helmBin }, async (ns, h) => {
      const key = `${ns}/byhand`;
      await nginx.create(ns, 'byhand', { replicaCount: 2 });
      await h.reconcileUntil(key, READY);
      // Nothing reconciles between the harness's calls, so helm runs by hand with no reconcile
      // beside it (the operator-level case paused the CR for that).
      await helmByHand('upgrade', 'byhand', NGINX_CHART, '-n', ns, '--reuse-values', '--set', 'replicaCount=3');
      expect((await apps.readNamespacedDeployment({ namespace: ns, name: 'byhand-nginx' })).spec?.replicas).toBe(3);
      await h.reconcileUntilSettled(key);
      expect(await releaseByHand('byhand', ns)).toMatchObject({ revision: 3, status: 'deployed', values: { replicaCount: 2 } });
      // Events are recorded on the way out of the reconcile, and may be listed a moment after helm's record.
      const warnings = await waitFor('the ReleaseChangedOutside event', async () => {
        const found = (await nginx.events(ns, 'byhand')).filter((e) => e.reason === CHANGED_OUTSIDE_EVENT);
        return found.length > 0 ? found : undefined;
      });
      expect(warnings.map((e) => [e.type, e.message])).toEqual([
        [
          'Warning',
          "revision 2 was made outside the operator (its values are not the ones this resource gives); upgrading it back to this resource's values and chart",
        ],
      ]);
      const { cr } = await h.reconcileUntil(key, READY);
      expect(condition(cr, 'Deployed')).toMatchObject({ status: 'True', reason: 'UpgradeSuccessful' });
      expect(cr?.status?.deployedRelease?.revision).toBe(3);
      expect((await apps.readNamespacedDeployment({ namespace: ns, name: 'byhand-nginx' })).spec?.replicas).toBe(2);
    }));
});
