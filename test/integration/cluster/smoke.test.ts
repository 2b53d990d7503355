import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, AppsV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi, VersionApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createNamespace, deploymentAvailable, testKubeConfig, uniqueName, waitFor } from '../../support/kube.js';

const run = promisify(execFile);

/** Proves the integration tier is real: a real apiserver, a kwok node, and the real helm binaries. */
describe('test control plane', () => {
  const kc = testKubeConfig();
  let chartDir = '';

  beforeAll(async () => {
    chartDir = await mkdtemp(path.join(os.tmpdir(), 'smoke-chart-'));
    await mkdir(path.join(chartDir, 'templates'));
    await writeFile(path.join(chartDir, 'Chart.yaml'), 'apiVersion: v2\nname: smoke\nversion: 0.1.0\n');
    await writeFile(
      path.join(chartDir, 'templates', 'deployment.yaml'),
      [
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata: {name: "{{ .Release.Name }}"}',
        'spec:',
        '  replicas: 2',
        '  selector: {matchLabels: {app: "{{ .Release.Name }}"}}',
        '  template:',
        '    metadata: {labels: {app: "{{ .Release.Name }}"}}',
        '    spec: {containers: [{name: web, image: "nginx:1.27"}]}',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await rm(chartDir, { recursive: true, force: true });
  });

  it('reports the real Kubernetes version', async () => {
    const v = await kc.makeApiClient(VersionApi).getCode();
    expect(v.gitVersion).toMatch(/^v1\.\d+\.\d+$/);
    expect(Number(v.minor)).toBeGreaterThanOrEqual(34);
  });

  // Alone on their cluster, they would only renew a Lease each every 2 s: the API server's most
  // frequent request and a share of etcd's writes in a test run (hack/cluster.sh). The Deployment
  // below becoming Available shows that both still do their work.
  it('runs the controller-manager and the scheduler without leader election: no Lease of theirs', async () => {
    const leases = await kc.makeApiClient(CoordinationV1Api).listNamespacedLease({ namespace: 'kube-system' });
    const names = leases.items.map((l) => l.metadata?.name);
    expect(names).not.toContain('kube-controller-manager');
    expect(names).not.toContain('kube-scheduler');
  });

  it('serves a CRD and its custom resources', async () => {
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    const group = 'smoke.test.example.com';
    const crdName = `gadgets.${group}`;
    await ext.createCustomResourceDefinition({
      body: {
        metadata: { name: crdName },
        spec: {
          group,
          scope: 'Namespaced',
          names: { kind: 'Gadget', plural: 'gadgets', singular: 'gadget', listKind: 'GadgetList' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
            },
          ],
        },
      },
    });
    const ns = await createNamespace(kc, 'smoke-crd');
    try {
      await waitFor('the CRD to be established', async () => {
        const crd = await ext.readCustomResourceDefinition({ name: crdName });
        return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
      });
      const custom = kc.makeApiClient(CustomObjectsApi);
      const body = { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: 'g1' }, spec: { size: 3 } };
      await custom.createNamespacedCustomObject({ group, version: 'v1', namespace: ns.name, plural: 'gadgets', body });
      const got = (await custom.getNamespacedCustomObject({
        group,
        version: 'v1',
        namespace: ns.name,
        plural: 'gadgets',
        name: 'g1',
      })) as { spec: { size: number } };
      expect(got.spec.size).toBe(3);
    } finally {
      await ns.remove();
      await ext.deleteCustomResourceDefinition({ name: crdName });
    }
  });

  it('schedules a pod that requests ephemeral storage (as most public charts do) and reports it Running and Ready', async () => {
    const ns = await createNamespace(kc, 'smoke-ephemeral');
    const core = kc.makeApiClient(CoreV1Api);
    try {
      await core.createNamespacedPod({
        namespace: ns.name,
        body: {
          metadata: { name: 'scratch' },
          spec: {
            containers: [
              {
                name: 'app',
                image: 'nginx:1.27',
                resources: {
                  requests: { cpu: '100m', memory: '64Mi', 'ephemeral-storage': '1Gi' },
                  limits: { 'ephemeral-storage': '2Gi' },
                },
              },
            ],
          },
        },
      });
      await waitFor(
        'the pod to be Running and Ready',
        async () => {
          const pod = await core.readNamespacedPod({ namespace: ns.name, name: 'scratch' });
          const unschedulable = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
          if (unschedulable?.reason === 'Unschedulable') throw new Error(`pod not scheduled: ${unschedulable.message ?? ''}`);
          return pod.status?.phase === 'Running' && pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        },
        { timeoutMs: 60_000 },
      );
    } finally {
      await ns.remove();
    }
  });

  for (const [label, binary] of [
    ['helm v4', inject('helmBin')],
    ['helm v3', inject('helm3Bin')],
  ] as const) {
    it(`${label} installs a chart whose Deployment becomes Available, and uninstalls it`, async () => {
      const ns = await createNamespace(kc, 'smoke-helm');
      const release = uniqueName('web');
      const env = { ...process.env, KUBECONFIG: inject('kubeconfigPath'), HELM_CACHE_HOME: path.join(chartDir, '.h') };
      try {
        const { stdout } = await run(binary, ['version', '--short'], { env });
        expect(stdout).toMatch(label === 'helm v4' ? /^v4\./ : /^v3\./);
        await run(binary, ['install', release, chartDir, '--namespace', ns.name], { env });
        await waitFor('the Deployment to become Available', () => deploymentAvailable(kc, ns.name, release), {
          timeoutMs: 90_000,
        });
        await run(binary, ['uninstall', release, '--namespace', ns.name, '--wait'], { env });
        const apps = kc.makeApiClient(AppsV1Api);
        const left = await apps.listNamespacedDeployment({ namespace: ns.name });
        expect(left.items).toHaveLength(0);
      } finally {
        await ns.remove();
      }
    });
  }
});
