import { existsSync } from 'node:fs';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, V1ConfigMap, V1ObjectMeta, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HelmClient, type HelmExecution } from '../../../src/helm/index.js';
import { ReleaseStorage } from '../../../src/helm/storage.js';
import { createNamespace, testKubeConfig } from '../../support/kube.js';
import { writeTinyChart } from '../../unit/helm/helpers.js';
import { helmRejection } from '../../support/helm.js';

/**
 * The whole release lifecycle against the real control plane, once per helm major:
 * install → status → upgrade → upgrade with empty values (chart defaults, i.e. --reset-values)
 * → history → rollback → error cases → uninstall.
 */
const binaries = [
  { major: 4 as const, bin: inject('helmBin') },
  { major: 3 as const, bin: inject('helm3Bin') },
].filter((b) => b.bin !== '' && existsSync(b.bin));

describe.each(binaries)('HelmClient with helm v$major', ({ major, bin }) => {
  let kc: KubeConfig;
  let core: CoreV1Api;
  let ns: { name: string; remove: () => Promise<void> };
  let work: string;
  let chartV1: string;
  let chartV2: string;
  let client: HelmClient;
  const events: HelmExecution[] = [];

  const greeting = async (release: string): Promise<string | undefined> =>
    (await core.readNamespacedConfigMap({ namespace: ns.name, name: `${release}-cm` })).data?.greeting;

  beforeAll(async () => {
    kc = testKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    ns = await createNamespace(kc, `helm-v${major}`);
    work = await mkdtemp(path.join(tmpdir(), 'helm-int-'));
    chartV1 = await writeTinyChart(path.join(work, 'v1'), 'tiny', '0.1.0');
    chartV2 = await writeTinyChart(path.join(work, 'v2'), 'tiny', '0.2.0');
    client = new HelmClient({ binary: bin, kubeconfig: inject('kubeconfigPath'), tmpDir: work, observer: (e) => events.push(e) });
  });

  afterAll(async () => {
    await ns.remove();
    await rm(work, { recursive: true, force: true });
  });

  it('detects the version', async () => {
    expect((await client.version()).major).toBe(major);
  });

  it('installs (revision 1) with release labels on the storage Secret', async () => {
    const rel = await client.install({
      release: 'web',
      namespace: ns.name,
      chart: chartV1,
      values: { greeting: 'one' },
      labels: { team: 'a' },
    });
    expect(rel).toMatchObject({
      name: 'web',
      namespace: ns.name,
      revision: 1,
      status: 'deployed',
      chart: { name: 'tiny', version: '0.1.0', appVersion: '1.0.0' },
      notes: expect.stringContaining('Hello from web') as string,
    });
    expect(rel.labels).toBeUndefined(); // install output never carries labels
    expect(rel.manifest).toContain('greeting: "one"');
    expect(JSON.stringify(rel)).not.toContain('"config"');
    expect(await greeting('web')).toBe('one');
    const secret = await core.readNamespacedSecret({ namespace: ns.name, name: 'sh.helm.release.v1.web.v1' });
    expect(secret.metadata?.labels).toMatchObject({ owner: 'helm', name: 'web', status: 'deployed', version: '1', team: 'a' });
    // Discovery is cached under tmpDir for the next helm process, not under a possibly read-only $HOME.
    expect(existsSync(path.join(work, 'helm', 'kube-cache', 'discovery'))).toBe(true);
  });

  it('status returns the deployed revision with its chart', async () => {
    const rel = await client.status('web', ns.name);
    expect(rel).toMatchObject({ name: 'web', revision: 1, status: 'deployed', chart: { name: 'tiny', version: '0.1.0' } });
    // Only helm 4's `get metadata` prints release labels.
    expect(rel?.labels).toEqual(major === 4 ? { team: 'a' } : undefined);
  });

  it('upgrades to revision 2, and an empty values map means chart defaults', async () => {
    const rel = await client.upgrade({ release: 'web', namespace: ns.name, chart: chartV2, values: { greeting: 'two' }, force: true });
    expect(rel).toMatchObject({ revision: 2, status: 'deployed', chart: { version: '0.2.0' } });
    expect(await greeting('web')).toBe('two');
    const reset = await client.upgrade({ release: 'web', namespace: ns.name, chart: chartV2, values: {} });
    expect(reset.revision).toBe(3);
    expect(await greeting('web')).toBe('hello');
  });

  it('history lists every revision, oldest first', async () => {
    const h = await client.history('web', ns.name);
    expect(h.map((e) => [e.revision, e.status, e.chart])).toEqual([
      [1, 'superseded', 'tiny-0.1.0'],
      [2, 'superseded', 'tiny-0.2.0'],
      [3, 'deployed', 'tiny-0.2.0'],
    ]);
    expect((await client.history('web', ns.name, { max: 1 })).map((e) => e.revision)).toEqual([3]);
  });

  it("release storage reads several releases' records with one request, as it reads one", async () => {
    await client.install({ release: 'other', namespace: ns.name, chart: chartV1, values: {} });
    const storage = new ReleaseStorage(kc);
    const byRelease = await storage.recordsOf(ns.name, ['web', 'other', 'never-installed']);
    expect([...byRelease.keys()].sort()).toEqual(['other', 'web']);
    expect(byRelease.get('web')).toEqual(await storage.records(ns.name, 'web'));
    expect(
      byRelease
        .get('web')
        ?.map((r) => [r.revision, r.status])
        .sort(),
    ).toEqual([
      [1, 'superseded'],
      [2, 'superseded'],
      [3, 'deployed'],
    ]);
    expect(byRelease.get('other')).toEqual([{ revision: 1, status: 'deployed', labels: {} }]);
    expect(await storage.recordsOf(ns.name, [])).toEqual(new Map());
    await client.uninstall({ release: 'other', namespace: ns.name });
  });

  it('rolls back to revision 1 (as revision 4)', async () => {
    await client.rollback({ release: 'web', namespace: ns.name, revision: 1, force: true });
    const rel = await client.status('web', ns.name);
    expect(rel).toMatchObject({ revision: 4, status: 'deployed', chart: { version: '0.1.0' } });
    expect(await greeting('web')).toBe('one');
  });

  it('classifies install, schema and ownership failures', async () => {
    expect((await helmRejection(client.install({ release: 'web', namespace: ns.name, chart: chartV1, values: {} }))).reason).toBe(
      'ResourceConflict',
    );
    const schema = await helmRejection(client.upgrade({ release: 'web', namespace: ns.name, chart: chartV1, values: { greeting: 5 } }));
    expect(schema.reason).toBe('ValuesSchemaInvalid');
    // A ConfigMap helm does not own, with the name the chart renders for release "taken".
    const body = Object.assign(new V1ConfigMap(), { metadata: Object.assign(new V1ObjectMeta(), { name: 'taken-cm' }), data: { x: 'y' } });
    await core.createNamespacedConfigMap({ namespace: ns.name, body });
    const taken = await helmRejection(client.install({ release: 'taken', namespace: ns.name, chart: chartV1, values: {} }));
    expect(taken.reason).toBe('ResourceConflict');
    expect(taken.summary).toMatch(/exists and cannot be imported into the current release/);
    await client.uninstall({ release: 'taken', namespace: ns.name });
  });

  // Installs skip helm's client-side OpenAPI check (args.ts): the API server's field validation is
  // what refuses an undeclared field, exactly as it did with the check on.
  it('leaves an undeclared field to the API server: v4 (server-side apply) refuses it, v3 warns', async () => {
    const bad = await writeTinyChart(path.join(work, 'undeclared'), 'undeclared', '0.1.0');
    await appendFile(path.join(bad, 'templates', 'cm.yaml'), 'notAConfigMapField: 1\n');
    const install = client.install({ release: 'undeclared', namespace: ns.name, chart: bad, values: {} });
    if (major === 4) {
      const err = await helmRejection(install);
      expect(err.summary).toMatch(/notAConfigMapField: field not declared in schema/);
      expect((await core.listNamespacedConfigMap({ namespace: ns.name })).items.map((c) => c.metadata?.name)).not.toContain(
        'undeclared-cm',
      );
    } else {
      await expect(install).resolves.toMatchObject({ status: 'deployed' });
      expect(await greeting('undeclared')).toBe('hello');
    }
    await client.uninstall({ release: 'undeclared', namespace: ns.name });
  });

  it('impersonates with --kube-as-user', async () => {
    const nobody = new HelmClient({ binary: bin, kubeconfig: inject('kubeconfigPath'), tmpDir: work, impersonate: 'nobody' });
    const err = await helmRejection(nobody.status('web', ns.name));
    expect(err.reason).toBe('KubernetesAPIError');
    expect(err.summary).toMatch(/forbidden: User "nobody"/);
  });

  it('reads a deployed latest revision by name, and settles nothing once another revision exists or it is gone', async () => {
    const storage = new ReleaseStorage(kc);
    await client.install({ release: 'named', namespace: ns.name, chart: chartV1, values: {}, labels: { team: 'n' } });
    expect(await storage.deployed(ns.name, 'named', 1)).toEqual([{ revision: 1, status: 'deployed', labels: { team: 'n' } }]);
    await client.upgrade({ release: 'named', namespace: ns.name, chart: chartV2, values: {}, labels: { team: 'n' } });
    // Revision 1 is superseded and has a successor: only a full read can tell the state now.
    expect(await storage.deployed(ns.name, 'named', 1)).toBeUndefined();
    expect(await storage.deployed(ns.name, 'named', 2)).toEqual([{ revision: 2, status: 'deployed', labels: { team: 'n' } }]);
    expect(await storage.deployed(ns.name, 'named', 2)).toEqual((await storage.records(ns.name, 'named')).filter((r) => r.revision === 2));
    await client.uninstall({ release: 'named', namespace: ns.name });
    expect(await storage.deployed(ns.name, 'named', 2)).toBeUndefined();
  });

  it('reports each release of a batched uninstall as helm finishes it, while it goes on with the next', async () => {
    // `slow` runs a pre-delete hook Job, so its uninstall lasts at least until the Job completes.
    const slowChart = await writeTinyChart(path.join(work, 'slow'), 'slow', '0.1.0');
    await writeFile(
      path.join(slowChart, 'templates', 'hook.yaml'),
      [
        'apiVersion: batch/v1',
        'kind: Job',
        'metadata:',
        '  name: {{ .Release.Name }}-pre-delete',
        '  annotations:',
        '    helm.sh/hook: pre-delete',
        '    helm.sh/hook-delete-policy: hook-succeeded',
        'spec:',
        '  backoffLimit: 0',
        '  template:',
        '    spec:',
        '      restartPolicy: Never',
        '      containers: [{ name: wait, image: busybox:1.36, command: ["true"] }]',
        '',
      ].join('\n'),
    );
    await client.install({ release: 'quick', namespace: ns.name, chart: chartV1, values: {} });
    await client.install({ release: 'slow', namespace: ns.name, chart: slowChart, values: {} });
    const storage = new ReleaseStorage(kc);
    const reported: string[] = [];
    let slowWhenQuickWasReported: Promise<unknown[]> | undefined;
    const result = await client.uninstall({
      release: 'quick',
      also: ['slow'],
      namespace: ns.name,
      onUninstalled: (release) => {
        reported.push(release);
        if (release === 'quick') slowWhenQuickWasReported = storage.records(ns.name, 'slow');
      },
    });
    expect(result).toEqual({ found: true });
    expect(reported).toEqual(['quick', 'slow']);
    // Reported while helm was still at the next release: its hook had not let it go yet.
    expect(await slowWhenQuickWasReported).not.toEqual([]);
    expect(await storage.records(ns.name, 'quick')).toEqual([]);
    expect(await storage.records(ns.name, 'slow')).toEqual([]);
  });

  it('uninstalls; afterwards status is undefined, history empty, uninstall not found', async () => {
    expect(await client.uninstall({ release: 'web', namespace: ns.name, wait: true })).toEqual({ found: true });
    expect(await client.status('web', ns.name)).toBeUndefined();
    expect(await client.history('web', ns.name)).toEqual([]);
    expect(await client.uninstall({ release: 'web', namespace: ns.name })).toEqual({ found: false });
    expect(events.every((e) => e.durationMs >= 0)).toBe(true);
    expect(client.executions).toBe(events.length);
  });
});
