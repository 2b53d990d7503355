import { describe, expect, it } from 'vitest';
import type { Obj } from '../../../src/olm/cluster.js';
import { deploymentAvailable, olmObjects, PLACEMENT, podStuck, registryObjects } from '../../../src/olm/in-cluster.js';
import { inlineBundle } from '../../../src/olm/bundle.js';
import { imageTag } from '../../../src/olm/olm.js';

interface PodSpec {
  tolerations: unknown[];
  affinity: unknown;
  containers: { image: string; command: string[]; volumeMounts: { mountPath: string; subPath?: string }[] }[];
}
const podSpec = (o: { kind?: string; spec?: unknown }): PodSpec =>
  (o.kind === 'Pod' ? o.spec : (o.spec as { template: { spec: unknown } }).template.spec) as PodSpec;

describe('OLM as pods: its objects', () => {
  const objects = olmObjects({ namespace: 'olm', image: 'reg/olm:v1', opmImage: 'reg/opm:v2' });

  it('runs both operators from the image, off kwok fake nodes and tolerating the real node', () => {
    const deployments = objects.filter((o) => o.kind === 'Deployment');
    expect(deployments.map((d) => d.metadata?.name)).toEqual(['olm-operator', 'catalog-operator']);
    for (const d of deployments) {
      const spec = podSpec(d);
      expect(spec.containers[0]?.image).toBe('reg/olm:v1');
      expect(spec.tolerations).toEqual(PLACEMENT.tolerations);
      expect(spec.affinity).toEqual(PLACEMENT.affinity);
    }
    const catalog = podSpec(deployments[1] as Obj).containers[0]?.command ?? [];
    expect(catalog).toContain('--opmImage=reg/opm:v2');
    expect(catalog).toContain('--util-image=reg/olm:v1');
  });

  it('binds its ServiceAccount to the cluster role by the namespace', () => {
    const binding = objects.find((o) => o.kind === 'ClusterRoleBinding') as Obj & { subjects: unknown[] };
    expect(binding.metadata?.name).toBe('olm-operator-binding-olm');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'olm-operator-serviceaccount', namespace: 'olm' }]);
  });

  it("serves run bundle's catalog file alone from the ConfigMap (no ..data directories under /configs)", () => {
    const { configMap, pod } = registryObjects({
      name: 'p-catalog',
      namespace: 'demo',
      packageName: 'p',
      catalog: 'x',
      opmImage: 'reg/opm:v2',
      labels: { a: 'b' },
    });
    expect((configMap as Obj & { data: Record<string, string> }).data).toEqual({ 'catalog.yaml': 'x' });
    const c = podSpec(pod).containers[0];
    expect(c?.command).toEqual(['/bin/opm', 'serve', '/configs', '--port', '50051']);
    expect(c?.volumeMounts).toContainEqual({ name: 'catalog', mountPath: '/configs/p/catalog.yaml', subPath: 'catalog.yaml' });
  });
});

describe('OLM as pods: reading their status', () => {
  it('a Deployment is available with Available=True and a ready replica', () => {
    expect(deploymentAvailable({ status: { conditions: [{ type: 'Available', status: 'True' }], readyReplicas: 1 } })).toBe(true);
    expect(deploymentAvailable({ status: { conditions: [{ type: 'Available', status: 'True' }], readyReplicas: 0 } })).toBe(false);
    expect(deploymentAvailable({ status: { conditions: [{ type: 'Available', status: 'False' }], readyReplicas: 1 } })).toBe(false);
    expect(deploymentAvailable(undefined)).toBe(false);
  });

  it('a pod is stuck on an image pull or a crash loop, not while it starts', () => {
    const pod = (state: unknown, lastState?: unknown): Obj => ({
      metadata: { name: 'p' },
      status: { containerStatuses: [{ name: 'c', state, lastState }] },
    });
    expect(podStuck(pod({ waiting: { reason: 'ImagePullBackOff', message: 'not found' } }))).toBe(
      'pod p: container c ImagePullBackOff: not found',
    );
    expect(podStuck(pod({ waiting: { reason: 'CrashLoopBackOff' } }, { terminated: { exitCode: 1, reason: 'Error' } }))).toBe(
      'pod p: container c CrashLoopBackOff (last exit 1 Error)',
    );
    expect(podStuck(pod({ waiting: { reason: 'ContainerCreating' } }))).toBeUndefined();
    expect(podStuck(pod({ running: {} }))).toBeUndefined();
    const unschedulable: Obj = {
      metadata: { name: 'p' },
      status: { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/2 nodes' }] },
    };
    expect(podStuck(unschedulable)).toMatch(/^pod p is not scheduled: 0\/2 nodes/);
  });

  it('the version is the image tag', () => {
    expect(imageTag('quay.io/operator-framework/olm:v0.33.0')).toBe('v0.33.0');
    expect(imageTag('127.0.0.1:5000/olm')).toBeUndefined();
    expect(imageTag(undefined)).toBeUndefined();
  });
});

describe('the catalog bundle', () => {
  it('drops the image, so OLM installs the embedded manifests instead of unpacking it in a Job', () => {
    expect(inlineBundle({ schema: 'olm.bundle', name: 'p.v1', image: 'reg/b:v1', properties: [] })).toEqual({
      schema: 'olm.bundle',
      name: 'p.v1',
      properties: [],
    });
  });
});
