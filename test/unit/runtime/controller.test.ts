import type { KubernetesObject } from '@kubernetes/client-node';
import { KubeConfig, V1ObjectMeta } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AdaptiveGate } from '../../../src/runtime/adaptive-gate.js';
import { ManualClock } from '../../../src/util/clock.js';
import {
  CacheSyncTimeoutError,
  Controller,
  ControllerStateError,
  isMeaningfulUpdate,
  LEASE_WAIT_MS,
  namespaceShare,
  type ControllerOptions,
} from '../../../src/runtime/controller.js';
import { objectSummary, type EventSource, type ObjectSummary } from '../../../src/runtime/informer.js';
import { RequeueSource } from '../../../src/runtime/requeue-source.js';
import {
  lostLeadership,
  TerminalError,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from '../../../src/runtime/reconcile.js';
import { silentLogger } from '../../../src/telemetry/logger.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await tick();
}

/** An in-memory EventSource: tests push events; start() resolves when `sync()` is called (or at once). */
class FakeSource implements EventSource {
  readonly objects = new Map<string, KubernetesObject>();
  readonly adds: ((o: KubernetesObject) => void)[] = [];
  readonly updates: ((o: KubernetesObject, old: ObjectSummary | undefined) => void)[] = [];
  readonly deletes: ((o: KubernetesObject) => void)[] = [];
  synced = false;
  stopped = false;
  #release: (() => void) | undefined;

  constructor(
    readonly namespace: string | undefined,
    private readonly autoSync = true,
  ) {}

  async start(): Promise<void> {
    if (this.autoSync) this.synced = true;
    if (this.synced) return;
    await new Promise<void>((resolve) => (this.#release = resolve));
  }
  sync(): void {
    this.synced = true;
    this.#release?.();
  }
  stop(): Promise<void> {
    this.stopped = true;
    return Promise.resolve();
  }
  hasSynced(): boolean {
    return this.synced;
  }
  get(name: string, namespace?: string): KubernetesObject | undefined {
    return this.objects.get(`${namespace ?? ''}/${name}`);
  }
  list(): readonly KubernetesObject[] {
    return [...this.objects.values()];
  }
  onAdd(h: (o: KubernetesObject) => void): void {
    this.adds.push(h);
  }
  onUpdate(h: (o: KubernetesObject, old: ObjectSummary | undefined) => void): void {
    this.updates.push(h);
  }
  onDelete(h: (o: KubernetesObject) => void): void {
    this.deletes.push(h);
  }

  add(obj: KubernetesObject): void {
    this.objects.set(`${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`, obj);
    for (const h of this.adds) h(obj);
  }
  update(obj: KubernetesObject, old: KubernetesObject): void {
    this.objects.set(`${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`, obj);
    for (const h of this.updates) h(obj, objectSummary(old));
  }
  delete(obj: KubernetesObject): void {
    this.objects.delete(`${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`);
    for (const h of this.deletes) h(obj);
  }
}

type Meta = Partial<V1ObjectMeta>;

const widget = (name: string, meta: Meta = {}): KubernetesObject => ({
  apiVersion: 'rt.test.example.com/v1',
  kind: 'Widget',
  metadata: Object.assign(new V1ObjectMeta(), { name, namespace: 'ns1', resourceVersion: '1', generation: 1 }, meta),
});

/** A new version of `obj` with metadata changes. */
const revise = (obj: KubernetesObject, changes: Meta): KubernetesObject => ({
  ...obj,
  metadata: Object.assign(new V1ObjectMeta(), obj.metadata, changes),
});

interface Call {
  request: Request;
  context: ReconcileContext;
}

/** A reconciler whose behaviour per call is scripted; records calls and concurrency. */
class ScriptedReconciler implements Reconciler {
  readonly calls: Call[] = [];
  active = 0;
  maxActive = 0;
  readonly activeKeys = new Set<string>();
  overlap = 0;
  behaviour: (req: Request, ctx: ReconcileContext) => Promise<Result> = () => Promise.resolve({});
  resync: (() => void) | undefined;
  /** Objects of other replicas' namespaces the controller showed it (observe). */
  readonly observed: string[] = [];
  observe(obj: KubernetesObject): void {
    this.observed.push(`${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`);
  }

  async reconcile(request: Request, context: ReconcileContext): Promise<Result> {
    const key = `${request.namespace}/${request.name}`;
    if (this.activeKeys.has(key)) this.overlap++;
    this.activeKeys.add(key);
    this.calls.push({ request, context });
    this.maxActive = Math.max(this.maxActive, ++this.active);
    try {
      return await this.behaviour(request, context);
    } finally {
      this.active--;
      this.activeKeys.delete(key);
    }
  }
  names(): string[] {
    return this.calls.map((c) => c.request.name);
  }
}

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const controllers: Controller[] = [];
afterEach(async () => {
  await Promise.all(controllers.splice(0).map((c) => c.stop()));
});

/** `synced: false`: the sources hold their first LIST until the test calls `sync()`. */
function setup(overrides: Partial<ControllerOptions> = {}, { synced = true } = {}) {
  const clock = new ManualClock();
  const reconciler = new ScriptedReconciler();
  const sources: FakeSource[] = [];
  const controller = new Controller({
    name: 'widget',
    kubeConfig: new KubeConfig(),
    resource: { group: 'rt.test.example.com', version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true },
    namespaces: [],
    maxConcurrentReconciles: 1,
    reconciler,
    log: silentLogger(),
    clock,
    sourceFactory: (ns) => {
      const s = new FakeSource(ns, synced);
      sources.push(s);
      return s;
    },
    ...overrides,
  });
  controllers.push(controller);
  return { clock, reconciler, sources, controller, source: () => sources[0]! };
}

describe('isMeaningfulUpdate', () => {
  const base = widget('a', { labels: { x: '1' }, annotations: { y: '2' }, finalizers: ['f'] });
  const with_ = (meta: Meta) => revise(base, meta);

  it('ignores status-only changes (resourceVersion moves, nothing else)', () => {
    expect(isMeaningfulUpdate(with_({ resourceVersion: '2', managedFields: [] }), objectSummary(base))).toBe(false);
  });

  it.each([
    ['generation', { generation: 2 }],
    ['labels', { labels: { x: '2' } }],
    ['annotations', { annotations: {} }],
    ['finalizers', { finalizers: [] }],
    ['deletionTimestamp', { deletionTimestamp: new Date('2026-01-01T00:00:00Z') }],
  ])('reacts to %s', (_what, meta) => {
    expect(isMeaningfulUpdate(with_({ resourceVersion: '2', ...meta }), objectSummary(base))).toBe(true);
  });

  it('reacts to anything for kinds without generation, and when the old version is unknown', () => {
    const cm = { metadata: { name: 'c', resourceVersion: '1' } };
    expect(isMeaningfulUpdate({ metadata: { name: 'c', resourceVersion: '2' } }, objectSummary(cm))).toBe(true);
    expect(isMeaningfulUpdate(base, undefined)).toBe(true);
  });
});

describe('Controller event handling', () => {
  it('counts what its sources hold, every watched namespace summed (helm_operator_informer_objects)', async () => {
    const { controller, sources } = setup({ namespaces: ['ns1', 'ns2'] });
    await controller.start();
    expect(controller.kind).toBe('Widget');
    expect(controller.cachedObjects()).toBe(0);
    sources[0]!.add(widget('a'));
    sources[1]!.add(widget('b', { namespace: 'ns2' }));
    sources[1]!.add(widget('c', { namespace: 'ns2' }));
    expect(controller.cachedObjects()).toBe(3);
  });

  it('starts after the sources sync and reconciles added objects with a bound context', async () => {
    const { controller, reconciler, source } = setup();
    expect(controller.hasSynced()).toBe(false);
    await controller.start();
    expect(controller.hasSynced()).toBe(true);
    source().add(widget('a'));
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(1);
    });
    const { request, context } = reconciler.calls[0]!;
    expect(request).toEqual({ namespace: 'ns1', name: 'a' });
    expect(context.reconcileID).toMatch(/^[0-9a-f-]{36}$/);
    expect(context.signal.aborted).toBe(false);
    expect(context.log.bindings()).toMatchObject({
      controller: 'widget',
      controllerGroup: 'rt.test.example.com',
      controllerKind: 'Widget',
      namespace: 'ns1',
      name: 'a',
      reconcileID: context.reconcileID,
    });
  });

  it('queues events seen during the initial list and runs them once workers start', async () => {
    const { controller, reconciler, sources } = setup({}, { synced: false });
    const started = controller.start();
    await tick();
    sources[0]!.add(widget('a'));
    sources[0]!.add(widget('b'));
    await settle();
    expect(reconciler.calls).toHaveLength(0);
    sources[0]!.sync();
    await started;
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['a', 'b']);
    });
  });

  it('serves events that arrive while the first LIST is worked through before the rest of that LIST', async () => {
    const { controller, reconciler, sources } = setup({}, { synced: false });
    const gate = deferred();
    reconciler.behaviour = (req) => (req.name === 'listed-0' ? gate.promise.then(() => ({})) : Promise.resolve({}));
    const started = controller.start();
    await tick();
    for (let i = 0; i < 3; i++) sources[0]!.add(widget(`listed-${i}`));
    sources[0]!.sync();
    await started;
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['listed-0']);
    });
    // While the only worker holds the first listed CR: one is created, a listed one is edited.
    sources[0]!.add(widget('created'));
    sources[0]!.update(widget('listed-2', { generation: 2, resourceVersion: '2' }), widget('listed-2'));
    gate.resolve();
    await vi.waitFor(() => {
      expect(reconciler.names()).toHaveLength(4);
    });
    expect(reconciler.names()).toEqual(['listed-0', 'created', 'listed-2', 'listed-1']);
  });

  it('skips status-only updates but reconciles spec changes and deletes', async () => {
    const { controller, reconciler, source } = setup();
    await controller.start();
    const v1 = widget('a');
    source().add(v1);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(1);
    });
    const v2 = { ...revise(v1, { resourceVersion: '2' }), status: { ok: true } };
    source().update(v2, v1);
    await settle();
    expect(reconciler.calls).toHaveLength(1);
    const v3 = revise(v2, { resourceVersion: '3', generation: 2 });
    source().update(v3, v2);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(2);
    });
    source().delete(v3);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(3);
    });
  });

  it('hands each reconcile its object as the cache holds it, and reconciles the write of a finalizer again', async () => {
    const { controller, reconciler, source } = setup();
    await controller.start();
    const v1 = widget('a');
    source().add(v1);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(1);
    });
    expect(reconciler.calls[0]?.context.cached).toEqual(v1);
    // The reconcile added a finalizer and returned: that write's event brings the next reconcile.
    const v2 = revise(v1, { resourceVersion: '2', finalizers: ['f'] });
    source().update(v2, v1);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(2);
    });
    expect(reconciler.calls[1]?.context.cached).toEqual(v2);
    source().delete(v2);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(3);
    });
    expect(reconciler.calls[2]?.context.cached).toBeUndefined();
  });

  it('tells onObject of every object event, deletes included, even those that queue nothing', async () => {
    const seen: string[] = [];
    const { controller, source } = setup({
      onObject: (obj, deleted) => seen.push(`${obj.metadata?.resourceVersion ?? ''}${deleted ? ' deleted' : ''}`),
    });
    await controller.start();
    const v1 = widget('a');
    source().add(v1);
    const v2 = { ...revise(v1, { resourceVersion: '2' }), status: { ok: true } };
    source().update(v2, v1);
    source().delete(v2);
    expect(seen).toEqual([v1.metadata?.resourceVersion ?? '', '2', '2 deleted']);
  });

  it('resync() has the reconciler drop what it remembers, then queues every cached object once more', async () => {
    const { controller, reconciler, source } = setup();
    const order: string[] = [];
    reconciler.resync = () => order.push('resync');
    reconciler.behaviour = (req) => {
      order.push(req.name);
      return Promise.resolve({});
    };
    await controller.start();
    source().add(widget('a'));
    source().add(widget('b'));
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(2);
    });
    order.length = 0;
    expect(controller.resync()).toBe(2);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(4);
    });
    expect(order).toEqual(['resync', 'a', 'b']);
  });

  it('enqueue() accepts requests from other sources, now or later', async () => {
    const { controller, reconciler, clock } = setup();
    await controller.start();
    controller.enqueue({ namespace: 'ns1', name: 'x' });
    controller.enqueue({ namespace: '', name: 'y' }, { afterMs: 5_000 });
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['x']);
    });
    clock.advance(5_000);
    await vi.waitFor(() => {
      expect(reconciler.calls.map((c) => c.request)).toContainEqual({ namespace: '', name: 'y' });
    });
  });
});

describe('Controller request sources (requeue-source.ts)', () => {
  it('drains a registered source into its queue while it runs: a request made before start is dropped', async () => {
    const clock = new ManualClock();
    const requests = new RequeueSource(clock);
    const { controller, reconciler } = setup({ clock, sources: [requests] });
    requests.request({ namespace: 'ns1', name: 'early' });
    await controller.start();
    requests.request({ namespace: 'ns1', name: 'peer' });
    requests.at(clock.now() + 1_000, () => {
      requests.request({ namespace: 'ns1', name: 'next-wave' });
    });
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['peer']);
    });
    clock.advance(1_000);
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['peer', 'next-wave']);
    });
  });

  it('stops its sources when it stops: a look pending then never runs, nothing is queued after the clock passes it', async () => {
    const clock = new ManualClock();
    const requests = new RequeueSource(clock);
    const { controller, reconciler } = setup({ clock, sources: [requests] });
    await controller.start();
    let looked = false;
    requests.at(clock.now() + 5_000, () => {
      looked = true;
      requests.request({ namespace: 'ns1', name: 'next-wave' });
    });
    await controller.stop({ timeoutMs: 0 });
    expect(clock.pendingTimers()).toBe(0);
    clock.advance(10_000);
    requests.request({ namespace: 'ns1', name: 'late-peer' });
    await settle();
    expect(looked).toBe(false);
    expect(reconciler.calls).toHaveLength(0);
  });

  it('builds its reconciler from its cache: the reconciler reads the kind without holding the controller', async () => {
    const seen: string[] = [];
    const { controller, source } = setup({
      reconciler: (cache) => ({
        reconcile: (request) => {
          seen.push(
            `${request.name}: ${cache
              .list('ns1')
              .map((o) => o.metadata?.name)
              .join(',')}`,
          );
          return Promise.resolve({});
        },
      }),
    });
    await controller.start();
    source().add(widget('a'));
    await vi.waitFor(() => {
      expect(seen).toEqual(['a: a']);
    });
  });
});

describe('Controller result handling', () => {
  it('retries a thrown error with per-key exponential backoff', async () => {
    const { controller, reconciler, clock } = setup();
    reconciler.behaviour = () => Promise.reject(new Error('boom'));
    await controller.start();
    controller.enqueue({ namespace: 'ns1', name: 'a' });
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(1);
    });
    clock.advance(999);
    await settle();
    expect(reconciler.calls).toHaveLength(1);
    clock.advance(1);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(2);
    });
    clock.advance(1_999);
    await settle();
    expect(reconciler.calls).toHaveLength(2);
    clock.advance(1);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(3);
    });
  });

  it('forgets the backoff after a success', async () => {
    const { controller, reconciler, clock } = setup();
    let fail = 2;
    reconciler.behaviour = () => (fail-- > 0 ? Promise.reject(new Error('boom')) : Promise.resolve({}));
    await controller.start();
    controller.enqueue({ namespace: 'ns1', name: 'a' });
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(1);
    });
    clock.advance(1_000);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(2);
    });
    clock.advance(2_000);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(3);
    }); // succeeds
    fail = 1;
    controller.enqueue({ namespace: 'ns1', name: 'a' });
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(4);
    }); // fails again
    clock.advance(1_000); // back to the base delay
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(5);
    });
  });

  it.each([
    ['a TerminalError', () => new TerminalError('bad spec')],
    ['an error caused by a TerminalError', () => new Error('wrapped', { cause: new TerminalError('bad spec') })],
  ])('does not requeue %s', async (_what, make) => {
    const { controller, reconciler, clock } = setup();
    reconciler.behaviour = () => Promise.reject(make());
    await controller.start();
    controller.enqueue({ namespace: 'ns1', name: 'a' });
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(1);
    });
    clock.advance(10 * 60_000);
    await settle();
    expect(reconciler.calls).toHaveLength(1);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('requeues after requeueAfterMs, not before', async () => {
    const { controller, reconciler, clock } = setup();
    reconciler.behaviour = () => Promise.resolve({ requeueAfterMs: 30_000 });
    await controller.start();
    controller.enqueue({ namespace: 'ns1', name: 'a' });
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(1);
    });
    clock.advance(29_999);
    await settle();
    expect(reconciler.calls).toHaveLength(1);
    clock.advance(1);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(2);
    });
  });

  it('queues periodic resyncs and low-priority requests behind the keys events bring', async () => {
    const { controller, reconciler, clock, source } = setup();
    const gate = deferred();
    reconciler.behaviour = (req) =>
      req.name === 'resync'
        ? Promise.resolve({ requeueAfterMs: 10_000 })
        : req.name === 'busy'
          ? gate.promise.then(() => ({}))
          : Promise.resolve({});
    await controller.start();
    controller.enqueue({ namespace: 'ns1', name: 'resync' });
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['resync']);
    });
    controller.enqueue({ namespace: 'ns1', name: 'busy' });
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['resync', 'busy']);
    });
    // While the only worker is busy: the resync falls due, a dependent asks, a CR is created.
    clock.advance(10_000);
    controller.enqueue({ namespace: 'ns1', name: 'dependent' }, { priority: 'low' });
    source().add(widget('created'));
    gate.resolve();
    await vi.waitFor(() => {
      expect(reconciler.names()).toHaveLength(5);
    });
    expect(reconciler.names().slice(2)).toEqual(['created', 'resync', 'dependent']);
  });

  it('a plain success does not requeue', async () => {
    const { controller, reconciler, clock } = setup();
    await controller.start();
    controller.enqueue({ namespace: 'ns1', name: 'a' });
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(1);
    });
    expect(clock.pendingTimers()).toBe(0);
  });
});

describe('Controller concurrency', () => {
  it('runs at most maxConcurrentReconciles at once', async () => {
    // One watched namespace: its CRs may take every worker.
    const { controller, reconciler, source } = setup({ maxConcurrentReconciles: 3, namespaces: ['ns1'] });
    const gate = deferred();
    reconciler.behaviour = async () => {
      await gate.promise;
      return {};
    };
    await controller.start();
    for (let i = 0; i < 10; i++) source().add(widget(`w${i}`));
    await vi.waitFor(() => {
      expect(controller.activeWorkers()).toBe(3);
    });
    await settle();
    expect(reconciler.calls).toHaveLength(3);
    gate.resolve();
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(10);
    });
    expect(reconciler.maxActive).toBe(3);
    await vi.waitFor(() => {
      expect(controller.activeWorkers()).toBe(0);
    });
  });

  it('passes every reconcile through a gate shared by the controllers of several kinds, as it widens', async () => {
    const gate = new AdaptiveGate(2);
    const a = setup({ maxConcurrentReconciles: 4, namespaces: ['ns1'], gate });
    const b = setup({ name: 'gadget', maxConcurrentReconciles: 4, namespaces: ['ns1'], gate });
    const hold = deferred();
    let live = 0;
    let peak = 0;
    for (const { reconciler } of [a, b])
      reconciler.behaviour = async () => {
        peak = Math.max(peak, ++live);
        await hold.promise;
        live--;
        return {};
      };
    await Promise.all([a.controller.start(), b.controller.start()]);
    for (let i = 0; i < 3; i++) {
      a.source().add(widget(`a${i}`));
      b.source().add(widget(`b${i}`));
    }
    await vi.waitFor(() => {
      expect(gate.running).toBe(2);
    });
    await settle();
    expect(a.reconciler.calls.length + b.reconciler.calls.length).toBe(2);
    gate.limit = 3;
    await vi.waitFor(() => {
      expect(a.reconciler.calls.length + b.reconciler.calls.length).toBe(3);
    });
    hold.resolve();
    await vi.waitFor(() => {
      expect(a.reconciler.calls.length + b.reconciler.calls.length).toBe(6);
    });
    expect(peak).toBe(3);
    await vi.waitFor(() => {
      expect(gate.running).toBe(0);
    });
  });

  it("reconciles another namespace's CR while one namespace's hanging reconciles fill the tuned gate", async () => {
    // The tuner narrowed the gate to 2 below 4 workers; ns1's installs hang on a hook.
    const gate = new AdaptiveGate(2, 4);
    const { controller, reconciler, sources } = setup({ maxConcurrentReconciles: 4, namespaces: ['ns1', 'ns2'], gate });
    const hang = deferred();
    reconciler.behaviour = async (req) => {
      if (req.namespace === 'ns1') await hang.promise;
      return {};
    };
    await controller.start();
    const [ns1, ns2] = [sources.find((x) => x.namespace === 'ns1')!, sources.find((x) => x.namespace === 'ns2')!];
    for (let i = 0; i < 3; i++) ns1.add(widget(`hang-${i}`));
    await vi.waitFor(() => {
      expect(gate.running).toBe(2);
    });
    ns2.add(widget('calm', { namespace: 'ns2' }));
    await vi.waitFor(() => {
      expect(reconciler.calls.map((c) => `${c.request.namespace}/${c.request.name}`)).toContain('ns2/calm');
    });
    // ns1's third still waits for the width: the namespace with hanging work got no more slots.
    expect(reconciler.calls.filter((c) => c.request.namespace === 'ns1')).toHaveLength(2);
    hang.resolve();
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(4);
    });
  });

  it('never reconciles one key twice at once; an event during a reconcile runs once afterwards', async () => {
    const { controller, reconciler, source } = setup({ maxConcurrentReconciles: 4 });
    const gate = deferred();
    reconciler.behaviour = async () => {
      await gate.promise;
      return {};
    };
    await controller.start();
    const v1 = widget('a');
    source().add(v1);
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(1);
    });
    for (let g = 2; g < 6; g++) {
      const next = revise(v1, { generation: g, resourceVersion: String(g) });
      source().update(next, v1);
    }
    await settle();
    expect(reconciler.calls).toHaveLength(1);
    gate.resolve();
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(2);
    });
    await settle();
    expect(reconciler.calls).toHaveLength(2);
    expect(reconciler.overlap).toBe(0);
  });
});

describe('Controller fairness across namespaces', () => {
  it('namespaceShare: all workers but one across namespaces, every worker for one namespace, the flag up to the workers', () => {
    expect(namespaceShare(4, [])).toBe(3);
    expect(namespaceShare(2, ['a', 'b'])).toBe(1);
    expect(namespaceShare(1, [])).toBe(1);
    expect(namespaceShare(4, ['a'])).toBe(4);
    expect(namespaceShare(4, ['a', 'a'])).toBe(4);
    expect(namespaceShare(4, [], 2)).toBe(2);
    expect(namespaceShare(4, ['a'], 9)).toBe(4);
  });

  it('reconciles that hang in one namespace leave a worker for another namespace', async () => {
    const { controller, reconciler, source } = setup({ maxConcurrentReconciles: 3 });
    const hang = deferred();
    reconciler.behaviour = async (req) => {
      if (req.namespace === 'hostile') await hang.promise;
      return {};
    };
    await controller.start();
    for (let i = 0; i < 4; i++) source().add(widget(`hook-${i}`, { namespace: 'hostile' }));
    await vi.waitFor(() => {
      expect(controller.activeWorkers()).toBe(2);
    });
    source().add(widget('trivial', { namespace: 'other' }));
    await vi.waitFor(() => {
      expect(reconciler.calls.map((c) => c.request)).toContainEqual({ namespace: 'other', name: 'trivial' });
    });
    await settle();
    expect(reconciler.calls.filter((c) => c.request.namespace === 'hostile')).toHaveLength(2);
    hang.resolve();
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(5);
    });
  });

  it("a CR of another namespace is reconciled next, not after a flooding namespace's backlog", async () => {
    const { controller, reconciler, source } = setup({ maxConcurrentReconciles: 1 });
    const gate = deferred();
    reconciler.behaviour = async () => {
      await gate.promise;
      return {};
    };
    await controller.start();
    for (let i = 0; i < 50; i++) source().add(widget(`flood-${i}`, { namespace: 'flood' }));
    await vi.waitFor(() => {
      expect(reconciler.calls).toHaveLength(1);
    });
    source().add(widget('mine', { namespace: 'other' }));
    gate.resolve();
    // The flooding namespace was waiting first: at most one more of its keys goes before.
    await vi.waitFor(() => {
      expect(reconciler.calls.length).toBeGreaterThanOrEqual(3);
    });
    expect(reconciler.calls.slice(0, 3).map((c) => c.request)).toContainEqual({ namespace: 'other', name: 'mine' });
  });
});

describe('Controller lifecycle', () => {
  it('stop() lets in-flight reconciles finish without aborting them, and stops the sources', async () => {
    const { controller, reconciler, source } = setup();
    const inFlight = deferred<Result>();
    let signal: AbortSignal | undefined;
    reconciler.behaviour = (_req, ctx) => {
      signal = ctx.signal;
      return inFlight.promise;
    };
    await controller.start();
    source().add(widget('a'));
    await vi.waitFor(() => {
      expect(controller.activeWorkers()).toBe(1);
    });
    let stopped = false;
    const stopping = controller.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    expect(source().stopped).toBe(true);
    source().add(widget('b'));
    inFlight.resolve({});
    await stopping;
    expect(signal?.aborted).toBe(false);
    expect(controller.activeWorkers()).toBe(0);
    await settle();
    expect(reconciler.calls).toHaveLength(1);
  });

  it('stop() aborts the reconcile signal only when the shutdown timeout expires', async () => {
    const { controller, reconciler, source, clock } = setup({ shutdownTimeoutMs: 1_000 });
    let sawAbort = false;
    reconciler.behaviour = (_req, ctx) =>
      new Promise((resolve) => {
        ctx.signal.addEventListener('abort', () => {
          sawAbort = true;
          resolve({});
        });
      });
    await controller.start();
    source().add(widget('a'));
    await vi.waitFor(() => {
      expect(controller.activeWorkers()).toBe(1);
    });
    const stopping = controller.stop();
    await settle();
    clock.advance(999);
    expect(sawAbort).toBe(false);
    clock.advance(1);
    await stopping;
    expect(sawAbort).toBe(true);
    expect(controller.activeWorkers()).toBe(0);
  });

  it('stop({ timeoutMs: 0 }) aborts at once', async () => {
    const { controller, reconciler, source } = setup();
    reconciler.behaviour = (_req, ctx) =>
      new Promise((resolve) => {
        ctx.signal.addEventListener('abort', () => {
          resolve({});
        });
      });
    await controller.start();
    source().add(widget('a'));
    await vi.waitFor(() => {
      expect(controller.activeWorkers()).toBe(1);
    });
    await controller.stop({ timeoutMs: 0 });
    expect(controller.activeWorkers()).toBe(0);
  });

  it('tells a reconcile cancelled for lost leadership from one cancelled by shutdown', async () => {
    const cancelled = async (leadershipLost: boolean): Promise<boolean> => {
      const { controller, reconciler, source } = setup();
      let lost: boolean | undefined;
      reconciler.behaviour = (_req, ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            lost = lostLeadership(ctx.signal);
            resolve({});
          });
        });
      await controller.start();
      source().add(widget('a'));
      await vi.waitFor(() => {
        expect(controller.activeWorkers()).toBe(1);
      });
      await controller.stop({ timeoutMs: 0, leadershipLost });
      return lost!;
    };
    expect(await cancelled(true)).toBe(true);
    expect(await cancelled(false)).toBe(false);
  });

  it('stop() gives up waiting after shutdownTimeoutMs plus the abort grace', async () => {
    const { controller, reconciler, source, clock } = setup({ shutdownTimeoutMs: 1_000 });
    reconciler.behaviour = () => new Promise(() => undefined); // ignores the signal
    await controller.start();
    source().add(widget('a'));
    await vi.waitFor(() => {
      expect(controller.activeWorkers()).toBe(1);
    });
    let stopped = false;
    const stopping = controller.stop({ abortGraceMs: 500 }).then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    clock.advance(1_000);
    await settle();
    expect(stopped).toBe(false);
    clock.advance(500);
    await stopping;
    expect(controller.activeWorkers()).toBe(1);
  });

  it('a thrown error during shutdown is not retried', async () => {
    const { controller, reconciler, source, clock } = setup();
    reconciler.behaviour = (_req, ctx) =>
      new Promise((_resolve, reject) => {
        ctx.signal.addEventListener('abort', () => {
          reject(new Error('aborted', { cause: ctx.signal.reason }));
        });
      });
    await controller.start();
    source().add(widget('a'));
    await vi.waitFor(() => {
      expect(controller.activeWorkers()).toBe(1);
    });
    await controller.stop({ timeoutMs: 0 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('start() fails with CacheSyncTimeoutError when the sources do not sync in time, and stops them', async () => {
    const { controller, clock, sources } = setup({ cacheSyncTimeoutMs: 5_000 }, { synced: false });
    const started = controller.start();
    await tick();
    clock.advance(5_000);
    await expect(started).rejects.toBeInstanceOf(CacheSyncTimeoutError);
    expect(sources[0]!.stopped).toBe(true);
    await expect(controller.start()).rejects.toBeInstanceOf(ControllerStateError);
  });

  it('stop() during start() makes start() resolve without starting workers', async () => {
    const { controller, reconciler, sources } = setup({}, { synced: false });
    const started = controller.start();
    await tick();
    sources[0]!.add(widget('a'));
    await controller.stop();
    sources[0]!.sync();
    await started;
    await settle();
    expect(reconciler.calls).toHaveLength(0);
  });

  it('rejects a non-positive maxConcurrentReconciles', () => {
    expect(() => setup({ maxConcurrentReconciles: 0 })).toThrow(RangeError);
  });
});

describe('Controller namespaces and cache', () => {
  it('creates one source per watched namespace and reads the cache through the right one', async () => {
    const { controller, sources } = setup({ namespaces: ['ns1', 'ns2', 'ns1'] });
    await controller.start();
    expect(sources.map((s) => s.namespace)).toEqual(['ns1', 'ns2']);
    const a = widget('a');
    const b = widget('b', { namespace: 'ns2' });
    sources[0]!.add(a);
    sources[1]!.add(b);
    expect(controller.cache.get('ns1', 'a')).toBe(a);
    expect(controller.cache.get('ns2', 'b')).toBe(b);
    expect(controller.cache.get('ns3', 'a')).toBeUndefined();
    expect(controller.cache.list('ns2')).toEqual([b]);
    expect(controller.cache.list()).toHaveLength(2);
    expect(controller.hasSynced()).toBe(true);
    sources[1]!.synced = false;
    expect(controller.hasSynced()).toBe(false);
  });

  it('uses one cluster-wide source for all namespaces and for cluster-scoped kinds', async () => {
    const all = setup({ namespaces: [] });
    await all.controller.start();
    expect(all.sources.map((s) => s.namespace)).toEqual([undefined]);
    const cluster = setup({
      namespaces: ['ns1', 'ns2'],
      resource: { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
    });
    await cluster.controller.start();
    expect(cluster.sources.map((s) => s.namespace)).toEqual([undefined]);
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n', resourceVersion: '1' } };
    cluster.source().add(ns);
    expect(cluster.controller.cache.get('', 'n')).toBe(ns);
    await vi.waitFor(() => {
      expect(cluster.reconciler.calls[0]?.request).toEqual({ namespace: '', name: 'n' });
    });
  });
});

describe('Controller with a namespace shard (docs/adr/0085)', () => {
  /**
   * Owns the namespaces in `owned`; `handOff(ns)` aborts its signal and takes it away; `late(true)`:
   * the peer Lease's renewal is late by the clock, so it still has its share but owns nothing now.
   */
  function shardOf(owned: Set<string>) {
    const controls = new Map<string, AbortController>();
    let inFlight = 0;
    let renewalLate = false;
    const control = (ns: string): AbortController => {
      let c = controls.get(ns);
      if (c === undefined) controls.set(ns, (c = new AbortController()));
      return c;
    };
    return {
      assigned: (ns: string) => owned.has(ns),
      owns: (ns: string) => owned.has(ns) && !renewalLate,
      late(is: boolean): void {
        renewalLate = is;
      },
      signal: (ns: string) => control(ns).signal,
      enter: () => {
        inFlight++;
        return () => {
          inFlight--;
        };
      },
      inFlight: () => inFlight,
      handOff(ns: string): void {
        owned.delete(ns);
        control(ns).abort(new Error('handed off'));
      },
    };
  }

  it('reconciles only owned namespaces, and queues a namespace’s CRs again when it is taken', async () => {
    const owned = new Set(['ns1']);
    const shard = shardOf(owned);
    const { reconciler, controller, source } = setup({ shard });
    await controller.start();
    source().add(widget('a'));
    source().add(widget('b', { namespace: 'ns2' }));
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['a']);
    });
    controller.enqueue({ namespace: 'ns2', name: 'b' });
    await settle();
    expect(reconciler.names()).toEqual(['a']);

    owned.add('ns2');
    expect(controller.requeueNamespaces((ns) => ns === 'ns2')).toBe(1);
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['a', 'b']);
    });
  });

  it('shows the reconciler every update of another replica’s namespace, status-only ones included, and queues none (docs/adr/0096)', async () => {
    const shard = shardOf(new Set(['ns1']));
    const { reconciler, controller, source } = setup({ shard });
    await controller.start();
    const theirs = widget('b', { namespace: 'ns2' });
    const mine = widget('a');
    source().add(theirs);
    source().add(mine);
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['a']);
    });
    source().update(widget('b', { namespace: 'ns2', resourceVersion: '2' }), theirs);
    source().update(widget('b', { namespace: 'ns2', resourceVersion: '3', generation: 2 }), theirs);
    source().update(widget('a', { resourceVersion: '2' }), mine);
    await settle();
    expect(reconciler.observed).toEqual(['ns2/b', 'ns2/b']);
    expect(reconciler.names()).toEqual(['a']);
  });

  it('drops a key whose namespace was handed off while it waited, and ends a reconcile in flight there without retrying it', async () => {
    const owned = new Set(['ns1']);
    const shard = shardOf(owned);
    const { reconciler, controller, source, clock } = setup({ shard });
    const running = deferred();
    reconciler.behaviour = async (_req, ctx) => {
      running.resolve();
      await new Promise((_resolve, reject) => {
        ctx.signal.addEventListener('abort', () => {
          reject(ctx.signal.reason as Error);
        });
      });
      return {};
    };
    await controller.start();
    source().add(widget('a'));
    source().add(widget('c'));
    await running.promise;
    expect(shard.inFlight()).toBe(1);
    shard.handOff('ns1');
    await vi.waitFor(() => {
      expect(shard.inFlight()).toBe(0);
    });
    clock.advance(60_000);
    await settle();
    // 'c' waited behind 'a' and was dropped; 'a' ended and was not retried.
    expect(reconciler.names()).toEqual(['a']);
    expect(controller.queueLength()).toBe(0);
  });

  it('keeps the keys of its share while the peer Lease renewal is late by the clock, an event’s and the periodic look’s, and reconciles them once it lands (docs/adr/0114)', async () => {
    const shard = shardOf(new Set(['ns1']));
    const { reconciler, controller, source, clock } = setup({ shard });
    reconciler.behaviour = () => Promise.resolve({ requeueAfterMs: 60_000 });
    await controller.start();
    source().add(widget('a'));
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['a']);
    });

    // The periodic look comes due while the renewal is late: it waits, round after round.
    shard.late(true);
    clock.advance(60_000);
    await settle();
    // A spec change meanwhile: queued (the namespace is still this replica's), not reconciled yet.
    source().update(widget('a', { resourceVersion: '2', generation: 2 }), widget('a'));
    for (let i = 0; i < 3; i++) {
      clock.advance(LEASE_WAIT_MS);
      await settle();
    }
    expect(reconciler.names()).toEqual(['a']);

    shard.late(false);
    clock.advance(LEASE_WAIT_MS);
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['a', 'a']);
    });
    // And its periodic look after that is still queued.
    clock.advance(60_000);
    await vi.waitFor(() => {
      expect(reconciler.names()).toEqual(['a', 'a', 'a']);
    });
  });
});
