/**
 * The tutorial's deployment path on a control plane with a real node (`hack/cluster.sh up
 * --real-node`, docs/real-node.md): `make docker-build docker-push IMG=<loopback registry>/...`, then
 * `make deploy IMG=... REAL_NODE=1`. The operator pod runs in containerd under the Deployment's real
 * settings, its probes pass at the kubelet, it reconciles the sample to Ready=True with nginx pods
 * (the stand-in image, pulled through containerd's registry mirror) running on the real node. The
 * deployment stays for image.suite.ts and operators.suite.ts (one `make deploy` for the three);
 * operators.suite.ts ends with `make undeploy`, which must leave no release, object or container.
 *
 * Root only (containerd, kubelet, host networking); its own cluster (one real node per machine).
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { DEPLOYED, kubectl, ROOT } from '../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { CRs, NGINX } from '../support/operator.js';
import { sample } from '../support/prometheus.js';
import { hack, make, NODE, operatorImage, operatorPods, POD_NET, ready, realContainer, TAINT } from './node.js';

const SAMPLE = 'nginx-sample';

describe('make docker-build docker-push deploy on a real node', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const crs = new CRs(kc, NGINX);
  let img = '';
  /** The operator pod `make deploy` started. */
  let podName = '';
  let ns: { name: string; remove: () => Promise<void> } | undefined;

  const operatorPod = async (): Promise<V1Pod | undefined> => (await operatorPods(kc))[0];
  const samplePods = async (): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: ns?.name ?? '', labelSelector: `app.kubernetes.io/instance=${SAMPLE}` })).items;

  beforeAll(async () => {
    img = await operatorImage();
    ns = await createNamespace(kc, 'real-node');
  });

  // No afterAll: the operator stays deployed, with this sample, for image.suite.ts and
  // operators.suite.ts, whose last test is `make undeploy` (it must take this release too).

  it('the cluster has the real node beside the fake one, tainted so only pods that tolerate it go there', async () => {
    const node = await core.readNode({ name: NODE });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(node.spec?.taints).toContainEqual(expect.objectContaining({ key: TAINT, effect: 'NoSchedule' }));
    expect(node.status?.addresses).toContainEqual({ type: 'InternalIP', address: '10.244.0.1' });
    expect(node.status?.nodeInfo?.containerRuntimeVersion).toMatch(/^containerd:\/\/v?2\./);
  });

  it('make docker-build docker-push IMG=<loopback registry>/... builds the image and pushes it', async () => {
    await make('docker-build', 'docker-push', `IMG=${img}`, 'CONTAINER_TOOL=podman');
    // The stand-in that the sample chart's default image name resolves to (docs/real-node.md).
    const chart = parse(await readFile(path.join(ROOT, 'helm-charts/nginx/Chart.yaml'), 'utf8')) as { appVersion: string };
    await hack('stand-ins.sh', 'push', `nginx:${chart.appVersion}`);
  });

  it('make deploy IMG=... REAL_NODE=1: the operator pod runs in containerd on the real node, Ready', async () => {
    await make('deploy', `IMG=${img}`, 'REAL_NODE=1');
    const pod = await waitFor(
      'the operator pod to be Ready',
      async () => {
        const p = await operatorPod();
        return ready(p) ? p : undefined;
      },
      { timeoutMs: 180_000 },
    );
    expect(pod.spec?.nodeName).toBe(NODE);
    expect(pod.status?.podIP).toMatch(POD_NET);
    // The image's uid 1001 runs the process, in the pod's cgroup: a container, not kwok's report of one.
    expect((await realContainer(pod, 'manager')).uid).toBe('1001');
    podName = pod.metadata?.name ?? '';
  });

  it('the sample, with the real node in its values, is Ready=True with its nginx pods running there', async () => {
    const namespace = ns?.name ?? '';
    const cr = parse(await readFile(path.join(ROOT, DEPLOYED.sample), 'utf8')) as { spec: Record<string, unknown> };
    cr.spec.nodeSelector = { [TAINT]: 'true' };
    cr.spec.tolerations = [{ key: TAINT, operator: 'Exists', effect: 'NoSchedule' }];
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'real-node-sample-')), 'sample.yaml');
    await writeFile(file, stringify(cr));
    await kubectl('apply', '-n', namespace, '-f', file);
    await crs.waitForCondition(namespace, SAMPLE, { type: 'Ready', status: 'True' }, { timeoutMs: 180_000 });
    const pods = await samplePods();
    expect(pods).toHaveLength(cr.spec.replicaCount as number);
    for (const pod of pods) {
      expect(pod.spec?.nodeName).toBe(NODE);
      expect(ready(pod)).toBe(true);
      expect(pod.status?.podIP).toMatch(POD_NET);
      // The chart's uid 101; the image came through containerd's docker.io mirror (the loopback registry).
      expect((await realContainer(pod, 'nginx')).uid).toBe('101');
      expect(pod.status?.containerStatuses?.[0]?.imageID).toMatch(/^docker\.io\/library\/nginx@sha256:/);
      // nginx answers on the pod's bridge address, from the host.
      expect((await fetch(`http://${pod.status?.podIP}:8080/healthz`)).status).toBe(200);
    }
  });

  it("the kubelet's prober: the operator's liveness probe (first run 15 s after start) and readiness probe succeeded, without a restart", async () => {
    // After the sample, so that the liveness probe's initial delay passes while the sample deploys.
    const probes = await waitFor(
      'a successful liveness probe of the operator',
      async () => {
        const text = await kubectl('get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics/probes`);
        const want = { pod: podName, container: 'manager', result: 'successful' };
        return (sample(text, 'prober_probe_total', { ...want, probe_type: 'Liveness' }) ?? 0) >= 1 ? text : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 2_000 },
    );
    expect(
      sample(probes, 'prober_probe_total', {
        pod: podName,
        container: 'manager',
        probe_type: 'Readiness',
        result: 'successful',
      }),
    ).toBeGreaterThanOrEqual(1);
    expect((await operatorPod())?.status?.containerStatuses?.[0]?.restartCount).toBe(0);
  });
});
