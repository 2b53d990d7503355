/**
 * OLM for real on the real node (docs/olm.md, docs/adr/0064): `hack/olm-images.sh push` builds OLM's
 * images here and pushes them to the loopback registry; `helm-operator olm install` runs olm-operator
 * and catalog-operator as Deployments of that image, their containers on the real node; `run bundle
 * <bundle image>` serves the catalog from a registry pod of the opm image, OLM installs the CSV and
 * its operator pod runs on the real node and reconciles CRs to Ready; `run bundle-upgrade` of a 0.0.2
 * bundle (an operator image whose chart changed) moves the CatalogSource to a new registry pod, OLM
 * replaces the CSV and its operator pod, and the CRs roll to the new chart; `cleanup` and `olm
 * uninstall` leave nothing of either behind.
 *
 * After deploy.suite.ts in the tier (it builds and pushes the operator image); run alone, this builds
 * what is missing. Root only, like the tier.
 */
import { execFile } from 'node:child_process';
import { appendFile, cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { DEPLOYED, gone, kubectl, ROOT } from '../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { helmOperator, helmOperatorOk, OLM_GROUP, waitForCsvPhase } from '../support/olm.js';
import { olmTools } from '../../src/olm/tools.js';
import { CRs, NGINX } from '../support/operator.js';
import { hack, make, NODE, operatorImage, POD_NET, ready, realContainer, registry, TAINT } from './node.js';

const execFileAsync = promisify(execFile);
const PACKAGE = 'helm-operator';
const CSV = `${PACKAGE}.v0.0.1`;
const CSV2 = `${PACKAGE}.v0.0.2`;
/** Two CRs, so that the roll to the new chart goes through the rollout's waves (canary, then the rest). */
const SAMPLES = ['olm-sample', 'olm-sample-2'];
/** A file-based catalog's documents (`opm render` output, catalog.yaml). */
interface FbcBlob {
  schema: string;
  name?: string;
  image?: string;
  properties?: { type: string; value: unknown }[];
}
const fbcBlobs = (text: string): FbcBlob[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as FbcBlob | null)
    .filter((b): b is FbcBlob => b !== null);
/** What the 0.0.2 operator image's chart changes: its version, and a key in the ConfigMap it renders. */
const CHART2 = { version: '0.2.0', key: 'bundle-version', value: '0.0.2' };

/**
 * Operator image 0.0.2 (the 0.0.1 image with a chart of a new version whose ConfigMap has one key
 * more) and its bundle, pushed: `make bundle VERSION=0.0.2` over the 0.0.1 bundle in bundle/ writes
 * spec.replaces (docs/olm.md).
 */
async function buildUpgrade(reg: string): Promise<{ img2: string; bundleImg2: string }> {
  const img2 = await operatorImage('real-node-0.0.2');
  const ctx = await mkdtemp(path.join(os.tmpdir(), 'olm-real-chart2-'));
  await cp(path.join(ROOT, 'helm-charts/nginx'), path.join(ctx, 'nginx'), { recursive: true });
  const chartFile = path.join(ctx, 'nginx/Chart.yaml');
  await writeFile(chartFile, (await readFile(chartFile, 'utf8')).replace(/^version: .*$/m, `version: ${CHART2.version}`));
  // After the nginx.conf block scalar (indented 4), a key of `data:` (indented 2).
  await appendFile(path.join(ctx, 'nginx/templates/configmap.yaml'), `  ${CHART2.key}: "${CHART2.value}"\n`);
  await writeFile(path.join(ctx, 'Dockerfile'), `FROM ${await operatorImage()}\nCOPY nginx/ /opt/helm/helm-charts/nginx/\n`);
  await hack('image.sh', 'build', img2, path.join(ctx, 'Dockerfile'), ctx);
  await make('docker-push', `IMG=${img2}`, 'CONTAINER_TOOL=podman');
  const bundleImg2 = `${reg}/${PACKAGE}-bundle:v0.0.2`;
  await make('bundle', `IMG=${img2}`, 'VERSION=0.0.2', 'REAL_NODE=1');
  await make('bundle-build', 'bundle-push', `BUNDLE_IMG=${bundleImg2}`, 'CONTAINER_TOOL=podman');
  return { img2, bundleImg2 };
}

describe('OLM as pods on the real node: olm install, run bundle <image>, run bundle-upgrade, cleanup, olm uninstall', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const crs = new CRs(kc, NGINX);
  let ns = { name: '', remove: async (): Promise<void> => {} };
  let bundleImg = '';
  /** Each CR's fleet revision and the operator pod before the upgrade. */
  const before = { fleet: new Map<string, string>(), operatorPod: '' };

  const olmList = async (plural: string, namespace?: string): Promise<string[]> => {
    const list = (
      namespace === undefined
        ? await custom.listClusterCustomObject({ group: OLM_GROUP, version: 'v1alpha1', plural })
        : await custom.listNamespacedCustomObject({ group: OLM_GROUP, version: 'v1alpha1', plural, namespace })
    ) as { items: { metadata: { namespace: string; name: string } }[] };
    return list.items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);
  };
  const podsOnNode = async (namespace: string, labelSelector?: string): Promise<V1Pod[]> =>
    (
      await core.listNamespacedPod({
        namespace,
        fieldSelector: `spec.nodeName=${NODE}`,
        ...(labelSelector === undefined ? {} : { labelSelector }),
      })
    ).items.filter((p) => p.metadata?.deletionTimestamp === undefined);
  /** The one pod, Ready on the real node with its container running in containerd: what kwok never gives. */
  const realPod = async (namespace: string, labelSelector: string, container: string): Promise<{ pod: V1Pod; uid: string }> => {
    const pod = await waitFor(
      `a Ready pod ${labelSelector} in ${namespace} on ${NODE}`,
      async () => {
        const [p] = await podsOnNode(namespace, labelSelector);
        return ready(p) ? p : undefined;
      },
      { timeoutMs: 120_000 },
    );
    expect(pod.status?.podIP).toMatch(POD_NET);
    return { pod, uid: (await realContainer(pod, container)).uid };
  };

  /**
   * Operator image 0.0.2 and its bundle, built and pushed while OLM installs and runs 0.0.1 (the
   * builds need the CPU, the installs mostly wait on pods); the upgrade test awaits it.
   */
  let upgrade: Promise<{ img2: string; bundleImg2: string }> | undefined;
  /** bundle/ of 0.0.1, copied before the 0.0.2 build rewrites it. */
  let bundleDir1 = '';

  beforeAll(async () => {
    const reg = await registry();
    const img = await operatorImage();
    const chart = parse(await readFile(path.join(ROOT, 'helm-charts/nginx/Chart.yaml'), 'utf8')) as { appVersion: string };
    bundleImg = `${reg}/${PACKAGE}-bundle:v0.0.1`;
    const bundle1 = async (): Promise<void> => {
      // The operator image deploy.suite.ts pushed; built here when this suite runs alone.
      if (
        (
          await fetch(`http://${reg}/v2/helm-operator/manifests/real-node`, {
            method: 'HEAD',
            headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
          })
        ).status !== 200
      ) {
        await make('docker-build', 'docker-push', `IMG=${img}`, 'CONTAINER_TOOL=podman');
      }
      // The bundle of that image, its Deployment on the real node (REAL_NODE=1: its nodeSelector and toleration in the CSV).
      await make('bundle', `IMG=${img}`, 'REAL_NODE=1');
      await make('bundle-build', 'bundle-push', `BUNDLE_IMG=${bundleImg}`, 'CONTAINER_TOOL=podman');
      bundleDir1 = await mkdtemp(path.join(os.tmpdir(), 'olm-real-bundle1-'));
      await cp(path.join(ROOT, 'bundle'), bundleDir1, { recursive: true });
    };
    // Two lanes: the nginx stand-in and OLM's images (one after the other: they share the Debian
    // stand-in base, which hack/image.sh makes when missing), and the 0.0.1 bundle image (FROM scratch).
    const images = async (): Promise<void> => {
      await hack('stand-ins.sh', 'push', `nginx:${chart.appVersion}`);
      await hack('olm-images.sh', 'push');
    };
    await Promise.all([images(), bundle1()]);
    upgrade = buildUpgrade(reg);
    // Awaited by the upgrade test; a failure before then is reported there, not as an unhandled rejection.
    upgrade.catch(() => undefined);
    ns = await createNamespace(kc, 'olm-real');
  });

  afterAll(async () => {
    // A failed run must not leave OLM's pods on the node for the suites after it.
    await helmOperator(['cleanup', PACKAGE, '-n', ns.name, '--timeout', '2m']).catch(() => undefined);
    await helmOperator(['olm', 'uninstall', '--timeout', '2m']).catch(() => undefined);
    await ns.remove();
  }, 300_000);

  it('make bundle-build bundle-push put the bundle image into the registry; make catalog renders it into a file-based catalog opm validate accepts, with the bundle directory’s content', async () => {
    const reg = await registry();
    const tags = (await (await fetch(`http://${reg}/v2/${PACKAGE}-bundle/tags/list`)).json()) as { tags: string[] };
    expect(tags.tags).toContain('v0.0.1');
    // Twice: a rerun replaces what the last one wrote (opm refuses to overwrite catalog.Dockerfile itself).
    for (let i = 0; i < 2; i++) await make('catalog', `BUNDLE_IMG=${bundleImg}`, 'OPM_RENDER_FLAGS=--use-http');
    const catalog = fbcBlobs(await readFile(path.join(ROOT, 'catalog', PACKAGE, 'catalog.yaml'), 'utf8'));
    expect(catalog.map((b) => `${b.schema}/${b.name ?? ''}`)).toEqual([`olm.package/${PACKAGE}`, 'olm.channel/alpha', `olm.bundle/${CSV}`]);
    const fromImage = catalog[2];
    expect(fromImage?.image).toBe(bundleImg);
    // What OLM installs from (olm.bundle.object: every manifest) is what the bundle directory holds.
    const { stdout } = await execFileAsync((await olmTools()).opm, ['render', bundleDir1, '--output', 'yaml'], {
      maxBuffer: 32 * 1024 * 1024,
    });
    const fromDir = fbcBlobs(stdout).find((b) => b.schema === 'olm.bundle');
    const objects = (b: FbcBlob | undefined): unknown[] =>
      (b?.properties ?? []).filter((p) => p.type === 'olm.bundle.object').map((p) => p.value);
    // The CRD, the CSV, the metrics Service and reader role, and the kind's editor and viewer roles.
    expect(objects(fromImage)).toHaveLength(6);
    expect(objects(fromImage)).toEqual(objects(fromDir));
    expect(await readFile(path.join(ROOT, 'catalog.Dockerfile'), 'utf8')).toMatch(/^ADD catalog \/configs/m);
  });

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
    expect(
      (await kc.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: ns.name })).items.map((c) => c.metadata?.name).sort(),
    ).toEqual([`${PACKAGE}-catalog`, 'kube-root-ca.crt']);
    // The operator's image runs as uid 1001, under the Deployment OLM created from the CSV.
    expect((await realPod(ns.name, 'control-plane=controller-manager', 'manager')).uid).toBe('1001');
  });

  it("CRs of the bundle's kind are reconciled to Ready by the operator OLM installed, their nginx pods on the real node", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'olm-real-sample-'));
    for (const [i, name] of SAMPLES.entries()) {
      const cr = parse(await readFile(path.join(ROOT, DEPLOYED.sample), 'utf8')) as {
        metadata: { name: string };
        spec: Record<string, unknown>;
      };
      cr.metadata.name = name;
      if (i > 0) cr.spec.replicaCount = 1;
      cr.spec.nodeSelector = { [TAINT]: 'true' };
      cr.spec.tolerations = [{ key: TAINT, operator: 'Exists', effect: 'NoSchedule' }];
      const file = path.join(dir, `${name}.yaml`);
      await writeFile(file, stringify(cr));
      await kubectl('apply', '-n', ns.name, '-f', file);
      await crs.waitForCondition(ns.name, name, { type: 'Ready', status: 'True' }, { timeoutMs: 180_000 });
      const pods = await podsOnNode(ns.name, `app.kubernetes.io/instance=${name}`);
      expect(pods.length).toBe(cr.spec.replicaCount as number);
      for (const pod of pods) expect((await realContainer(pod, 'nginx')).uid).toBe('101');
      const status = (await crs.get(ns.name, name))?.status as
        { deployedRelease?: { chartVersion?: string }; rollout?: { fleetRevision?: string } } | undefined;
      expect(status?.deployedRelease?.chartVersion).toBe('0.1.0');
      before.fleet.set(name, status?.rollout?.fleetRevision ?? '');
    }
    before.operatorPod = (await realPod(ns.name, 'control-plane=controller-manager', 'manager')).pod.metadata?.name ?? '';
  });

  it('run bundle-upgrade <0.0.2 bundle image>: a new registry pod, CSV 0.0.2 Succeeded replacing 0.0.1, its operator pod on the real node, every CR rolled to the new chart', async () => {
    if (upgrade === undefined) throw new Error('the 0.0.2 build never started: the suite set-up failed');
    const { img2, bundleImg2 } = await upgrade;
    const out = await helmOperatorOk(['run', 'bundle-upgrade', bundleImg2, '--use-http', '-n', ns.name, '--timeout', '4m']);
    expect(out).toContain(`Successfully upgraded to "${CSV2}"`);
    const csv = await waitForCsvPhase(kc, { namespace: ns.name, name: CSV2 }, 'Succeeded');
    expect(csv.spec.replaces).toBe(CSV);
    // OLM deletes the replaced CSV once the new one succeeds.
    await waitFor(`CSV ${CSV} gone`, async () => !(await olmList('clusterserviceversions', ns.name)).includes(`${ns.name}/${CSV}`), {
      timeoutMs: 120_000,
    });
    // The new registry pod serves; the old one and its ConfigMap are gone.
    const registryPod = await realPod(ns.name, `helm-operator.dev/run-bundle-package=${PACKAGE}`, 'registry-grpc');
    expect(registryPod.pod.metadata?.name).toBe(`${PACKAGE}-catalog-v0.0.2`);
    expect((await podsOnNode(ns.name, `helm-operator.dev/run-bundle-package=${PACKAGE}`)).length).toBe(1);
    expect(
      (
        await core.listNamespacedConfigMap({ namespace: ns.name, labelSelector: `helm-operator.dev/run-bundle-package=${PACKAGE}` })
      ).items.map((c) => c.metadata?.name),
    ).toEqual([`${PACKAGE}-catalog-v0.0.2`]);
    // The operator pod of the new image replaced the old one on the real node.
    const operator = await waitFor(
      `one Ready operator pod of ${img2} on ${NODE}`,
      async () => {
        const pods = await podsOnNode(ns.name, 'control-plane=controller-manager');
        const [p] = pods;
        return pods.length === 1 && ready(p) && p?.spec?.containers[0]?.image === img2 ? p : undefined;
      },
      { timeoutMs: 180_000 },
    );
    expect(operator.metadata?.name).not.toBe(before.operatorPod);
    expect((await realContainer(operator, 'manager')).uid).toBe('1001');
    // Every CR: its release on the new chart, a new fleet revision, Ready, and the chart's change on the cluster.
    for (const name of SAMPLES) {
      const cr = await waitFor(
        `${name} on chart ${CHART2.version}, Ready`,
        async () => {
          const c = (await crs.get(ns.name, name)) as
            | {
                status?: {
                  deployedRelease?: { chartVersion?: string; revision?: number };
                  rollout?: { fleetRevision?: string };
                  conditions?: { type: string; status: string }[];
                };
              }
            | undefined;
          const ok =
            c?.status?.deployedRelease?.chartVersion === CHART2.version &&
            c.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') === true;
          return ok ? c : undefined;
        },
        { timeoutMs: 240_000 },
      );
      expect(cr.status?.deployedRelease?.revision).toBeGreaterThanOrEqual(2);
      expect(cr.status?.rollout?.fleetRevision).not.toBe(before.fleet.get(name));
      const [cm] = (await core.listNamespacedConfigMap({ namespace: ns.name, labelSelector: `app.kubernetes.io/instance=${name}` })).items;
      expect(cm?.data?.[CHART2.key]).toBe(CHART2.value);
    }
  });

  it('the CRs deleted while the operator runs: its finalizer uninstalls their releases', async () => {
    // Deleted while the operator runs, so its finalizer uninstalls the release (cleanup deletes the CRD after).
    for (const name of SAMPLES) await crs.delete(ns.name, name);
    for (const name of SAMPLES) await crs.waitForGone(ns.name, name, { timeoutMs: 120_000 });
  });

  it('cleanup leaves no CSV, Subscription, CatalogSource, InstallPlan or pod of the package', async () => {
    expect(await helmOperatorOk(['cleanup', PACKAGE, '-n', ns.name, '--timeout', '3m'])).toContain(`operator "${PACKAGE}" uninstalled`);
    // OLM copies an AllNamespaces CSV into every namespace: none may be left anywhere.
    await waitFor('no ClusterServiceVersion in any namespace', async () => (await olmList('clusterserviceversions')).length === 0, {
      timeoutMs: 120_000,
    });
    expect(await olmList('subscriptions', ns.name)).toEqual([]);
    expect(await olmList('catalogsources', ns.name)).toEqual([]);
    expect(await olmList('installplans', ns.name)).toEqual([]);
    await waitFor(`no pod in ${ns.name}`, async () => (await core.listNamespacedPod({ namespace: ns.name })).items.length === 0, {
      timeoutMs: 120_000,
    });
    expect((await core.listNamespacedConfigMap({ namespace: ns.name })).items.map((c) => c.metadata?.name)).toEqual(['kube-root-ca.crt']);
    expect(await gone(() => ext.readCustomResourceDefinition({ name: DEPLOYED.crd }))).toBe(true);
  });

  it("olm uninstall removes OLM's CRDs, Deployments, RBAC and namespace; the node runs none of its pods", async () => {
    expect(await helmOperatorOk(['olm', 'uninstall', '--timeout', '3m'])).toContain('OLM is uninstalled');
    expect(
      (await ext.listCustomResourceDefinition()).items.map((c) => c.metadata?.name).filter((n) => n?.endsWith(`.${OLM_GROUP}`)),
    ).toEqual([]);
    expect(await gone(() => core.readNamespace({ name: 'olm' }))).toBe(true);
    expect(
      await gone(() => kc.makeApiClient(RbacAuthorizationV1Api).readClusterRole({ name: 'system:controller:operator-lifecycle-manager' })),
    ).toBe(true);
    await waitFor(
      'the real node to run no pod',
      async () => (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE}` })).items.length === 0,
      { timeoutMs: 120_000 },
    );
  });
});
