/**
 * kwok-controller fakes only the Nodes annotated kwok.x-k8s.io/node=fake (hack/cluster.sh, every
 * mode): a Node it does not own, such as the real node of `up --real-node` (docs/real-node.md), keeps
 * its kubelet's status and its pods are never reported Running by kwok.
 */
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { testKubeConfig, uniqueName, waitFor } from '../../support/kube.js';

const node = (name: string, fake: boolean): V1Node => ({
  metadata: { name, ...(fake ? { annotations: { 'kwok.x-k8s.io/node': 'fake' } } : {}), labels: { 'kubernetes.io/hostname': name } },
  spec: { taints: [{ key: 'kwok-scope-test', value: 'true', effect: 'NoSchedule' }] },
});

describe('kwok-controller in the test control plane', () => {
  const core = testKubeConfig().makeApiClient(CoreV1Api);
  const fake = uniqueName('kwok-scope-fake');
  const other = uniqueName('kwok-scope-other');

  afterAll(async () => {
    for (const name of [fake, other]) {
      await core.deleteNamespacedPod({ name, namespace: 'default', gracePeriodSeconds: 0 }).catch(() => undefined);
      await core.deleteNode({ name }).catch(() => undefined);
    }
  });

  it('manages the annotated Node and its pods, and leaves a Node without the annotation alone', async () => {
    for (const [name, isFake] of [
      [fake, true],
      [other, false],
    ] as const) {
      await core.createNode({ body: node(name, isFake) });
      // Bound to the node by name, tolerating its taint: the scheduler is not involved.
      await core.createNamespacedPod({
        namespace: 'default',
        body: {
          metadata: { name },
          spec: {
            nodeName: name,
            tolerations: [{ key: 'kwok-scope-test', operator: 'Exists' }],
            containers: [{ name: 'c', image: 'example.com/none:1' }],
          },
        },
      });
    }
    // kwok has seen both Nodes and both pods once the annotated ones are faked.
    await waitFor(`kwok to make ${fake} Ready`, async () =>
      (await core.readNode({ name: fake })).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    await waitFor(
      `kwok to report pod ${fake} Running`,
      async () => (await core.readNamespacedPod({ name: fake, namespace: 'default' })).status?.phase === 'Running',
    );
    expect((await core.readNode({ name: other })).status?.conditions ?? []).toEqual([]);
    const pod = await core.readNamespacedPod({ name: other, namespace: 'default' });
    expect(pod.status?.phase).toBe('Pending');
    expect(pod.status?.podIP).toBeUndefined();
  });
});
