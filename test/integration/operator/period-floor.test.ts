/**
 * A CR author sets `helm.sdk.operatorframework.io/reconcile-period` themselves: `1ms` would make
 * the operator reconcile their CR in a busy loop, for every tenant's cost. The annotation is
 * raised to the floor (here 2s, set for the test's pace; 30s by default) with a warning event, so
 * a `1ms` CR reconciles no more often than a control CR that asks for the floor itself, counted by
 * the operator's own reconcile metrics over the same window.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { activity, CRs, ensureCrd, startOperator, waitForReconciles, type RunningOperator, type TestKind } from '../../support/operator.js';

const TIGHT: TestKind = { group: 'floor.example.com', version: 'v1', kind: 'Tight', plural: 'tights' };
const PACED: TestKind = { group: 'floor.example.com', version: 'v1', kind: 'Paced', plural: 'paceds' };
const PERIOD = 'helm.sdk.operatorframework.io/reconcile-period';
const FLOOR_MS = 2_000;

describe('the reconcile-period annotation has a floor', () => {
  const kc = testKubeConfig();
  const tights = new CRs(kc, TIGHT);
  const paceds = new CRs(kc, PACED);
  let dir = '';
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let op: RunningOperator;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'period-floor-'));
    const chart = path.join(dir, 'tiny');
    await mkdir(path.join(chart, 'templates'), { recursive: true });
    await writeFile(path.join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: tiny\nversion: 0.1.0\n');
    await writeFile(
      path.join(chart, 'templates', 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-tiny\ndata:\n  a: "1"\n',
    );
    await ensureCrd(kc, TIGHT);
    await ensureCrd(kc, PACED);
    ns = await createNamespace(kc, 'period-floor');
    op = await startOperator({
      watches: [TIGHT, PACED].map((k) => `- {group: ${k.group}, version: ${k.version}, kind: ${k.kind}, chart: ${chart}}\n`).join(''),
      namespaces: [ns.name],
      annotationPeriodFloorMs: FLOOR_MS,
    });
    await tights.create(ns.name, 'spinner', {}, { [PERIOD]: '1ms' });
    await paceds.create(ns.name, 'control', {}, { [PERIOD]: `${FLOOR_MS / 1000}s` });
    await tights.waitForCondition(ns.name, 'spinner', { type: 'Deployed', status: 'True' });
    await paceds.waitForCondition(ns.name, 'control', { type: 'Deployed', status: 'True' });
  });
  afterAll(async () => {
    await op.stop();
    await ns.remove();
    await rm(dir, { recursive: true, force: true });
  });

  it('reconciles a 1ms CR no more often than a CR asking for the floor, and says so in a warning event', async () => {
    const since = await activity(op);
    await waitForReconciles(op, 'paced-controller', since, 5);
    const now = await activity(op);
    const count = (c: string): number => (now.reconciles.get(c) ?? 0) - (since.reconciles.get(c) ?? 0);
    // Same period, spread ±5 %: at most a couple apart over the window. Unfloored, 1ms gives thousands.
    expect(count('tight-controller')).toBeLessThanOrEqual(count('paced-controller') + 2);
    const warning = await waitFor('the floor warning event', async () =>
      (await tights.events(ns.name, 'spinner')).find((e) => e.reason === 'InvalidAnnotation' && e.type === 'Warning'),
    );
    expect(warning.message).toBe(`annotation ${PERIOD}: 1ms is shorter than the 2s a CR may ask for; using 2s`);
    expect((await tights.get(ns.name, 'spinner'))?.status?.conditions?.find((c) => c.type === 'Deployed')?.status).toBe('True');
  });
});
