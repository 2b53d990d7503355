import { describe, expect, it } from 'vitest';
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
