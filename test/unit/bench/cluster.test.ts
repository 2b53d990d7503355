import { describe, expect, it } from 'vitest';
import { deploymentSettled, openWatches } from '../../../bench/compare/cluster.js';
import { podCount } from '../../../bench/compare/main.js';
import { podsNeeded } from '../../../bench/compare/scenarios.js';

const deployment = (replicas: number, status: Record<string, number> | undefined, generation = 2) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'b-1-nginx', generation },
  spec: { replicas },
  ...(status === undefined ? {} : { status }),
});

describe('deploymentSettled', () => {
  it('holds once every Pod of the latest spec is available', () => {
    expect(deploymentSettled(deployment(2, { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }))).toBe(true);
  });

  it('waits for a Deployment no controller has seen yet', () => {
    expect(deploymentSettled(deployment(2, undefined))).toBe(false);
    expect(deploymentSettled(deployment(2, { observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }))).toBe(false);
  });

  it('waits for Pods still being created or becoming available', () => {
    expect(deploymentSettled(deployment(3, { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }))).toBe(false);
    expect(deploymentSettled(deployment(2, { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 1 }))).toBe(false);
  });

  it('waits for the Pods of an older ReplicaSet to go', () => {
    expect(deploymentSettled(deployment(2, { observedGeneration: 2, replicas: 3, updatedReplicas: 2, availableReplicas: 2 }))).toBe(false);
  });
});

describe('podsNeeded', () => {
  it('counts the sample spec replicas of every CR and one more per spec-change try', () => {
    expect(podsNeeded(1000, 3)).toBe(2003);
    expect(podsNeeded(100, 5)).toBe(205);
  });
});

describe('openWatches', () => {
  const metrics = [
    '# TYPE apiserver_longrunning_requests gauge',
    'apiserver_longrunning_requests{component="apiserver",group="example.com",resource="nginxes",scope="cluster",subresource="",verb="WATCH",version="v1alpha1"} 1',
    'apiserver_longrunning_requests{component="apiserver",group="example.com",resource="nginxes",scope="namespace",subresource="",verb="WATCH",version="v1alpha1"} 2',
    'apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="namespace",subresource="log",verb="CONNECT",version="v1"} 4',
    'apiserver_longrunning_requests{component="apiserver",group="",resource="secrets",scope="cluster",subresource="",verb="WATCH",version="v1"} 3',
    'apiserver_request_total{code="200",resource="nginxes",verb="WATCH"} 9',
  ].join('\n');

  it('sums the open WATCH requests of one resource, at every scope', () => {
    expect(openWatches(metrics, 'nginxes')).toBe(3);
    expect(openWatches(metrics, 'secrets')).toBe(3);
  });

  it('counts nothing for a resource nobody watches, nor another verb or metric', () => {
    expect(openWatches(metrics, 'widgets')).toBe(0);
    expect(openWatches(metrics, 'pods')).toBe(0);
  });
});

describe("a fake Node's room for Pods", () => {
  it('reads allocatable.pods as the API server writes it, "1k" for 1000 included', () => {
    expect(podCount('250')).toBe(250);
    expect(podCount('1k')).toBe(1000);
    expect(podCount('2k')).toBe(2000);
    expect(podCount('')).toBe(0);
    expect(podCount('lots')).toBe(0);
  });
});
