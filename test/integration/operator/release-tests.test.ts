/**
 * `helm test` as a gate (issue 48 item 5, docs/adr/0081), with real helm 4 on the real control
 * plane, through a waved rollout: a chart whose test hook passes makes every CR Ready with
 * TestSuccess, and its revision is not tested again by the reconciles that follow; the next chart's
 * test hook fails at the canary, which is rolled back and reports Ready=False/TestFailed with
 * helm's account of the test, and the rollout halts before the other CR moves. A revision whose
 * tests were never reported is tested by the next reconcile (docs/adr/0089).
 *
 * The test hooks are Jobs: kwok's fake node runs a Job's pod to success; the failing one is a
 * pod no node matches, which its Job's activeDeadlineSeconds fails.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import {
  activity,
  condition,
  CRs,
  ensureCrd,
  helmExecutionsSince,
  startOperator,
  waitForReconciles,
  type CR,
  type RunningOperator,
  type TestKind,
} from '../../support/operator.js';

const KIND: TestKind = { group: 'tests.helm-operator.example.com', version: 'v1', kind: 'Tested', plural: 'testeds' };
const NAMES = ['tested-a', 'tested-b'];
const WAIT_MS = 180_000;

type Version = 'passing' | 'failing';
const CHART_VERSION: Record<Version, string> = { passing: '0.1.0', failing: '0.2.0' };

async function writeChart(dir: string, v: Version): Promise<string> {
  const root = path.join(dir, v);
  await mkdir(path.join(root, 'templates', 'tests'), { recursive: true });
  await writeFile(path.join(root, 'Chart.yaml'), `apiVersion: v2\nname: tested\nversion: ${CHART_VERSION[v]}\n`);
  await writeFile(
    path.join(root, 'templates', 'config.yaml'),
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  chart: "${CHART_VERSION[v]}"\n`,
  );
  const failing = v === 'failing' ? '  activeDeadlineSeconds: 2\n' : '';
  const unschedulable = v === 'failing' ? '      nodeSelector:\n        tests.example.com/no-such-node: "true"\n' : '';
  const job = `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test
    helm.sh/hook-delete-policy: before-hook-creation
spec:
  backoffLimit: 0
${failing}  template:
    spec:
      restartPolicy: Never
${unschedulable}      containers:
        - name: check
          image: busybox:1.36
          command: ["wget", "-q", "-O-", "http://{{ .Release.Name }}"]
`;
  await writeFile(path.join(root, 'templates', 'tests', 'test-connection.yaml'), job);
  return root;
}

const chartOf = (cr: CR | undefined): string | undefined => cr?.status?.deployedRelease?.chartVersion;

describe('helm test as a gate', () => {
  const kc = testKubeConfig();
  const batch = kc.makeApiClient(BatchV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  const crs = new CRs(kc, KIND);
  const storage = new ReleaseStorage(kc);
  let dir = '';
  let charts: Record<Version, string>;
  let ns = '';
  let removeNamespace: (() => Promise<void>) | undefined;
  let op: RunningOperator | undefined;

  beforeAll(async () => {
    await ensureCrd(kc, KIND);
    dir = await mkdtemp(path.join(os.tmpdir(), 'release-tests-'));
    charts = { passing: await writeChart(dir, 'passing'), failing: await writeChart(dir, 'failing') };
    const created = await createNamespace(kc, 'release-tests');
    ns = created.name;
    removeNamespace = created.remove;
  });
  afterAll(async () => {
    if (op !== undefined) {
      await crs.deleteAll(ns);
      for (const n of NAMES) await crs.waitForGone(ns, n, { timeoutMs: WAIT_MS });
    }
    await op?.stop();
    await removeNamespace?.();
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (v: Version): Promise<void> => {
    await op?.stop();
    const watches = `- group: ${KIND.group}\n  version: ${KIND.version}\n  kind: ${KIND.kind}\n  chart: ${charts[v]}\n  test:\n    enable: true\n    timeout: 60s\n  rollout:\n    canary: 1\n    waveSize: 1\n    healthTimeout: 60s\n    stableFor: 1s\n`;
    const leaderElection = {
      id: 'release-tests-test',
      namespace: ns,
      leaseDurationMs: 6_000,
      renewDeadlineMs: 4_000,
      retryPeriodMs: 1_000,
    };
    // A lease this short can lapse on a loaded machine: the operator then exits, and is started again as its Deployment would.
    op = await startOperator({ watches, namespaces: [ns], maxConcurrentReconciles: 2, leaderElection, restartOnLostLeadership: true });
  };
  const all = async (): Promise<Map<string, CR>> => new Map((await crs.list(ns)).map((c) => [c.metadata.name, c]));
  const testJobUid = async (release: string): Promise<string | undefined> =>
    (await batch.readNamespacedJob({ namespace: ns, name: `${release}-test` })).metadata?.uid;

  /**
   * A revision whose install never reported (its reconcile cancelled by lost leadership, or its
   * status write failed) leaves a status that names no revision and no test: the next reconcile tests it.
   */
  const expectUnreportedTested = async (name: string, job: string | undefined): Promise<void> => {
    const conditions = ((await all()).get(name)?.status?.conditions ?? []).filter((c) => c.type !== 'TestSuccess');
    await crs.patchStatus(ns, name, { deployedRelease: null, conditions });
    await crs.patch(ns, name, { metadata: { annotations: { 'example.com/poke': '2' } } });
    const retested = await crs.waitForCondition(
      ns,
      name,
      { type: 'TestSuccess', status: 'True', reason: 'TestSucceeded' },
      { timeoutMs: WAIT_MS },
    );
    expect(condition(retested, 'TestSuccess')?.message).toBe('helm test passed on revision 1');
    expect(retested.status?.deployedRelease?.revision).toBe(1);
    expect(await testJobUid(name)).not.toBe(job);
  };

  it(
    'passes a chart whose test passes, tests a revision once, and halts the rollout at a canary whose test fails',
    { timeout: 4 * WAIT_MS },
    async () => {
      await start('passing');
      for (const name of NAMES) await crs.create(ns, name, {});
      const passed = await waitFor(
        'every CR Ready with its tests passed',
        async () => {
          const now = await all();
          return NAMES.every(
            (n) => condition(now.get(n), 'Ready')?.status === 'True' && condition(now.get(n), 'TestSuccess')?.reason === 'TestSucceeded',
          )
            ? now
            : undefined;
        },
        { timeoutMs: WAIT_MS, intervalMs: 1_000 },
      );
      expect(condition(passed.get('tested-a'), 'TestSuccess')).toMatchObject({ status: 'True', message: 'helm test passed on revision 1' });

      // A reconcile of the same revision runs no helm, so no test: the hook's Job is the one the install's test made.
      const job = await testJobUid('tested-a');
      expect(job).toBeDefined();
      const before = await activity(op!);
      await crs.patch(ns, 'tested-a', { metadata: { annotations: { 'example.com/poke': '1' } } });
      await waitForReconciles(op!, 'tested-controller', before, 2);
      expect(await helmExecutionsSince(op!, before)).toBe(0);
      expect(await testJobUid('tested-a')).toBe(job);

      await expectUnreportedTested('tested-a', job);

      // The next chart's test fails at the canary: rolled back, TestFailed, and the rollout halts.
      await start('failing');
      const failed = await waitFor(
        'a CR whose test failed',
        async () => {
          const now = await all();
          return NAMES.map((n) => now.get(n)).find((c) => condition(c, 'Ready')?.reason === 'TestFailed');
        },
        { timeoutMs: WAIT_MS, intervalMs: 1_000 },
      );
      const canary = failed.metadata.name;
      const ready = condition(failed, 'Ready');
      expect(ready?.status).toBe('False');
      expect(ready?.message).toContain('helm test failed on revision 2');
      expect(ready?.message).toContain(`Job/${ns}/${canary}-test`);
      expect(condition(failed, 'ReleaseFailed')).toMatchObject({ status: 'True', reason: 'TestFailed' });
      await crs.waitForEvent(ns, canary, 'RollbackSuccessful');
      await crs.waitForCondition(ns, canary, { type: 'Rollout', status: 'False', reason: 'RolloutFailed' }, { timeoutMs: WAIT_MS });
      const other = NAMES.find((n) => n !== canary) ?? '';
      await crs.waitForCondition(ns, other, { type: 'Rollout', status: 'False', reason: 'RolloutHalted' }, { timeoutMs: WAIT_MS });
      // The canary serves the tested chart's objects again, from a rollback revision; the other never moved.
      const records = await storage.records(ns, canary);
      expect(records.length).toBeGreaterThanOrEqual(3);
      expect(records.at(-1)?.status).toBe('deployed');
      expect((await core.readNamespacedConfigMap({ namespace: ns, name: `${canary}-config` })).data).toEqual({ chart: '0.1.0' });
      expect((await storage.records(ns, other)).map((r) => `${r.revision}:${r.status}`)).toEqual(['1:deployed']);
      expect(chartOf((await all()).get(other))).toBe('0.1.0');
    },
  );
});
