/**
 * A scaffolded project's operator as a real pod, with only the RBAC its scaffold generated: this
 * checkout packed and installed as a user installs it, `helm-operator init` and `create api` with
 * helm's starter chart (what `helm create` writes: probes, nodeSelector, tolerations), then the
 * project's own `make docker-build docker-push` (its Dockerfile, its vendored runtime) and `make
 * deploy REAL_NODE=1`. Its pod runs under the kubelet, its CR's nginx pods run on the real node,
 * deleting the CR uninstalls the release, and `make undeploy` leaves nothing.
 *
 * The integration tier checks the same RBAC with the ServiceAccount's token from outside the cluster
 * (`make run-as-deployed`); here the token, the in-cluster config and the project's Dockerfile and
 * manager.yaml are the kubelet's.
 */
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { gone } from '../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { CRs } from '../support/operator.js';
import { sample as metricSample } from '../support/prometheus.js';
import { childEnv, exec, runtimePackage, type RuntimePackage } from '../support/scaffold.js';
import { httpsGet, metricsScrapers, type MetricsScrapers } from '../support/secure-scrape.js';
import { REAL_NODE_CLUSTER } from './global-setup.js';
import { accountBindings, accountCan, hack, NODE, operatorPods, POD_NET, ready, realContainer, registry, TAINT, tasks } from './node.js';

const PROJECT = 'site-operator';
const SYSTEM = `${PROJECT}-system`;
const ACCOUNT = `${PROJECT}-controller-manager`;
const KIND = { group: 'demo.real.example.com', version: 'v1alpha1', kind: 'Site', plural: 'sites' } as const;
const CR = 'site-sample';

describe("a scaffolded project's operator as a real pod, with only its generated RBAC", () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const crs = new CRs(kc, KIND);
  const conditions = async (): Promise<unknown> => (await crs.get(ns.name, CR))?.status?.conditions;
  let pkg: RuntimePackage;
  let work = '';
  let dir = '';
  let img = '';
  let chart = { name: '', appVersion: '' };
  let ns = { name: '', remove: async (): Promise<void> => {} };
  let scrapers: MetricsScrapers | undefined;

  const env = (): NodeJS.ProcessEnv =>
    childEnv({
      KUBECONFIG: inject('kubeconfigPath'),
      HELM_CONFIG_HOME: path.join(work, 'helm/config'),
      HELM_CACHE_HOME: path.join(work, 'helm/cache'),
      HELM_DATA_HOME: path.join(work, 'helm/data'),
    });
  const cli = (...args: string[]): Promise<string> => exec(pkg.bin, args, { cwd: dir, env: env() });
  const make = (...args: string[]): Promise<string> =>
    exec('make', ['--no-print-directory', ...args], { cwd: dir, env: env(), timeoutMs: 900_000 });

  beforeAll(async () => {
    pkg = await runtimePackage();
    work = await mkdtemp(path.join(os.tmpdir(), 'real-node-scaffold-'));
    dir = path.join(work, PROJECT);
    await mkdir(dir);
    img = `${await registry()}/${PROJECT}:v0.1.0`;
    ns = await createNamespace(kc, 'scaffolded');
  }, 600_000);

  afterAll(async () => {
    await make('undeploy', 'ignore-not-found=true').catch(() => undefined);
    await scrapers?.remove();
    await ns.remove();
    await rm(work, { recursive: true, force: true });
  }, 600_000);

  it("init, and create api with helm's starter chart", async () => {
    await cli('init', '--domain', 'real.example.com');
    await cli('create', 'api', '--group', 'demo', '--version', KIND.version, '--kind', KIND.kind);
    const watches = parse(await readFile(path.join(dir, 'watches.yaml'), 'utf8')) as { chart: string }[];
    const chartDir = path.join(dir, watches[0]?.chart ?? '');
    chart = parse(await readFile(path.join(chartDir, 'Chart.yaml'), 'utf8')) as typeof chart;
    expect(await readFile(path.join(chartDir, 'templates/deployment.yaml'), 'utf8')).toMatch(/tolerations/);
  }, 300_000);

  it('its Makefile passes REAL_NODE=1 on: cluster-up starts the real node, deploy puts the operator there', async () => {
    expect(await make('-n', 'cluster-up', 'REAL_NODE=1')).toMatch(/cluster\.sh up --export --real-node\s*$/m);
    expect(await make('-n', 'cluster-up')).toMatch(/cluster\.sh up --export\s*$/m);
    expect(await make('-n', 'deploy', `IMG=${img}`, 'REAL_NODE=1')).toMatch(/^REAL_NODE=1 bash \S+\/deploy\.sh apply config\/default /m);
    // This machine's real node is the tier's: the project's cluster-up finds it running and answers with its kubeconfig.
    const up = await exec('make', ['--no-print-directory', '-s', 'cluster-up', 'REAL_NODE=1'], {
      cwd: dir,
      env: { ...env(), CLUSTER_NAME: REAL_NODE_CLUSTER },
    });
    expect(up).toContain(`export KUBECONFIG=${inject('kubeconfigPath')}`);
  }, 300_000);

  it("make docker-build docker-push IMG=<loopback registry>/...: the project's Dockerfile builds, the image is pushed", async () => {
    await make('docker-build', 'docker-push', `IMG=${img}`, 'CONTAINER_TOOL=podman');
    // The starter chart's image (nginx:<appVersion>), resolved by the real node's containerd at the loopback registry.
    await hack('stand-ins.sh', 'push', `nginx:${chart.appVersion}`);
  }, 900_000);

  it('make deploy IMG=... REAL_NODE=1: the pod runs on the real node as uid 1001 and is Ready', async () => {
    await make('deploy', `IMG=${img}`, 'REAL_NODE=1');
    const pod = await waitFor(
      "the project's operator pod to be Ready",
      async () => {
        const [p] = await operatorPods(kc, SYSTEM);
        return ready(p) ? p : undefined;
      },
      { timeoutMs: 240_000, intervalMs: 1_000 },
    );
    expect(pod.spec?.nodeName).toBe(NODE);
    expect(pod.spec?.serviceAccountName).toBe(ACCOUNT);
    expect(pod.status?.podIP).toMatch(POD_NET);
    expect((await realContainer(pod, 'manager')).uid).toBe('1001');
  }, 300_000);

  it('its ServiceAccount is bound to the generated roles only, and the API server grants nothing more', async () => {
    const bindings = await accountBindings(kc, { name: ACCOUNT, namespace: SYSTEM });
    expect(bindings.cluster).toEqual([
      `${PROJECT}-manager-rolebinding -> ClusterRole/${PROJECT}-manager-role`,
      `${PROJECT}-metrics-auth-rolebinding -> ClusterRole/${PROJECT}-metrics-auth-role`,
    ]);
    expect(bindings.local).toEqual([`${SYSTEM}/${PROJECT}-leader-election-rolebinding -> Role/${PROJECT}-leader-election-role`]);
    const can = accountCan(kc, { name: ACCOUNT, namespace: SYSTEM }, ns.name);
    expect(await can('*', '*', '*')).toBe(false);
    expect(await can('create', 'rbac.authorization.k8s.io', 'clusterrolebindings')).toBe(false);
    expect(await can('list', '', 'nodes')).toBe(false);
    // The starter chart's kinds, and no kind it does not render.
    expect(await can('create', 'apps', 'deployments')).toBe(true);
    expect(await can('create', '', 'services')).toBe(true);
    expect(await can('create', 'apps', 'daemonsets')).toBe(false);
  });

  it('a CR whose values put its pods on the real node is Ready=True, its nginx running there', async () => {
    const samples = parse(await readFile(path.join(dir, 'config/samples/kustomization.yaml'), 'utf8')) as { resources: string[] };
    expect(samples.resources).toHaveLength(1);
    const sample = parse(await readFile(path.join(dir, 'config/samples', samples.resources[0] ?? ''), 'utf8')) as {
      kind: string;
      spec?: Record<string, unknown>;
    };
    expect(sample.kind).toBe(KIND.kind);
    await crs.create(ns.name, CR, {
      ...sample.spec,
      nodeSelector: { [TAINT]: 'true' },
      tolerations: [{ key: TAINT, operator: 'Exists', effect: 'NoSchedule' }],
    });
    // On a timeout, the conditions say why (a Forbidden names the missing rule).
    await crs
      .waitForCondition(ns.name, CR, { type: 'Ready', status: 'True' }, { timeoutMs: 240_000, intervalMs: 1_000 })
      .catch(async (err: unknown) => {
        throw new Error(`${String(err)}; conditions: ${JSON.stringify(await conditions())}`);
      });
    const pods = (await core.listNamespacedPod({ namespace: ns.name, labelSelector: `app.kubernetes.io/instance=${CR}` })).items;
    expect(pods.length).toBeGreaterThanOrEqual(1);
    for (const pod of pods) {
      expect(pod.spec?.nodeName).toBe(NODE);
      expect(ready(pod)).toBe(true);
      await realContainer(pod, chart.name);
      expect((await fetch(`http://${pod.status?.podIP}:80/`)).status).toBe(200);
    }
    // The operator worked with what it was granted: no restart, nothing Forbidden on its way.
    const [operator] = await operatorPods(kc, SYSTEM);
    expect(operator?.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    // Its metrics as the project's ServiceMonitor scrapes them: HTTPS on :8443, a token bound to its metrics-reader.
    scrapers = await metricsScrapers(kc, `${PROJECT}-metrics-reader`, ns.name);
    const url = `https://${operator?.status?.podIP}:8443/metrics`;
    expect((await httpsGet(url)).status).toBe(401);
    const scrape = await httpsGet(url, scrapers.reader);
    expect(scrape.status).toBe(200);
    expect(
      metricSample(scrape.body, 'helm_operator_helm_executions_total', { verb: 'install', outcome: 'success' }),
    ).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(await conditions())).not.toMatch(/forbidden/i);
  }, 300_000);

  it('deleting the CR uninstalls its release; make undeploy leaves no object and no container', async () => {
    await crs.delete(ns.name, CR);
    await crs.waitForGone(ns.name, CR, { timeoutMs: 120_000 });
    expect((await core.listNamespacedSecret({ namespace: ns.name, labelSelector: 'owner=helm' })).items).toEqual([]);
    expect((await apps.listNamespacedDeployment({ namespace: ns.name })).items.map((d) => d.metadata?.name)).toEqual([]);
    await make('undeploy');
    await waitFor(`namespace ${SYSTEM} to be deleted`, () => gone(() => core.readNamespace({ name: SYSTEM })), { timeoutMs: 120_000 });
    await waitFor(
      'the real node to run no pod',
      async () => (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE}` })).items.length === 0,
      {
        timeoutMs: 120_000,
      },
    );
    await waitFor('containerd to run no container', async () => (await tasks()).size === 0, { timeoutMs: 60_000 });
  }, 300_000);
});
