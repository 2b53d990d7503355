/**
 * Moved from the operator-level test/integration/operator/status-columns.test.ts (issue 45, item 2),
 * reconcile by reconcile. `kubectl get` shows a failed upgrade at a glance (issue 26, item 7): the real kubectl prints the
 * printer columns of this repository's CRD (config/crd), READY turns False with helm's reason while
 * DEPLOYED and REVISION still show the release that serves, and all of it clears once the spec is
 * fixed.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AppsV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { testKubeConfig } from '../support/kube.js';
import { condition, CRs, ensureCrd, NGINX, NGINX_CHART } from '../support/operator.js';
import { READY, withReconcilers } from '../support/reconciler-harness.js';

const run = promisify(execFile);

/** `kubectl get nginxes.example.com <name>` as a user runs it: header names → cell of the one row. */
async function columns(namespace: string, name: string, wide = false): Promise<Record<string, string>> {
  const { stdout } = await run(
    inject('kubectlBin'),
    ['get', 'nginxes.example.com', name, '-n', namespace, ...(wide ? ['-o', 'wide'] : [])],
    {
      env: { ...process.env, KUBECONFIG: inject('kubeconfigPath') },
    },
  );
  const [header = '', row = ''] = stdout.trimEnd().split('\n');
  // Columns are aligned: each cell starts where its header starts (the last one runs to the end).
  const starts = [...header.matchAll(/\S+/g)].map((m) => ({ name: m[0], at: m.index }));
  return Object.fromEntries(starts.map((c, i) => [c.name, row.slice(c.at, starts[i + 1]?.at ?? row.length).trim()]));
}

describe('kubectl get <kind>: a failed upgrade is visible while the previous release serves', () => {
  const kc = testKubeConfig();
  const nginx = new CRs(kc, NGINX);

  beforeAll(() => ensureCrd(kc, NGINX));

  it('READY False with UpgradeError, DEPLOYED True at revision 1; READY True again once the spec is fixed', () =>
    withReconcilers(
      'columns',
      { watches: `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}}\n` },
      async (ns, h) => {
        const key = `${ns}/web`;
        await nginx.create(ns, 'web', { replicaCount: 1 });
        await h.reconcileUntil(key, READY);
        expect(await columns(ns, 'web')).toMatchObject({
          NAME: 'web',
          READY: 'True',
          REASON: 'ResourcesReady',
          DEPLOYED: 'True',
          REVISION: '1',
        });

        // The chart's values.schema.json wants an integer: helm refuses the upgrade, nothing is applied.
        await nginx.patch(ns, 'web', { spec: { replicaCount: 'many' } });
        const failed = (await h.reconcile(key)).cr;
        expect(condition(failed, 'ReleaseFailed')).toMatchObject({ status: 'True', reason: 'UpgradeError' });
        expect(condition(failed, 'Deployed')?.status).toBe('True');
        expect(await columns(ns, 'web')).toMatchObject({ READY: 'False', REASON: 'UpgradeError', DEPLOYED: 'True', REVISION: '1' });
        const wide = await columns(ns, 'web', true);
        expect(wide.MESSAGE).toMatch(/^revision 1 keeps serving; .*replicaCount/);
        // The previous release still serves: its Deployment is available, at generation 1.
        const d = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace: ns, name: 'web-nginx' });
        expect(d.metadata?.generation).toBe(1);
        expect(d.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');

        await nginx.patch(ns, 'web', { spec: { replicaCount: 1 } });
        await h.reconcileUntil(key, READY);
        expect(await columns(ns, 'web')).toMatchObject({ READY: 'True', REASON: 'ResourcesReady', DEPLOYED: 'True', REVISION: '1' });
      },
    ));
});
