import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { InventoryEntry } from '../../../../src/reconciler/objects/inventory.js';
import { objectReadiness, summarizeReadiness, type ObjectReadiness } from '../../../../src/reconciler/objects/readiness.js';

const entry = (apiVersion: string, kind: string, name: string, namespace = 'demo'): InventoryEntry => ({
  apiVersion,
  kind,
  namespace,
  name,
});

/** A live object as a watch delivers it: plain JSON, timestamps as strings. */
function live(e: InventoryEntry, body: { metadata?: Record<string, unknown>; spec?: unknown; status?: unknown } = {}): KubernetesObject {
  // Typed through unknown: client-node declares timestamps as Date, a watch delivers strings.
  const json: unknown = {
    apiVersion: e.apiVersion,
    kind: e.kind,
    ...body,
    metadata: { name: e.name, namespace: e.namespace, creationTimestamp: '2025-01-01T00:00:00Z', ...body.metadata },
  };
  return json as KubernetesObject;
}

const cond = (type: string, status: string, reason = '', message = '') => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: '2025-01-01T00:00:00Z',
});

const ready = (message: string): ObjectReadiness => ({ ready: true, message });
const notReady = (message: string): ObjectReadiness => ({ ready: false, message });

describe('objectReadiness', () => {
  it('a missing object is not ready', () => {
    expect(objectReadiness(entry('apps/v1', 'Deployment', 'web'), undefined)).toStrictEqual(notReady('Deployment web not found'));
    expect(objectReadiness(entry('v1', 'ConfigMap', 'cfg'), undefined)).toStrictEqual(notReady('ConfigMap cfg not found'));
  });

  it('an object being deleted is not ready, whatever its status says', () => {
    const e = entry('v1', 'ConfigMap', 'cfg');
    const obj = live(e, { metadata: { deletionTimestamp: '2025-01-02T00:00:00Z' } });
    expect(objectReadiness(e, obj)).toStrictEqual(notReady('ConfigMap cfg is being deleted'));
  });

  describe('Deployment', () => {
    const web = entry('apps/v1', 'Deployment', 'web');
    const available = cond('Available', 'True', 'MinimumReplicasAvailable');
    const deployment = (replicas: number | undefined, status: Record<string, unknown> | undefined, generation = 2) =>
      live(web, {
        metadata: { generation },
        spec: replicas === undefined ? {} : { replicas },
        ...(status === undefined ? {} : { status: { observedGeneration: generation, ...status } }),
      });

    it('is ready when every desired replica is updated and available and no old pod is left', () => {
      const obj = deployment(3, { replicas: 3, updatedReplicas: 3, availableReplicas: 3, readyReplicas: 3, conditions: [available] });
      expect(objectReadiness(web, obj)).toStrictEqual(ready('Deployment web 3/3 available'));
    });

    it('is not ready while replicas are still becoming available', () => {
      const obj = deployment(3, { replicas: 3, updatedReplicas: 3, availableReplicas: 1, conditions: [available] });
      expect(objectReadiness(web, obj)).toStrictEqual(notReady('Deployment web 1/3 available'));
    });

    it('is not ready while old replicas are still running or not all are updated', () => {
      const obj = deployment(3, { replicas: 4, updatedReplicas: 1, availableReplicas: 3, conditions: [available] });
      expect(objectReadiness(web, obj)).toStrictEqual(notReady('Deployment web 3/3 available, 1/3 updated, 1 old replica still running'));
    });

    it('is not ready while the controller has not observed the latest generation', () => {
      const obj = live(web, {
        metadata: { generation: 3 },
        spec: { replicas: 1 },
        status: { observedGeneration: 2, replicas: 1, updatedReplicas: 1, availableReplicas: 1, conditions: [available] },
      });
      expect(objectReadiness(web, obj)).toStrictEqual(notReady('Deployment web rollout not observed yet'));
    });

    it('treats a status without observedGeneration as not observed', () => {
      const obj = live(web, { metadata: { generation: 1 }, spec: { replicas: 0 } });
      expect(objectReadiness(web, obj)).toStrictEqual(notReady('Deployment web rollout not observed yet'));
    });

    it('defaults spec.replicas to 1 and reads missing status counters as 0', () => {
      expect(objectReadiness(web, deployment(undefined, {}))).toStrictEqual(notReady('Deployment web 0/1 available, 0/1 updated'));
      expect(objectReadiness(web, deployment(undefined, { replicas: 1, updatedReplicas: 1, availableReplicas: 1 }))).toStrictEqual(
        ready('Deployment web 1/1 available'),
      );
    });

    it('scaled to 0 is ready once no pod is left', () => {
      expect(objectReadiness(web, deployment(0, {}))).toStrictEqual(ready('Deployment web 0/0 available'));
      expect(objectReadiness(web, deployment(0, { replicas: 2, availableReplicas: 2 }))).toStrictEqual(
        notReady('Deployment web 2/0 available, 2 old replicas still running'),
      );
    });

    it('is not ready when the Available condition is False', () => {
      const obj = deployment(1, {
        replicas: 1,
        updatedReplicas: 1,
        availableReplicas: 1,
        conditions: [cond('Available', 'False', 'MinimumReplicasUnavailable', 'Deployment does not have minimum availability.')],
      });
      expect(objectReadiness(web, obj)).toStrictEqual(
        notReady('Deployment web 1/1 available, Available is False: Deployment does not have minimum availability.'),
      );
    });

    it('is not ready when its progress deadline is exceeded, with the condition message', () => {
      const obj = deployment(3, {
        replicas: 3,
        updatedReplicas: 3,
        availableReplicas: 3,
        conditions: [
          available,
          cond('Progressing', 'False', 'ProgressDeadlineExceeded', 'ReplicaSet "web-5d8f" has timed out progressing.'),
        ],
      });
      expect(objectReadiness(web, obj)).toStrictEqual(
        notReady('Deployment web ProgressDeadlineExceeded: ReplicaSet "web-5d8f" has timed out progressing.'),
      );
    });

    it('a finished rollout with Progressing NewReplicaSetAvailable is ready', () => {
      const obj = deployment(2, {
        replicas: 2,
        updatedReplicas: 2,
        availableReplicas: 2,
        conditions: [available, cond('Progressing', 'True', 'NewReplicaSetAvailable')],
      });
      expect(objectReadiness(web, obj).ready).toBe(true);
    });

    it('ignores malformed status fields instead of throwing', () => {
      const obj = live(web, {
        metadata: { generation: 'x' },
        spec: { replicas: '3' },
        status: { availableReplicas: 'lots', conditions: 'none' },
      });
      expect(objectReadiness(web, obj)).toStrictEqual(notReady('Deployment web 0/1 available, 0/1 updated'));
    });
  });

  describe('StatefulSet', () => {
    const db = entry('apps/v1', 'StatefulSet', 'db');
    const sts = (spec: Record<string, unknown>, status: Record<string, unknown>) =>
      live(db, { metadata: { generation: 1 }, spec, status: { observedGeneration: 1, ...status } });

    it('is ready when every replica is ready and updated', () => {
      expect(objectReadiness(db, sts({ replicas: 3 }, { replicas: 3, readyReplicas: 3, updatedReplicas: 3 }))).toStrictEqual(
        ready('StatefulSet db 3/3 ready'),
      );
    });

    it('is not ready while replicas are not ready', () => {
      expect(objectReadiness(db, sts({ replicas: 3 }, { replicas: 3, readyReplicas: 2, updatedReplicas: 3 }))).toStrictEqual(
        notReady('StatefulSet db 2/3 ready'),
      );
    });

    it('is not ready while a rolling update is in progress', () => {
      expect(objectReadiness(db, sts({ replicas: 3 }, { replicas: 3, readyReplicas: 3, updatedReplicas: 1 }))).toStrictEqual(
        notReady('StatefulSet db 3/3 ready, 1/3 updated'),
      );
    });

    it('does not require currentRevision to equal updateRevision', () => {
      const obj = sts(
        { replicas: 2, updateStrategy: { type: 'RollingUpdate' } },
        { replicas: 2, readyReplicas: 2, updatedReplicas: 2, currentRevision: 'db-1', updateRevision: 'db-2' },
      );
      expect(objectReadiness(db, obj).ready).toBe(true);
    });

    it('expects only the pods at or above a rolling-update partition to be updated', () => {
      const spec = { replicas: 3, updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 2 } } };
      expect(objectReadiness(db, sts(spec, { readyReplicas: 3, updatedReplicas: 1 })).ready).toBe(true);
      expect(objectReadiness(db, sts(spec, { readyReplicas: 3, updatedReplicas: 0 }))).toStrictEqual(
        notReady('StatefulSet db 3/3 ready, 0/1 updated'),
      );
    });

    it('does not wait for an OnDelete rollout', () => {
      const spec = { replicas: 2, updateStrategy: { type: 'OnDelete' } };
      expect(objectReadiness(db, sts(spec, { readyReplicas: 2, updatedReplicas: 0 }))).toStrictEqual(ready('StatefulSet db 2/2 ready'));
    });

    it('honours generation lag, the default of 1 replica and scaling to 0', () => {
      const lagging = live(db, { metadata: { generation: 2 }, spec: { replicas: 0 }, status: { observedGeneration: 1 } });
      expect(objectReadiness(db, lagging)).toStrictEqual(notReady('StatefulSet db rollout not observed yet'));
      expect(objectReadiness(db, sts({}, {}))).toStrictEqual(notReady('StatefulSet db 0/1 ready, 0/1 updated'));
      expect(objectReadiness(db, sts({ replicas: 0 }, {}))).toStrictEqual(ready('StatefulSet db 0/0 ready'));
    });
  });

  describe('DaemonSet', () => {
    const agent = entry('apps/v1', 'DaemonSet', 'agent');
    const ds = (status: Record<string, unknown>, spec: Record<string, unknown> = {}) =>
      live(agent, { metadata: { generation: 4 }, spec, status: { observedGeneration: 4, ...status } });

    it('is ready when every scheduled pod is available and updated', () => {
      const obj = ds({ desiredNumberScheduled: 3, numberAvailable: 3, updatedNumberScheduled: 3, numberReady: 3 });
      expect(objectReadiness(agent, obj)).toStrictEqual(ready('DaemonSet agent 3/3 available'));
    });

    it('is not ready while pods are unavailable or not updated', () => {
      expect(objectReadiness(agent, ds({ desiredNumberScheduled: 3, numberAvailable: 2, updatedNumberScheduled: 3 }))).toStrictEqual(
        notReady('DaemonSet agent 2/3 available'),
      );
      expect(objectReadiness(agent, ds({ desiredNumberScheduled: 3, numberAvailable: 3, updatedNumberScheduled: 1 }))).toStrictEqual(
        notReady('DaemonSet agent 3/3 available, 1/3 updated'),
      );
    });

    it('does not wait for an OnDelete rollout', () => {
      const obj = ds(
        { desiredNumberScheduled: 2, numberAvailable: 2, updatedNumberScheduled: 0 },
        { updateStrategy: { type: 'OnDelete' } },
      );
      expect(objectReadiness(agent, obj).ready).toBe(true);
    });

    it('is ready with no node to schedule on, and not ready while the generation lags', () => {
      expect(objectReadiness(agent, ds({ desiredNumberScheduled: 0 }))).toStrictEqual(ready('DaemonSet agent 0/0 available'));
      const lagging = live(agent, { metadata: { generation: 5 }, status: { observedGeneration: 4, desiredNumberScheduled: 0 } });
      expect(objectReadiness(agent, lagging)).toStrictEqual(notReady('DaemonSet agent rollout not observed yet'));
    });
  });

  describe('ReplicaSet', () => {
    const rs = entry('apps/v1', 'ReplicaSet', 'web-5d8f');

    it('is ready when enough replicas are available', () => {
      const obj = live(rs, { metadata: { generation: 1 }, spec: { replicas: 2 }, status: { observedGeneration: 1, availableReplicas: 2 } });
      expect(objectReadiness(rs, obj)).toStrictEqual(ready('ReplicaSet web-5d8f 2/2 available'));
    });

    it('is not ready with too few available, missing counters or a lagging generation', () => {
      const few = live(rs, { metadata: { generation: 1 }, spec: { replicas: 2 }, status: { observedGeneration: 1, availableReplicas: 1 } });
      expect(objectReadiness(rs, few)).toStrictEqual(notReady('ReplicaSet web-5d8f 1/2 available'));
      const bare = live(rs, { metadata: { generation: 1 }, status: { observedGeneration: 1 } });
      expect(objectReadiness(rs, bare)).toStrictEqual(notReady('ReplicaSet web-5d8f 0/1 available'));
      const lagging = live(rs, { metadata: { generation: 2 }, spec: { replicas: 0 }, status: { observedGeneration: 1 } });
      expect(objectReadiness(rs, lagging)).toStrictEqual(notReady('ReplicaSet web-5d8f rollout not observed yet'));
    });

    it('scaled to 0 is ready', () => {
      const obj = live(rs, { metadata: { generation: 3 }, spec: { replicas: 0 }, status: { observedGeneration: 3, replicas: 0 } });
      expect(objectReadiness(rs, obj).ready).toBe(true);
    });
  });

  describe('Job', () => {
    const job = entry('batch/v1', 'Job', 'migrate');
    const withConditions = (...conditions: unknown[]) => live(job, { status: { conditions } });

    it('is ready once Complete', () => {
      const obj = withConditions(cond('SuccessCriteriaMet', 'True', 'CompletionsReached'), cond('Complete', 'True', 'CompletionsReached'));
      expect(objectReadiness(job, obj)).toStrictEqual(ready('Job migrate complete'));
    });

    it('is not ready once Failed, naming the reason', () => {
      const obj = withConditions(cond('Failed', 'True', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'));
      expect(objectReadiness(job, obj)).toStrictEqual(notReady('Job migrate failed: BackoffLimitExceeded'));
      expect(objectReadiness(job, withConditions(cond('Failed', 'True')))).toStrictEqual(notReady('Job migrate failed'));
    });

    it('is running without a terminal condition, or with one that is not True', () => {
      expect(objectReadiness(job, live(job))).toStrictEqual(notReady('Job migrate running'));
      expect(objectReadiness(job, live(job, { status: { active: 1 } }))).toStrictEqual(notReady('Job migrate running'));
      expect(objectReadiness(job, withConditions(cond('Complete', 'False'), cond('Failed', 'False')))).toStrictEqual(
        notReady('Job migrate running'),
      );
    });
  });

  describe('PersistentVolumeClaim', () => {
    const pvc = entry('v1', 'PersistentVolumeClaim', 'data');

    it('is ready when Bound', () => {
      expect(objectReadiness(pvc, live(pvc, { status: { phase: 'Bound' } }))).toStrictEqual(ready('PersistentVolumeClaim data Bound'));
    });

    it('is not ready in any other phase or without one', () => {
      expect(objectReadiness(pvc, live(pvc, { status: { phase: 'Pending' } }))).toStrictEqual(
        notReady('PersistentVolumeClaim data Pending'),
      );
      expect(objectReadiness(pvc, live(pvc, { status: { phase: 'Lost' } }))).toStrictEqual(notReady('PersistentVolumeClaim data Lost'));
      expect(objectReadiness(pvc, live(pvc))).toStrictEqual(notReady('PersistentVolumeClaim data has no phase yet'));
    });
  });

  describe('Service', () => {
    const svc = entry('v1', 'Service', 'web');

    it('of a type other than LoadBalancer is ready when it exists', () => {
      expect(objectReadiness(svc, live(svc, { spec: { type: 'ClusterIP' } }))).toStrictEqual(ready('Service web exists'));
      expect(objectReadiness(svc, live(svc, { spec: { type: 'NodePort' }, status: { loadBalancer: {} } })).ready).toBe(true);
      expect(objectReadiness(svc, live(svc))).toStrictEqual(ready('Service web exists'));
    });

    it('of type LoadBalancer waits for an ingress address', () => {
      const pending = notReady('Service web waiting for a load balancer address');
      expect(objectReadiness(svc, live(svc, { spec: { type: 'LoadBalancer' } }))).toStrictEqual(pending);
      expect(objectReadiness(svc, live(svc, { spec: { type: 'LoadBalancer' }, status: { loadBalancer: {} } }))).toStrictEqual(pending);
      expect(objectReadiness(svc, live(svc, { spec: { type: 'LoadBalancer' }, status: { loadBalancer: { ingress: [] } } }))).toStrictEqual(
        pending,
      );
    });

    it('of type LoadBalancer is ready once an address is assigned', () => {
      const byIp = live(svc, {
        spec: { type: 'LoadBalancer' },
        status: { loadBalancer: { ingress: [{ ip: '203.0.113.7', ipMode: 'VIP' }] } },
      });
      expect(objectReadiness(svc, byIp)).toStrictEqual(ready('Service web load balancer at 203.0.113.7'));
      const byName = live(svc, { spec: { type: 'LoadBalancer' }, status: { loadBalancer: { ingress: [{ hostname: 'lb.example.com' }] } } });
      expect(objectReadiness(svc, byName)).toStrictEqual(ready('Service web load balancer at lb.example.com'));
    });
  });

  describe('Pod', () => {
    const pod = entry('v1', 'Pod', 'web-0');

    it('is ready when its Ready condition is True', () => {
      const obj = live(pod, { status: { phase: 'Running', conditions: [cond('PodScheduled', 'True'), cond('Ready', 'True')] } });
      expect(objectReadiness(pod, obj)).toStrictEqual(ready('Pod web-0 ready'));
    });

    it('is ready when it Succeeded, even though it is no longer Ready', () => {
      const obj = live(pod, { status: { phase: 'Succeeded', conditions: [cond('Ready', 'False', 'PodCompleted')] } });
      expect(objectReadiness(pod, obj)).toStrictEqual(ready('Pod web-0 succeeded'));
    });

    it('is not ready when Failed, even with a stale Ready condition', () => {
      const obj = live(pod, { status: { phase: 'Failed', reason: 'Evicted', conditions: [cond('Ready', 'True')] } });
      expect(objectReadiness(pod, obj)).toStrictEqual(notReady('Pod web-0 failed: Evicted'));
      expect(objectReadiness(pod, live(pod, { status: { phase: 'Failed' } }))).toStrictEqual(notReady('Pod web-0 failed'));
    });

    it('is not ready while pending or running without readiness', () => {
      expect(objectReadiness(pod, live(pod, { status: { phase: 'Pending' } }))).toStrictEqual(notReady('Pod web-0 not ready (Pending)'));
      const running = live(pod, { status: { phase: 'Running', conditions: [cond('Ready', 'False', 'ContainersNotReady')] } });
      expect(objectReadiness(pod, running)).toStrictEqual(notReady('Pod web-0 not ready (Running)'));
      expect(objectReadiness(pod, live(pod))).toStrictEqual(notReady('Pod web-0 not ready (no phase yet)'));
    });
  });

  describe('any other kind', () => {
    const cm = entry('v1', 'ConfigMap', 'cfg');
    const cert = entry('cert-manager.io/v1', 'Certificate', 'tls');

    it('is ready when it exists and has no status', () => {
      expect(objectReadiness(cm, live(cm))).toStrictEqual(ready('ConfigMap cfg ready'));
    });

    it('is ready when its Ready condition is True or Unknown, or it has none', () => {
      expect(objectReadiness(cert, live(cert, { status: { conditions: [cond('Ready', 'True')] } })).ready).toBe(true);
      expect(objectReadiness(cert, live(cert, { status: { conditions: [cond('Ready', 'Unknown')] } })).ready).toBe(true);
      expect(objectReadiness(cert, live(cert, { status: { conditions: [cond('Issuing', 'False')] } })).ready).toBe(true);
    });

    it('is not ready when its Ready condition is False, with that condition message', () => {
      const obj = live(cert, {
        status: { conditions: [cond('Ready', 'False', 'DoesNotExist', 'Issuer "letsencrypt" not found')] },
      });
      expect(objectReadiness(cert, obj)).toStrictEqual(notReady('Certificate tls not ready: Issuer "letsencrypt" not found'));
      const reasonOnly = live(cert, { status: { conditions: [cond('Ready', 'False', 'Pending')] } });
      expect(objectReadiness(cert, reasonOnly)).toStrictEqual(notReady('Certificate tls not ready: Pending'));
      const bare = live(cert, { status: { conditions: [{ type: 'Ready', status: 'False' }] } });
      expect(objectReadiness(cert, bare)).toStrictEqual(notReady('Certificate tls not ready'));
    });

    it('judges a custom kind named like a built-in one generically', () => {
      const custom = entry('example.com/v1', 'Deployment', 'web');
      expect(objectReadiness(custom, live(custom, { metadata: { generation: 5 }, spec: { replicas: 3 } }))).toStrictEqual(
        ready('Deployment web ready'),
      );
    });
  });
});

describe('summarizeReadiness', () => {
  const e = (name: string) => entry('apps/v1', 'Deployment', name);
  const ok = (name: string) => ({ entry: e(name), readiness: ready(`Deployment ${name} 1/1 available`) });
  const bad = (name: string) => ({ entry: e(name), readiness: notReady(`Deployment ${name} 0/1 available`) });
  const unknown = (name: string) => ({ entry: e(name), readiness: 'unknown' as const });

  it('a release with no objects is trivially ready', () => {
    expect(summarizeReadiness([])).toStrictEqual({ status: 'True', reason: 'ResourcesReady', message: '0/0 ready', ready: 0, total: 0 });
  });

  it('is True when every object is ready', () => {
    expect(summarizeReadiness([ok('a'), ok('b'), ok('c')])).toStrictEqual({
      status: 'True',
      reason: 'ResourcesReady',
      message: '3/3 ready',
      ready: 3,
      total: 3,
    });
  });

  it('is False when a known object is not ready, naming it', () => {
    expect(summarizeReadiness([ok('a'), bad('web'), ok('c')])).toStrictEqual({
      status: 'False',
      reason: 'ResourcesNotReady',
      message: '2/3 ready: Deployment web 0/1 available',
      ready: 2,
      total: 3,
    });
  });

  it('lists at most 3 not-ready messages and counts the rest', () => {
    const summary = summarizeReadiness([bad('a'), ok('b'), bad('c'), bad('d'), bad('e'), bad('f')]);
    expect(summary).toStrictEqual({
      status: 'False',
      reason: 'ResourcesNotReady',
      message: '1/6 ready: Deployment a 0/1 available; Deployment c 0/1 available; Deployment d 0/1 available, …and 2 more',
      ready: 1,
      total: 6,
    });
    expect(summarizeReadiness([bad('a'), bad('b'), bad('c')]).message).toBe(
      '0/3 ready: Deployment a 0/1 available; Deployment b 0/1 available; Deployment c 0/1 available',
    );
  });

  it('is False rather than Unknown when some are unknown and some known not ready', () => {
    const summary = summarizeReadiness([unknown('a'), bad('b'), ok('c')]);
    expect(summary).toMatchObject({ status: 'False', reason: 'ResourcesNotReady', message: '1/3 ready: Deployment b 0/1 available' });
    expect(summary).toMatchObject({ ready: 1, total: 3 });
  });

  it('is Unknown when nothing is known not ready but some states are not known yet', () => {
    expect(summarizeReadiness([ok('a'), unknown('b'), unknown('c')])).toStrictEqual({
      status: 'Unknown',
      reason: 'ReadinessUnknown',
      message: 'waiting for the state of 2 objects',
      ready: 1,
      total: 3,
    });
    expect(summarizeReadiness([unknown('a')]).message).toBe('waiting for the state of 1 object');
  });

  it('summarizes objectReadiness results end to end', () => {
    const pvc = entry('v1', 'PersistentVolumeClaim', 'data');
    const svc = entry('v1', 'Service', 'web');
    const summary = summarizeReadiness([
      { entry: pvc, readiness: objectReadiness(pvc, live(pvc, { status: { phase: 'Pending' } })) },
      { entry: svc, readiness: objectReadiness(svc, live(svc)) },
      { entry: e('gone'), readiness: objectReadiness(e('gone'), undefined) },
    ]);
    expect(summary.message).toBe('1/3 ready: PersistentVolumeClaim data Pending; Deployment gone not found');
  });
});
