import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createNamespace, testKubeConfig } from '../../support/kube.js';
import { CRs, ensureCrd, NGINX, NGINX_CHART, startOperator, type RunningOperator } from '../../support/operator.js';
import { apiRequests } from '../../../bench/compare/cluster.js';

/**
 * Not a test: the per-verb request counts of one converge of MEASURE_N CRs, written to
 * /tmp/apireq-measure-<MEASURE_LABEL>.json for docs/benchmarks.md ("Requests per CR at converge").
 * Skipped unless MEASURE_N is set; the assertion on them is requests-per-release.test.ts.
 */
const N = Number(process.env.MEASURE_N ?? '0');
const scrape = (): Promise<Map<string, number>> => apiRequests(inject('kubectlBin'), inject('kubeconfigPath'));
describe.skipIf(N === 0)('requests of one converge, by verb', () => {
  const kc = testKubeConfig();
  const nginx = new CRs(kc, NGINX);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;
  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'measure');
    op = await startOperator({
      watches: `- {group: example.com, version: v1alpha1, kind: Nginx, chart: ${NGINX_CHART}}\n`,
      namespaces: [ns.name],
      maxConcurrentReconciles: 4,
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });
  it('counts', async () => {
    const before = await scrape();
    const names = Array.from({ length: N }, (_, i) => `m-${i}`);
    await Promise.all(names.map((name) => nginx.create(ns.name, name, { replicaCount: 1 })));
    for (const name of names) await nginx.waitForCondition(ns.name, name, { type: 'Deployed', status: 'True' });
    const after = await scrape();
    const out: Record<string, number> = {};
    for (const [k, v] of after) {
      const d = v - (before.get(k) ?? 0);
      if (d !== 0) out[k] = d;
    }
    await writeFile(`/tmp/apireq-measure-${process.env.MEASURE_LABEL ?? 'x'}.json`, JSON.stringify({ n: N, counts: out }, null, 1));
    expect(N).toBeGreaterThan(0);
  }, 600_000);
});
