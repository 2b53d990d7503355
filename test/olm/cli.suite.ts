/**
 * operator-sdk's OLM commands from our CLI, against the test control plane (whose nodes run no
 * containers): `olm install` (OLM v0.33.0 from source: CRDs applied, its operators started as
 * processes on this machine), `olm status`, `run bundle ./bundle` to a Succeeded CSV (a one-bundle
 * catalog served on loopback), `cleanup`, `olm uninstall`, each judged on the cluster and on the
 * processes; and bad input: no OLM, a missing or invalid bundle directory, an unsupported install
 * mode, OLM installed twice.
 */
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApiextensionsV1Api, AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterStateDir, runningPid } from '../../src/olm/local-processes.js';
import { DEPLOYED, make, ROOT } from '../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { exited, helmOperator, helmOperatorOk, listeningAddresses, olmCrds, OLM_GROUP, readCsv } from '../support/olm.js';

const PACKAGE = 'helm-operator';
const CSV_NAME = `${PACKAGE}.v0.0.1`;
const BUNDLE = path.join(ROOT, 'bundle');

describe('helm-operator olm install / status / uninstall, run bundle, cleanup', () => {
  const kc = testKubeConfig();
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const objects = kc.makeApiClient(CustomObjectsApi);
  const stateDir = clusterStateDir(kc.getCurrentCluster()?.server ?? '');
  let ns: { name: string; remove: () => Promise<void> } | undefined;
  let work = '';

  beforeAll(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'olm-cli-'));
    ns = await createNamespace(kc, 'olm-cli');
    await make('bundle', 'IMG=example.com/nginx-operator:v0.0.1', 'VERSION=0.0.1');
  }, 1_800_000);

  afterAll(async () => {
    // OLM stays installed for the suites after this one (tier.test.ts uninstalls it last).
    await ns?.remove();
    await rm(work, { recursive: true, force: true });
  }, 300_000);

  it('without OLM: olm status and run bundle say OLM is not installed', async () => {
    expect(await olmCrds(kc)).toEqual([]);
    const status = await helmOperator(['olm', 'status']);
    expect(status.code).toBe(1);
    expect(status.stderr).toMatch(/^error: no existing OLM installation found in this cluster .*helm-operator olm install/m);
    const run = await helmOperator(['run', 'bundle', BUNDLE, '-n', ns!.name]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: OLM is not installed in this cluster .*run helm-operator olm install first/m);
  });

  it('olm install applies OLM’s CRDs and starts its operators on loopback; a second install is refused', async () => {
    expect((await helmOperator(['olm', 'install', '--version', '0.28.0'])).stderr).toMatch(
      /OLM 0\.28\.0 is not available: this runtime builds OLM v0\.33\.0/,
    );
    await helmOperatorOk(['olm', 'install', '--timeout', '5m'], 1_800_000);
    expect(await olmCrds(kc)).toEqual(
      [
        'catalogsources',
        'clusterserviceversions',
        'installplans',
        'olmconfigs',
        'operatorconditions',
        'operatorgroups',
        'operators',
        'subscriptions',
      ].map((p) => `${p}.${OLM_GROUP}`),
    );
    const cfg = (await objects.getClusterCustomObject({ group: OLM_GROUP, version: 'v1', plural: 'olmconfigs', name: 'cluster' })) as {
      status?: { conditions?: unknown[] };
    };
    expect(cfg.status?.conditions?.length).toBeGreaterThan(0);
    for (const name of ['olm-operator', 'catalog-operator']) {
      const pid = await runningPid(stateDir, name);
      expect(pid, name).toBeTypeOf('number');
      const addresses = await waitFor(`${name} to listen`, async () => {
        const a = await listeningAddresses(pid!);
        return a.length > 0 ? a : undefined;
      });
      expect(
        addresses.filter((a) => !/^(127\.0\.0\.1|\[::1\]):/.test(a)),
        name,
      ).toEqual([]);
    }
    const again = await helmOperator(['olm', 'install']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/OLM is already installed in this cluster/);
  }, 1_800_000);

  it('olm status lists the CRDs and the running operators', async () => {
    const out = await helmOperatorOk(['olm', 'status']);
    expect(out).toMatch(/^OLM version: v0\.33\.0$/m);
    expect(out).toMatch(/^subscriptions\.operators\.coreos\.com\s+CustomResourceDefinition\s+Installed$/m);
    expect(out).toMatch(/^olm-operator\s+olm\s+Process \(this machine\)\s+Running \(pid \d+\)$/m);
    expect(out).toMatch(/^OLM is running$/m);
  });

  it('run bundle refuses a missing directory, an invalid bundle and an install mode the CSV does not support', async () => {
    const missing = await helmOperator(['run', 'bundle', './no-such-bundle', '-n', ns!.name]);
    expect(missing.stderr).toMatch(/^error: bundle directory \.\/no-such-bundle does not exist/m);
    const notBundle = await helmOperator(['run', 'bundle', path.join(ROOT, 'config'), '-n', ns!.name]);
    expect(notBundle.stderr).toMatch(/is not a bundle directory: it has no metadata\/annotations\.yaml/);
    // A bundle whose CSV is not YAML: opm cannot read it.
    const broken = path.join(work, 'broken-bundle');
    await cp(BUNDLE, broken, { recursive: true });
    await writeFile(
      path.join(broken, 'manifests', `${PACKAGE}.clusterserviceversion.yaml`),
      'kind: ClusterServiceVersion\nspec: [unclosed\n',
    );
    const invalid = await helmOperator(['run', 'bundle', broken, '-n', ns!.name]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^error: cannot read the bundle .*broken-bundle \(opm render\)/m);
    const mode = await helmOperator(['run', 'bundle', BUNDLE, '-n', ns!.name, '--install-mode', 'MultiNamespace=a']);
    expect(mode.stderr).toMatch(/MultiNamespace=<ns1>,<ns2>/);
    // Nothing was created for any of them.
    const subs = (await objects.listNamespacedCustomObject({
      group: OLM_GROUP,
      version: 'v1alpha1',
      plural: 'subscriptions',
      namespace: ns!.name,
    })) as { items: unknown[] };
    expect(subs.items).toEqual([]);
  });

  it('run bundle ./bundle: OLM installs the CSV to Succeeded from a catalog served on loopback', async () => {
    const out = await helmOperatorOk(['run', 'bundle', BUNDLE, '-n', ns!.name, '--install-mode', 'OwnNamespace', '--timeout', '4m']);
    expect(out).toContain(`OLM has successfully installed "${CSV_NAME}"`);
    const csv = await readCsv(kc, ns!.name, CSV_NAME);
    expect(csv.status?.phase).toBe('Succeeded');
    const source = (await objects.getNamespacedCustomObject({
      group: OLM_GROUP,
      version: 'v1alpha1',
      plural: 'catalogsources',
      namespace: ns!.name,
      name: `${PACKAGE}-catalog`,
    })) as { spec: { address: string } };
    expect(source.spec.address).toMatch(/^127\.0\.0\.1:\d+$/);
    const og = (await objects.getNamespacedCustomObject({
      group: OLM_GROUP,
      version: 'v1',
      plural: 'operatorgroups',
      namespace: ns!.name,
      name: 'helm-operator-og',
    })) as { spec: { targetNamespaces?: string[] } };
    expect(og.spec.targetNamespaces).toEqual([ns!.name]);
    const deployment = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: DEPLOYED.deployment, namespace: ns!.name });
    expect(deployment.metadata?.labels).toMatchObject({ 'olm.owner': CSV_NAME });
    await ext.readCustomResourceDefinition({ name: DEPLOYED.crd });
    expect(await runningPid(path.join(stateDir, 'catalogs', `${ns!.name}.${PACKAGE}`), 'catalog-serve')).toBeTypeOf('number');
  }, 600_000);

  it('cleanup removes the Subscription, CSV, CatalogSource, its server, the CRD and the OperatorGroup', async () => {
    const catalogDir = path.join(stateDir, 'catalogs', `${ns!.name}.${PACKAGE}`);
    const server = await runningPid(catalogDir, 'catalog-serve');
    const out = await helmOperatorOk(['cleanup', PACKAGE, '-n', ns!.name]);
    expect(out).toContain(`operator "${PACKAGE}" uninstalled`);
    const list = async (plural: string, version = 'v1alpha1'): Promise<unknown[]> =>
      ((await objects.listNamespacedCustomObject({ group: OLM_GROUP, version, plural, namespace: ns!.name })) as { items: unknown[] })
        .items;
    expect(await list('subscriptions')).toEqual([]);
    expect(await list('clusterserviceversions')).toEqual([]);
    expect(await list('catalogsources')).toEqual([]);
    expect(await list('operatorgroups', 'v1')).toEqual([]);
    await waitFor('the CRD to be gone', async () =>
      ext.readCustomResourceDefinition({ name: DEPLOYED.crd }).then(
        () => undefined,
        () => true,
      ),
    );
    expect(await runningPid(catalogDir, 'catalog-serve')).toBeUndefined();
    expect(exited(server!)).toBe(true);
    const again = await helmOperator(['cleanup', PACKAGE, '-n', ns!.name]);
    expect(again.stderr).toMatch(/no operator with package name helm-operator found in namespace/);
  }, 300_000);
});
