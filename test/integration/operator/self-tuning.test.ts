/**
 * `--max-concurrent-reconciles` left unset (ADR 0059): the reconciles of every kind pass one gate
 * whose width starts from the CPU limit of the operator's cgroup and tunes itself; the controllers'
 * workers are the ceiling. CRs of two kinds converge through it, and the width is a metric.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tunerBounds } from '../../../src/runtime/concurrency-tuner.js';
import { cpuLimit } from '../../../src/runtime/cpu-limit.js';
import { createNamespace, testKubeConfig } from '../../support/kube.js';
import { CRs, ensureCrd, fixtureChart, startOperator, type RunningOperator, type TestKind } from '../../support/operator.js';
import { sample } from '../../support/prometheus.js';

const APPLES: TestKind = { group: 'tuning.example.com', version: 'v1', kind: 'Apple', plural: 'apples' };
const PEARS: TestKind = { group: 'tuning.example.com', version: 'v1', kind: 'Pear', plural: 'pears' };

describe('self-tuning concurrency', () => {
  const kc = testKubeConfig();
  const kinds = [new CRs(kc, APPLES), new CRs(kc, PEARS)];
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  beforeAll(async () => {
    const chart = fixtureChart('tenant-app');
    for (const kind of [APPLES, PEARS]) await ensureCrd(kc, kind);
    ns = await createNamespace(kc, 'self-tuning');
    op = await startOperator({
      watches: [APPLES, PEARS].map((k) => `- {group: ${k.group}, version: ${k.version}, kind: ${k.kind}, chart: ${chart}}\n`).join(''),
      namespaces: [ns.name],
      selfTuningConcurrency: true,
    });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
  });

  it('converges CRs of two kinds through the tuned gate and exposes its width', async () => {
    // Release names are per namespace: each kind's CRs have names of their own.
    const names = (i: number): string[] => ['a', 'b', 'c', 'd'].map((n) => `${n}${i}`);
    for (const [i, crs] of kinds.entries()) for (const name of names(i)) await crs.create(ns.name, name, {});
    for (const [i, crs] of kinds.entries())
      for (const name of names(i)) await crs.waitForCondition(ns.name, name, { type: 'Deployed', status: 'True' });
    const bounds = tunerBounds((await cpuLimit()).cpus);
    const text = await op.metrics.metrics();
    // The workers are the ceiling; the gate's width is within the bounds.
    expect(sample(text, 'controller_runtime_max_concurrent_reconciles', { controller: 'apple-controller' })).toBe(bounds.max);
    const limit = sample(text, 'helm_operator_concurrency_limit');
    expect(limit).toBeGreaterThanOrEqual(bounds.min);
    expect(limit).toBeLessThanOrEqual(bounds.max);
  });
});
