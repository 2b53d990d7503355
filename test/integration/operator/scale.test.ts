import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { CRs, ensureCrd, NGINX, NGINX_CHART, startOperator, type RunningOperator } from '../../support/operator.js';

/** Three times the bound: enough to fill every worker and queue the rest. Converges at scale are the bench's. */
const COUNT = 12;
const BOUND = 4;

describe('many CRs at once', () => {
  const kc = testKubeConfig();
  const crs = new CRs(kc, NGINX);
  const storage = new ReleaseStorage(kc);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'scale');
    op = await startOperator({
      watches: `- group: example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: ${NGINX_CHART}\n  maxConcurrentReconciles: ${BOUND}\n`,
      namespaces: [ns.name],
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it(`converges ${COUNT} CRs applied together without exceeding ${BOUND} concurrent reconciles`, async () => {
    const controller = op.operator.manager.get('nginx-controller');
    expect(controller).toBeDefined();
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, controller?.activeWorkers() ?? 0);
    }, 2);
    try {
      const names = Array.from({ length: COUNT }, (_, i) => `app-${String(i).padStart(2, '0')}`);
      await Promise.all(names.map((n) => crs.create(ns.name, n, { replicaCount: 1 })));
      await waitFor(
        `all ${COUNT} CRs to be Deployed`,
        async () => {
          const all = await Promise.all(names.map((n) => crs.get(ns.name, n)));
          return all.every((cr) => cr?.status?.conditions?.some((c) => c.type === 'Deployed' && c.status === 'True'));
        },
        { timeoutMs: 240_000, intervalMs: 1_000 },
      );
      for (const n of names) expect((await storage.records(ns.name, n)).map((r) => `${r.revision}:${r.status}`)).toEqual(['1:deployed']);
    } finally {
      clearInterval(sampler);
    }
    expect(peak).toBeLessThanOrEqual(BOUND);
    expect(peak).toBeGreaterThan(1); // the bound is a ceiling, not a serialisation
  });
});
