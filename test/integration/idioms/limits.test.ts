import { createHash } from 'node:crypto';
import { cp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, testKubeConfig, waitFor } from '../../support/kube.js';
import { condition, CRs, ensureCrd, type TestKind } from '../../support/operator.js';
import { killAll, spawnOperator, watchEntry, watchesFile, type OperatorProcess } from '../production/support.js';
import { IDIOM_CHARTS } from './cases.js';
import { Cluster } from './harness.js';

const BIG: TestKind = { group: 'idioms.example.com', version: 'v1', kind: 'IdiomBig', plural: 'idiombigs' };
const LEGACY: TestKind = { group: 'idioms.example.com', version: 'v1', kind: 'IdiomLegacy', plural: 'idiomlegacys' };
const MIB = 2 ** 20;

/**
 * What a chart cannot do on this cluster is refused with a message that says why, and leaves
 * nothing behind: a release larger than helm can store (each revision is one Secret, at most
 * 1 MiB), and a chart whose `kubeVersion` excludes the cluster's version.
 */
describe('releases helm cannot install here', () => {
  const kc = testKubeConfig();
  const cluster = new Cluster(kc);
  const core = kc.makeApiClient(CoreV1Api);
  const big = new CRs(kc, BIG);
  const legacy = new CRs(kc, LEGACY);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let watches: Awaited<ReturnType<typeof watchesFile>>;
  let op: OperatorProcess;

  const dashboards = async (release: string): Promise<Record<string, string>> => {
    const list = await core.listNamespacedConfigMap({ namespace: ns.name, labelSelector: `app.kubernetes.io/instance=${release}` });
    return Object.fromEntries(
      list.items.map((cm) => [cm.metadata?.name ?? '', createHash('sha256').update(JSON.stringify(cm.data)).digest('hex')]),
    );
  };
  const failure = (kind: CRs, name: string, reason: string) =>
    kind.waitForCondition(ns.name, name, { type: 'ReleaseFailed', status: 'True', reason }, { timeoutMs: 60_000 });

  beforeAll(async () => {
    await ensureCrd(kc, BIG);
    await ensureCrd(kc, LEGACY);
    ns = await createNamespace(kc, 'idiom-limits');
    watches = await watchesFile('');
    // The web chart as a chart that still only supports old clusters.
    const old = path.join(watches.dir, 'legacy');
    await cp(path.join(IDIOM_CHARTS, 'web'), old, { recursive: true });
    const chartYaml = path.join(old, 'Chart.yaml');
    await writeFile(chartYaml, (await readFile(chartYaml, 'utf8')).replace(/^kubeVersion: .*$/m, 'kubeVersion: "<1.20.0-0"'));
    await watches.write(watchEntry(BIG, path.join(IDIOM_CHARTS, 'big')) + watchEntry(LEGACY, old));
    op = spawnOperator({ watchesFile: watches.file, namespace: ns.name });
    await op.metricsUrl();
  });
  afterAll(async () => {
    await killAll();
    await ns.remove();
    await watches.remove();
  });

  it('refuses to install a release over helm’s 1 MiB storage limit, says so, and leaves nothing behind', async () => {
    await big.create(ns.name, 'huge', { chunks: 3 });
    const cr = await failure(big, 'huge', 'InstallError');
    const message = condition(cr, 'ReleaseFailed')?.message ?? '';
    expect(message).toMatch(/^release too large for helm's storage: .*1 MiB/);
    expect(message).toContain('sh.helm.release.v1.huge.v1');
    expect(condition(cr, 'Deployed')).toMatchObject({ status: 'False', reason: 'InstallError', message });
    await big.waitForEvent(ns.name, 'huge', (e) => e.reason === 'InstallFailed' && e.message === message);
    // helm stores the revision before it creates anything: nothing was created.
    expect(await cluster.releaseSecrets(ns.name, 'huge')).toEqual([]);
    expect(await dashboards('huge')).toEqual({});
    expect(cr.status?.deployedRelease).toBeUndefined();
  });

  it('refuses an upgrade over the limit and keeps serving the deployed revision untouched', async () => {
    await big.create(ns.name, 'grow', {});
    await big.waitForCondition(ns.name, 'grow', { type: 'Deployed', status: 'True', reason: 'InstallSuccessful' });
    const [stored] = await cluster.releaseSecrets(ns.name, 'grow');
    expect(stored?.bytes).toBeGreaterThan(0.8 * MIB);
    const before = await dashboards('grow');
    expect(Object.keys(before).sort()).toEqual(['grow-dashboards-0', 'grow-dashboards-1']);

    await big.patch(ns.name, 'grow', { spec: { chunks: 3 } });
    const cr = await failure(big, 'grow', 'UpgradeError');
    expect(condition(cr, 'ReleaseFailed')?.message).toMatch(
      /^release too large for helm's storage: .*1 MiB.*sh\.helm\.release\.v1\.grow\.v2/,
    );
    // Revision 1 still deployed, alone, and its objects as they were: no third ConfigMap, no new content.
    expect(condition(cr, 'Deployed')?.status).toBe('True');
    expect(cr.status?.deployedRelease?.revision).toBe(1);
    expect((await cluster.releaseSecrets(ns.name, 'grow')).map((s) => `${s.revision}:${s.record().info?.status}`)).toEqual(['1:deployed']);
    expect(await dashboards('grow')).toEqual(before);
  });

  it('refuses a chart whose kubeVersion excludes the cluster, naming both versions', async () => {
    await legacy.create(ns.name, 'old', {});
    const cr = await failure(legacy, 'old', 'InstallError');
    expect(condition(cr, 'ReleaseFailed')?.message).toMatch(
      /chart requires kubeVersion: <1\.20\.0-0 which is incompatible with Kubernetes v1\.\d+/,
    );
    expect(await cluster.releaseSecrets(ns.name, 'old')).toEqual([]);
    const apps = kc.makeApiClient(AppsV1Api);
    expect((await apps.listNamespacedDeployment({ namespace: ns.name, labelSelector: 'app.kubernetes.io/instance=old' })).items).toEqual(
      [],
    );
    await waitFor('an InstallFailed event', async () => (await legacy.events(ns.name, 'old')).some((e) => e.reason === 'InstallFailed'));
  });
});
