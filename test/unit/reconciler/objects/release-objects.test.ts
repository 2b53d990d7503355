import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { ObjectClient, ObjectRef } from '../../../../src/k8s/objects.js';
import { inventoryOf, parseManifest } from '../../../../src/reconciler/objects/inventory.js';
import { ReleaseObjects } from '../../../../src/reconciler/objects/release-objects.js';
import { ReleaseChangedError, type DesiredObject, type Subject } from '../../../../src/reconciler/objects/release-object-types.js';
import { silentLogger } from '../../../../src/telemetry/logger.js';
import { fakeIsNamespaced } from '../actions/fakes.js';

const MANIFEST = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  a: "1"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-other
data:
  b: "2"
`;

/** An API server on which every object of the release was deleted; the writes it was asked for. */
function emptyCluster(): { client: ObjectClient; writes: string[] } {
  const writes: string[] = [];
  const client = {
    as: () => client,
    get: (_ref: ObjectRef) => Promise.resolve(undefined),
    apply: (body: KubernetesObject) => {
      writes.push(`apply ${body.metadata?.name ?? ''}`);
      return Promise.resolve(body);
    },
  } as unknown as ObjectClient;
  return { client, writes };
}

async function desired(): Promise<DesiredObject[]> {
  const rendered = parseManifest(MANIFEST);
  const entries = await inventoryOf(rendered, 'apps', fakeIsNamespaced());
  return rendered.map((r, i) => ({ rendered: r, entry: entries[i] as DesiredObject['entry'] }));
}

const subject = (beforeWrite: () => Promise<void>): Subject => ({
  owner: { apiVersion: 'example.com/v1', kind: 'Nginx', group: 'example.com', namespace: 'apps', name: 'web', uid: 'uid-web' },
  log: silentLogger(),
  beforeWrite,
});

describe('ReleaseObjects.repairDrift with a check before writes (ADR 0069)', () => {
  it('writes nothing and ends the pass with the check’s ReleaseChangedError', async () => {
    const { client, writes } = emptyCluster();
    const changed = new ReleaseChangedError('revision 1 of release web is no longer its latest deployed revision', []);
    const objects = new ReleaseObjects({ objects: client, chartName: 'nginx' });
    await expect(
      objects.repairDrift(
        subject(() => Promise.reject(changed)),
        await desired(),
      ),
    ).rejects.toBe(changed);
    expect(writes).toEqual([]);
  });

  it('ends the pass with a failed storage read as it is: not a failed repair of each object', async () => {
    const { client, writes } = emptyCluster();
    const unavailable = new Error('the server is currently unable to handle the request (get secrets sh.helm.release.v1.web.v1)');
    const objects = new ReleaseObjects({ objects: client, chartName: 'nginx' });
    await expect(
      objects.repairDrift(
        subject(() => Promise.reject(unavailable)),
        await desired(),
      ),
    ).rejects.toBe(unavailable);
    expect(writes).toEqual([]);
  });

  it('repairs every object once the check passes', async () => {
    const { client, writes } = emptyCluster();
    let checks = 0;
    const objects = new ReleaseObjects({ objects: client, chartName: 'nginx' });
    const report = await objects.repairDrift(
      subject(() => {
        checks++;
        return Promise.resolve();
      }),
      await desired(),
    );
    expect(report).toMatchObject({ repaired: 2, failures: [] });
    expect(writes).toEqual(['apply web-config', 'apply web-other']);
    expect(checks).toBe(2);
  });
});
