import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { BucketShare } from '../../../src/runtime/watch-share.js';
import type { RestMapper, ResourceMapping } from '../../../src/k8s/restmapper.js';
import { dependentEventPriority, DependentWatcher } from '../../../src/operator/dependents.js';
import { makeLogger } from '../../../src/telemetry/logger.js';
import { loopbackKubeConfig } from '../../support/loopback-kubeconfig.js';

describe('dependentEventPriority', () => {
  it("queues a deleted release object (drift) with the CRs' own events, other changes behind them", () => {
    expect(dependentEventPriority('deleted')).toBe('normal');
    expect(dependentEventPriority('added')).toBe('low');
    expect(dependentEventPriority('updated')).toBe('low');
  });
});

describe('DependentWatcher', () => {
  it('leaves no informer behind when stop() runs while a kind is still being mapped', async () => {
    const mapped = Promise.withResolvers<ResourceMapping>();
    const mapper = { mapping: () => mapped.promise } as unknown as RestMapper;
    const watcher = new DependentWatcher({
      // Nothing listens there: an informer started by mistake fails its LIST, and stays counted.
      kubeConfig: loopbackKubeConfig('https://127.0.0.1:1'),
      mapper,
      namespaces: [],
      log: makeLogger({ level: 'silent' }),
      route: () => undefined,
      syncTimeoutMs: 50,
    });
    const watching = watcher.watch([{ apiVersion: 'v1', kind: 'ConfigMap' }]);
    await watcher.stop();
    mapped.resolve({ group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true });
    await watching;
    expect(watcher.informerCount()).toBe(0);
  });
});

describe('DependentWatcher with a share (docs/adr/0103)', () => {
  it("caches only the share's namespaces, and reads an object of another one from the API server", async () => {
    const cm = (namespace: string, name: string) => ({ metadata: { name, namespace, resourceVersion: '1' } });
    // A LIST of ConfigMaps in two namespaces, then a watch that stays open and silent.
    const server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (new URL(req.url ?? '/', 'http://x').searchParams.get('watch') === 'true') {
        res.flushHeaders();
        return;
      }
      res.end(JSON.stringify({ kind: 'ConfigMapList', metadata: { resourceVersion: '5' }, items: [cm('mine', 'a'), cm('theirs', 'b')] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const share = new BucketShare({ bucketOf: (ns) => (ns === 'mine' ? 0 : 1) });
    share.set([0]);
    const mapping: ResourceMapping = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
    const watcher = new DependentWatcher({
      kubeConfig: loopbackKubeConfig(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
      mapper: { mapping: () => Promise.resolve(mapping) } as unknown as RestMapper,
      namespaces: [],
      log: makeLogger({ level: 'silent' }),
      route: () => undefined,
      share,
    });
    try {
      await watcher.watch([{ apiVersion: 'v1', kind: 'ConfigMap' }]);
      const entry = (namespace: string, name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name });
      expect(watcher.get(entry('mine', 'a'))).toMatchObject({ known: true, object: { metadata: { name: 'a' } } });
      // Not held: not "known absent" either (that would read as drift to repair), but unknown.
      expect(watcher.get(entry('theirs', 'b'))).toEqual({ known: false });
      // helm_operator_informer_objects counts the share, not what the LIST returned.
      expect(watcher.cachedObjects()).toEqual([{ kind: 'ConfigMap', objects: 1 }]);
    } finally {
      await watcher.stop();
      server.closeAllConnections();
      server.close();
    }
  });
});
