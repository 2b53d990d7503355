import { Writable } from 'node:stream';
import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { Controller } from '../../../src/runtime/controller.js';
import type { EventSource, ObjectSummary } from '../../../src/runtime/informer.js';

/** The smallest event source: objects added by the test, synced at once. */
class Source implements EventSource {
  readonly #adds: ((o: KubernetesObject) => void)[] = [];
  start = () => Promise.resolve();
  stop = () => Promise.resolve();
  hasSynced = () => true;
  get = () => undefined;
  list = () => [];
  onAdd(h: (o: KubernetesObject) => void): void {
    this.#adds.push(h);
  }
  onUpdate(_h: (o: KubernetesObject, old: ObjectSummary | undefined) => void): void {
    // no updates in this test
  }
  onDelete(_h: (o: KubernetesObject) => void): void {
    // no deletes in this test
  }
  add(o: KubernetesObject): void {
    for (const h of this.#adds) h(o);
  }
}

describe('reconcile log lines', () => {
  it('carry controller, controllerGroup, controllerKind, namespace, name and reconcileID', async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _e, cb) {
        for (const l of chunk.toString().split('\n')) if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    const source = new Source();
    let calls = 0;
    const controller = new Controller({
      name: 'widget-controller',
      kubeConfig: new KubeConfig(),
      resource: { group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true },
      namespaces: [],
      maxConcurrentReconciles: 1,
      log: pino({ level: 'info' }, stream),
      sourceFactory: () => source,
      reconciler: {
        reconcile: (_req, ctx) => {
          calls++;
          ctx.log.info('Reconciling');
          if (calls === 1) return Promise.reject(new Error('helm failed'));
          return Promise.resolve({});
        },
      },
      queue: { backoff: { baseMs: 1, capMs: 1 } },
    });
    await controller.start();
    source.add({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1', namespace: 'ns1' } });
    await vi.waitFor(() => {
      expect(calls).toBe(2);
    });
    await controller.stop();
    const reconcileLines = lines.filter((l) => l.msg === 'Reconciling' || l.msg === 'Reconciler error');
    expect(reconcileLines.map((l) => l.msg)).toEqual(['Reconciling', 'Reconciler error', 'Reconciling']);
    for (const l of reconcileLines) {
      expect(l).toMatchObject({
        controller: 'widget-controller',
        controllerGroup: 'example.com',
        controllerKind: 'Widget',
        namespace: 'ns1',
        name: 'w1',
      });
      expect(l.reconcileID).toMatch(/^[0-9a-f-]{36}$/);
    }
    // One ID per reconcile, shared by the lines of that reconcile.
    expect(reconcileLines[0]!.reconcileID).toBe(reconcileLines[1]!.reconcileID);
    expect(reconcileLines[2]!.reconcileID).not.toBe(reconcileLines[0]!.reconcileID);
  });
});
