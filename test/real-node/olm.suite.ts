/**
 * OLM for real on the real node (docs/olm.md, docs/adr/0064): `hack/olm-images.sh push` builds OLM's
 * images here and pushes them to the loopback registry; `helm-operator olm install` runs olm-operator
 * and catalog-operator as Deployments of that image, their containers on the real node; `run bundle
 * <bundle image>` serves the catalog from a registry pod of the opm image, OLM installs the CSV and
 * its operator pod runs on the real node and reconciles a CR to Ready; `cleanup` and `olm uninstall`
 * leave nothing of either behind.
 *
 * After deploy.suite.ts in the tier (it builds and pushes the operator image); run alone, this builds
 * what is missing. Root only, like the tier.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { DEPLOYED, gone, kubectl, ROOT } from '../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { helmOperator, helmOperatorOk, OLM_GROUP, waitForCsvPhase } from '../support/olm.js';
import { CRs, NGINX } from '../support/operator.js';
import { hack, make, NODE, operatorImage, POD_NET, ready, realContainer, registry, TAINT } from './node.js';

const PACKAGE = 'helm-operator';
const CSV = `${PACKAGE}.v0.0.1`;
const SAMPLE = 'olm-sample';

describe('OLM as pods on the real node: olm install, run bundle <image>, cleanup, olm uninstall', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const crs = new CRs(kc, NGINX);
  let ns = { name: '', remove: async (): Promise<void> => {} };
  let bundleImg = '';

  const olmList = async (plural: string, namespace?: string): Promise<string[]> => {
    const list = (namespace === undefined
      ? await custom.listClusterCustomObject({ group: OLM_GROUP, version: 'v1alpha1', plural })
      : await custom.listNamespacedCustomObject({ group: OLM_GROUP, version: 'v1alpha1', plural, namespace })) as { items: { metadata: { namespace: string; name: string } }[] };
    return list.items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
  };
  const podsOnNode = async (namespace: string, labelSelector?: string): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace, fieldSelector: `spec.nodeName=${NODE}`, ...(labelSelector === undefined ? {} : { labelSelector }) })).items.filter((p) => p.metadata?.deletionTimestamp === undefined);
  /** The one pod, Ready on the real node with its container running in containerd: what kwok never gives. */
  const realPod = async (namespace: string, labelSelector: string, container: string): Promise<{ pod: V1Pod; uid: string }> => {
    const pod = await waitFor(`a Ready pod ${labelSelector} in ${namespace} on ${NODE}`, async () => {
      const [p] = await podsOnNode(namespace, labelSelector);
      return ready(p) ? p : undefined;
    }, { timeoutMs: 120_000 });
    expect(pod.status?.podIP).toMatch(POD_NET);
    return { pod, uid: (await realContainer(pod, container)).uid };
  };

  beforeAll(async () => {
    const reg = await registry();
    const img = await operatorImage();
    // The operator image deploy.suite.ts pushed; built here when this suite runs alone.
    if ((await fetch(`http://${reg}/v2/helm-operator/manifests/real-node`, { method: 'HEAD', headers: { accept: 'application/vnd.oci.image.manifest.v1+json' } })).status !== 200) {
      await make('docker-build', 'docker-push', `IMG=${img}`, 'CONTAINER_TOOL=podman');
    }
    const chart = parse(await readFile(path.join(ROOT, 'helm-charts/nginx/Chart.yaml'), 'utf8')) as { appVersion: string };
    await hack('stand-ins.sh', 'push', `nginx:${chart.appVersion}`);
    await hack('olm-images.sh', 'push');
    // The bundle of that image, its Deployment on the real node (REAL_NODE=1: its nodeSelector and toleration in the CSV).
    bundleImg = `${reg}/${PACKAGE}-bundle:v0.0.1`;
    await make('bundle', `IMG=${img}`, 'REAL_NODE=1');
    await make('bundle-build', 'bundle-push', `BUNDLE_IMG=${bundleImg}`, 'CONTAINER_TOOL=podman');
    ns = await createNamespace(kc, 'olm-real');
  });

  afterAll(async () => {
    // A failed run must not leave OLM's pods on the node for the suites after it.
    await helmOperator(['cleanup', PACKAGE, '-n', ns.name, '--timeout', '2m']).catch(() => undefined);
    await helmOperator(['olm', 'uninstall', '--timeout', '2m']).catch(() => undefined);
    await ns.remove();
  }, 300_000);

  it('olm install: olm-operator and catalog-operator Deployments Available, their containers running on the real node', async () => {
    const out = await helmOperatorOk(['olm', 'install', '--timeout', '4m']);
    expect(out).toMatch(/as Deployments in namespace olm \(image quay\.io\/operator-framework\/olm:v/);
    for (const name of ['olm-operator', 'catalog-operator']) {
      const d = await apps.readNamespacedDeployment({ name, namespace: 'olm' });
      expect(d.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
      // The image built here (hack/olm-images.sh), under upstream's name, uid 65532 as its Dockerfile says.
      expect((await realPod('olm', `app=${name}`, name)).uid).toBe('65532');
    }
    expect(await helmOperatorOk(['olm', 'status'])).toMatch(/olm-operator\s+olm\s+Deployment\s+Available/);
  });

  it('run bundle <bundle image>: a registry pod of the opm image serves it, the CSV Succeeds, the operator pod runs on the real node', async () => {
    const out = await helmOperatorOk(['run', 'bundle', bundleImg, '--use-http', '-n', ns.name, '--timeout', '4m']);
    expect(out).toContain(`OLM has successfully installed "${CSV}"`);
    await waitForCsvPhase(kc, { namespace: ns.name, name: CSV }, 'Succeeded');
    const registryPod = await realPod(ns.name, `helm-operator.dev/run-bundle-package=${PACKAGE}`, 'registry-grpc');
    expect(registryPod.uid).toBe('65532');
    expect(registryPod.pod.spec?.containers[0]?.image).toMatch(/^quay\.io\/operator-framework\/opm:v/);
    // OLM installed from the catalog's embedded manifests: no bundle-unpack Job.
    expect((await kc.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: ns.name })).items.map((c) => c.metadata?.name).sort()).toEqual([`${PACKAGE}-catalog`, 'kube-root-ca.crt']);
    // The operator's image runs as uid 1001, under the Deployment OLM created from the CSV.
    expect((await realPod(ns.name, 'control-plane=controller-manager', 'manager')).uid).toBe('1001');
  });

  it("a CR of the bundle's kind is reconciled to Ready by the operator OLM installed, its nginx pods on the real node", async () => {
    const cr = parse(await readFile(path.join(ROOT, DEPLOYED.sample), 'utf8')) as { metadata: { name: string }; spec: Record<string, unknown> };
    cr.metadata.name = SAMPLE;
    cr.spec.nodeSelector = { [TAINT]: 'true' };
    cr.spec.tolerations = [{ key: TAINT, operator: 'Exists', effect: 'NoSchedule' }];
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'olm-real-sample-')), 'sample.yaml');
    await writeFile(file, stringify(cr));
    await kubectl('apply', '-n', ns.name, '-f', file);
    await crs.waitForCondition(ns.name, SAMPLE, { type: 'Ready', status: 'True' }, { timeoutMs: 180_000 });
    const pods = await podsOnNode(ns.name, `app.kubernetes.io/instance=${SAMPLE}`);
    expect(pods.length).toBe(cr.spec.replicaCount as number);
    for (const pod of pods) expect((await realContainer(pod, 'nginx')).uid).toBe('101');
    // Deleted while the operator runs, so its finalizer uninstalls the release (cleanup deletes the CRD after).
    await crs.delete(ns.name, SAMPLE);
    await crs.waitForGone(ns.name, SAMPLE, { timeoutMs: 120_000 });
  });

  it('cleanup leaves no CSV, Subscription, CatalogSource, InstallPlan or pod of the package', async () => {
    expect(await helmOperatorOk(['cleanup', PACKAGE, '-n', ns.name, '--timeout', '3m'])).toContain(`operator "${PACKAGE}" uninstalled`);
    // OLM copies an AllNamespaces CSV into every namespace: none may be left anywhere.
    await waitFor('no ClusterServiceVersion in any namespace', async () => (await olmList('clusterserviceversions')).length === 0, { timeoutMs: 120_000 });
    expect(await olmList('subscriptions', ns.name)).toEqual([]);
    expect(await olmList('catalogsources', ns.name)).toEqual([]);
    expect(await olmList('installplans', ns.name)).toEqual([]);
    await waitFor(`no pod in ${ns.name}`, async () => (await core.listNamespacedPod({ namespace: ns.name })).items.length === 0, { timeoutMs: 120_000 });
    expect(await gone(() => ext.readCustomResourceDefinition({ name: DEPLOYED.crd }))).toBe(true);
  });

  it("olm uninstall removes OLM's CRDs, Deployments, RBAC and namespace; the node runs none of its pods", async () => {
    expect(await helmOperatorOk(['olm', 'uninstall', '--timeout', '3m'])).toContain('OLM is uninstalled');
    expect((await ext.listCustomResourceDefinition()).items.map((c) => c.metadata?.name).filter((n) => n?.endsWith(`.${OLM_GROUP}`))).toEqual([]);
    expect(await gone(() => core.readNamespace({ name: 'olm' }))).toBe(true);
    expect(await gone(() => kc.makeApiClient(RbacAuthorizationV1Api).readClusterRole({ name: 'system:controller:operator-lifecycle-manager' }))).toBe(true);
    await waitFor('the real node to run no pod', async () => (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE}` })).items.length === 0, { timeoutMs: 120_000 });
  });
});
