/**
 * The operator image, run in the cluster by the real node's kubelet and containerd as
 * config/manager's Deployment runs it: bare pods from the Deployment's own pod template (the image's
 * uid 1001, read-only root filesystem, the /tmp emptyDir, no capabilities, its limits) for what the
 * Deployment cannot show, then the Deployment's pod itself: its endpoints on the pod IP (/metrics
 * over HTTPS behind TokenReview/SubjectAccessReview, as the ServiceMonitor scrapes it), the sample
 * reconciled with its ServiceAccount token, and the kubelet's SIGTERM during an upgrade.
 *
 * After deploy.suite.ts, which builds and pushes the image (`make test-image` runs both).
 */
import { randomBytes } from 'node:crypto';
import {
  AppsV1Api,
  CoreV1Api,
  type V1Container,
  type V1ContainerStateTerminated,
  type V1Deployment,
  type V1Pod,
  type V1PodSpec,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEPLOYED, kubectl } from '../support/deploy.js';
import { createNamespace, testKubeConfig, waitFor } from '../support/kube.js';
import { CRs, NGINX } from '../support/operator.js';
import { sample } from '../support/prometheus.js';
import { httpsGet, metricsScrapers } from '../support/secure-scrape.js';
import { make, operatorImage, operatorPods, podLog, ready } from './node.js';

const SAMPLE = 'nginx-sample';

/**
 * A bare pod (never restarted) from the Deployment's pod template: its node placement, security
 * contexts, resources and volumes, with the manager container changed by `container`.
 */
function barePod(deployment: V1Deployment, name: string, container: Partial<V1Container>, pod: Partial<V1PodSpec> = {}): V1Pod {
  const spec = deployment.spec?.template.spec;
  const manager = spec?.containers.find((c) => c.name === 'manager');
  if (spec === undefined || manager === undefined) throw new Error('the Deployment has no manager container');
  // structuredClone: plain copies of the client's model objects, so the Deployment stays as read.
  const overrides: Partial<V1Container> = { livenessProbe: undefined, readinessProbe: undefined, ports: undefined };
  return {
    metadata: { name },
    spec: Object.assign(
      structuredClone(spec),
      {
        serviceAccountName: 'default',
        serviceAccount: 'default',
        automountServiceAccountToken: false,
        restartPolicy: 'Never',
        containers: [Object.assign(structuredClone(manager), overrides, container)],
      },
      pod,
    ),
  };
}

describe('the operator image, run by the kubelet as the Deployment runs it', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const crs = new CRs(kc, NGINX);
  let ns = { name: '', remove: async (): Promise<void> => {} };
  let deployment: V1Deployment = {};
  const cleanups: (() => Promise<void>)[] = [];

  /** Runs a bare pod to its end; its container's termination and its stdout and stderr (the kubelet's log streams). */
  const runToEnd = async (pod: V1Pod): Promise<{ terminated: V1ContainerStateTerminated; stdout: string; stderr: string }> => {
    const name = `${pod.metadata?.name ?? 'image'}-${randomBytes(3).toString('hex')}`;
    await core.createNamespacedPod({ namespace: ns.name, body: Object.assign(structuredClone(pod), { metadata: { name } }) });
    const done = await waitFor(
      `pod ${name} to end`,
      async () => {
        const p = await core.readNamespacedPod({ name, namespace: ns.name });
        return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    const terminated = done.status?.containerStatuses?.[0]?.state?.terminated;
    if (terminated === undefined) throw new Error(`pod ${name} ended without a terminated container: ${JSON.stringify(done.status)}`);
    return { terminated, ...(await podLog(done, 'manager')) };
  };
  /** Release Secrets of the sample: `<revision>=<status>`. */
  const releases = async (): Promise<string[]> =>
    (await core.listNamespacedSecret({ namespace: ns.name, labelSelector: `owner=helm,name=${SAMPLE}` })).items
      .map((s) => `${s.metadata?.labels?.version}=${s.metadata?.labels?.status}`)
      .sort();
  const operatorPod = async (): Promise<V1Pod> =>
    waitFor('a Ready operator pod', async () => (await operatorPods(kc)).find(ready), { timeoutMs: 180_000, intervalMs: 500 });

  beforeAll(async () => {
    ns = await createNamespace(kc, 'image');
    // deploy.suite.ts deployed it already in the tier (then this changes nothing); alone, this deploys it.
    await make('deploy', `IMG=${await operatorImage()}`, 'REAL_NODE=1');
    deployment = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: DEPLOYED.deployment, namespace: DEPLOYED.namespace });
  });

  afterAll(async () => {
    // The operator stays deployed for operators.suite.ts, which undeploys it.
    for (const c of cleanups) await c();
    await ns.remove();
  }, 300_000);

  it('is the operator-sdk layout: uid 1001 gid 0, no npm, one helm, the bundled executable without node_modules', async () => {
    const run = await runToEnd(
      barePod(deployment, 'layout', {
        command: [
          '/bin/sh',
          '-c',
          'command -v npm npx corepack yarn; find / -xdev -type f -name helm 2>/dev/null; find / -xdev -name node_modules 2>/dev/null | head -3; ls /app/helm-operator.js; id -u; id -g',
        ],
        args: [],
      }),
    );
    expect(run.terminated.exitCode).toBe(0);
    expect(run.stdout.trim().split('\n')).toEqual(['/usr/local/bin/helm', '/app/helm-operator.js', '1001', '0']);
  });

  it('prints one line naming a mounted kubeconfig that uid 1001 cannot read, and exits 1', async () => {
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 'root-only' }, stringData: { config: 'apiVersion: v1\nkind: Config\n' } },
    });
    const pod = barePod(
      deployment,
      'kubeconfig',
      { args: ['--kubeconfig=/kube/config'], volumeMounts: [{ name: 'kube', mountPath: '/kube', readOnly: true }] },
      {
        // root:root 0400: the Deployment's pod has no fsGroup, so the image's uid may not read it.
        volumes: [{ name: 'kube', secret: { secretName: 'root-only', defaultMode: 0o400 } }],
      },
    );
    const run = await runToEnd(pod);
    expect(run).toEqual({
      terminated: expect.objectContaining({ exitCode: 1 }) as unknown,
      stdout: '',
      stderr: 'error: cannot load the kubeconfig /kube/config: permission denied (EACCES) to uid 1001\n',
    });
  });

  it("the Deployment's pod serves /healthz, /readyz and /metrics on its pod IP and reconciles the sample with its ServiceAccount token", async () => {
    const ip = (await operatorPod()).status?.podIP ?? '';
    const scrapers = await metricsScrapers(kc, `${DEPLOYED.prefix}metrics-reader`, ns.name);
    cleanups.push(() => scrapers.remove());
    expect((await fetch(`http://${ip}:8081/healthz`)).status).toBe(200);
    expect((await fetch(`http://${ip}:8081/readyz`)).status).toBe(200);
    await kubectl('apply', '-n', ns.name, '-f', DEPLOYED.sample);
    const cr = await crs.waitForCondition(ns.name, SAMPLE, { type: 'Deployed', status: 'True' }, { timeoutMs: 120_000 });
    expect(cr.status?.deployedRelease?.revision).toBe(1);
    expect(await releases()).toEqual(['1=deployed']);
    // As config/prometheus' ServiceMonitor scrapes it: HTTPS on the metrics Service's port, each
    // token reviewed by the operator with its own metrics-auth-role, metrics-reader required.
    const service = await core.readNamespacedService({
      name: `${DEPLOYED.prefix}controller-manager-metrics-service`,
      namespace: DEPLOYED.namespace,
    });
    expect(service.spec?.ports).toEqual([expect.objectContaining({ name: 'https', port: 8443, targetPort: 8443 })]);
    const url = `https://${ip}:8443/metrics`;
    expect((await httpsGet(url)).status).toBe(401);
    const denied = await httpsGet(url, scrapers.stranger);
    expect(denied.status).toBe(403);
    expect(denied.body).toContain(`system:serviceaccount:${ns.name}:metrics-stranger`);
    const scrape = await httpsGet(url, scrapers.reader);
    expect(scrape.status).toBe(200);
    const metrics = scrape.body;
    expect(sample(metrics, 'helm_operator_helm_executions_total', { verb: 'install', outcome: 'success' })).toBeGreaterThanOrEqual(1);
    expect(sample(metrics, 'leader_election_master_status', { name: 'helm-operator' })).toBe(1);
  });

  it("on the kubelet's SIGTERM during an upgrade it exits 0 within the grace period, leaving no release pending; the next pod converges", async () => {
    const pod = await operatorPod();
    const name = pod.metadata?.name ?? '';
    const grace = pod.spec?.terminationGracePeriodSeconds ?? 30;
    await crs.patch(ns.name, SAMPLE, { spec: { replicaCount: 3 } });
    await waitFor('the upgrade to start', async () => (await releases()).some((r) => r.startsWith('2=')), {
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    // activeDeadlineSeconds ends the pod the way the kubelet stops any: SIGTERM, the grace period,
    // then SIGKILL (exit 137). Unlike a deletion, the pod stays, with its container's exit.
    const sent = Date.now();
    await kubectl('-n', DEPLOYED.namespace, 'patch', `pod/${name}`, '-p', JSON.stringify({ spec: { activeDeadlineSeconds: 1 } }));
    const terminated = await waitFor(
      'the operator container to exit',
      async () => {
        const p = await core.readNamespacedPod({ name, namespace: DEPLOYED.namespace });
        return p.status?.containerStatuses?.[0]?.state?.terminated;
      },
      { timeoutMs: (grace + 30) * 1000, intervalMs: 500 },
    );
    // The ended pod stays (Failed, DeadlineExceeded) until deleted: gone after this suite, so that the
    // suites after it, which use this deployment, count only its live pods.
    cleanups.push(async () => {
      await core.deleteNamespacedPod({ name, namespace: DEPLOYED.namespace }).catch(() => undefined);
    });
    expect(terminated.exitCode).toBe(0);
    expect(new Date(terminated.finishedAt ?? 0).getTime() - sent).toBeLessThan(grace * 1000);
    expect((await releases()).filter((r) => r.includes('pending'))).toEqual([]);
    // The ReplicaSet's next pod finishes the upgrade if the stopped one left it.
    const cr = await waitFor(
      'revision 2 deployed',
      async () => {
        const c = await crs.get(ns.name, SAMPLE);
        return c?.status?.deployedRelease?.revision === 2 && c.status.conditions?.some((x) => x.type === 'Deployed' && x.status === 'True')
          ? c
          : undefined;
      },
      { timeoutMs: 180_000 },
    );
    expect(cr.spec?.replicaCount).toBe(3);
    expect((await releases()).at(-1)).toBe('2=deployed');
  });
});
