/**
 * Shipping version 2 through OLM, judged by OLM's own code (v0.33.0 from source, its operators as
 * processes): `make bundle VERSION=0.0.1`, then `make bundle VERSION=0.0.2`, which writes
 * `spec.replaces: helm-operator.v0.0.1` from the bundle on disk; `run bundle` installs 0.0.1 and
 * `run bundle-upgrade` 0.0.2: OLM's resolver upgrades the Subscription, the 0.0.2 CSV reaches
 * Succeeded, replacing 0.0.1 (which OLM deletes), and the Deployment runs the new image. Bad input:
 * the installed version again, a namespace where nothing was installed.
 */
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEPLOYED, make, ROOT } from '../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { helmOperator, helmOperatorOk, OLM_GROUP, readCsv, waitForCsvPhase, type Csv } from '../support/olm.js';

const PACKAGE = 'helm-operator';
const IMG = (v: string): string => `example.com/nginx-operator:v${v}`;
const csvName = (v: string): string => `${PACKAGE}.v${v}`;

describe('run bundle 0.0.1, then run bundle-upgrade 0.0.2', () => {
  const kc = testKubeConfig();
  const apps = kc.makeApiClient(AppsV1Api);
  const namespaces: { name: string; remove: () => Promise<void> }[] = [];
  let work = '';
  let ns = '';
  const bundleDir = (v: string): string => path.join(work, `bundle-${v}`);
  const csvOf = async (v: string): Promise<Csv> =>
    parse(await readFile(path.join(bundleDir(v), 'manifests', `${PACKAGE}.clusterserviceversion.yaml`), 'utf8')) as Csv;

  beforeAll(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'olm-upgrade-'));
    // OLM: installed by cli.suite.ts before this suite (tier.test.ts).
    // From a clean bundle/: the first version has nothing to replace.
    await rm(path.join(ROOT, 'bundle'), { recursive: true, force: true });
    for (const v of ['0.0.1', '0.0.2']) {
      await make('bundle', `IMG=${IMG(v)}`, `VERSION=${v}`);
      await cp(path.join(ROOT, 'bundle'), bundleDir(v), { recursive: true });
    }
  }, 1_800_000);

  afterAll(async () => {
    // OLM stays until uninstall.suite.ts; the package goes with its catalog server.
    if (ns !== '') await helmOperator(['cleanup', PACKAGE, '-n', ns]).catch(() => undefined);
    for (const n of namespaces) await n.remove();
    await rm(work, { recursive: true, force: true });
  }, 300_000);

  it('make bundle VERSION=0.0.2 after 0.0.1 writes spec.replaces: helm-operator.v0.0.1', async () => {
    expect((await csvOf('0.0.1')).spec.replaces).toBeUndefined();
    expect((await csvOf('0.0.2')).spec).toMatchObject({ version: '0.0.2', replaces: csvName('0.0.1') });
  });

  it('the 0.0.2 CSV reaches Succeeded, replacing 0.0.1, which OLM deletes; the Subscription and Deployment are on 0.0.2', async () => {
    const n = await createNamespace(kc, 'olm-upgrade');
    namespaces.push(n);
    ns = n.name;
    await helmOperatorOk(['run', 'bundle', bundleDir('0.0.1'), '-n', ns, '--install-mode', 'OwnNamespace', '--timeout', '4m']);
    await waitForCsvPhase(kc, { namespace: ns, name: csvName('0.0.1') }, 'Succeeded');

    const out = await helmOperatorOk(['run', 'bundle-upgrade', bundleDir('0.0.2'), '-n', ns, '--timeout', '4m']);
    expect(out).toContain(`Successfully upgraded to "${csvName('0.0.2')}"`);
    const upgraded = await waitForCsvPhase(kc, { namespace: ns, name: csvName('0.0.2') }, 'Succeeded');
    expect(upgraded.spec.replaces).toBe(csvName('0.0.1'));
    await waitFor(
      `CSV ${csvName('0.0.1')} deleted by OLM`,
      async () =>
        readCsv(kc, ns, csvName('0.0.1')).then(
          () => false,
          () => true,
        ),
      { timeoutMs: 120_000 },
    );

    // The catalog operator records the upgrade on the Subscription in a sync of its own, which may
    // come after the new CSV succeeded and the old one is gone (seen once on a slower machine).
    type Sub = { status?: { installedCSV?: string; currentCSV?: string } };
    const custom = kc.makeApiClient(CustomObjectsApi);
    let installed: (string | undefined)[] = [];
    await waitFor(
      `the Subscription to report ${csvName('0.0.2')} installed`,
      async () => {
        const subs = (await custom.listNamespacedCustomObject({
          group: OLM_GROUP,
          version: 'v1alpha1',
          plural: 'subscriptions',
          namespace: ns,
        })) as { items: Sub[] };
        installed = subs.items.map((s) => s.status?.installedCSV);
        return installed.length === 1 && installed[0] === csvName('0.0.2');
      },
      { timeoutMs: 120_000 },
    ).catch(() => undefined);
    expect(installed).toEqual([csvName('0.0.2')]);
    const deployment = await apps.readNamespacedDeployment({ name: DEPLOYED.deployment, namespace: ns });
    expect(deployment.spec?.template.spec?.containers.map((c) => c.image)).toEqual([IMG('0.0.2')]);
    expect(deployment.metadata?.labels).toMatchObject({ 'olm.owner': csvName('0.0.2') });
  });

  it('refuses the installed version again, and a namespace where run bundle installed nothing', async () => {
    const again = await helmOperator(['run', 'bundle-upgrade', bundleDir('0.0.2'), '-n', ns, '--timeout', '1m']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`error: ${csvName('0.0.2')} is already installed in namespace ${ns}`);
    const empty = await createNamespace(kc, 'olm-upgrade-none');
    namespaces.push(empty);
    const none = await helmOperator(['run', 'bundle-upgrade', bundleDir('0.0.2'), '-n', empty.name, '--timeout', '1m']);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`error: no existing operator with package name ${PACKAGE} found in namespace ${empty.name}`);
  });
});
