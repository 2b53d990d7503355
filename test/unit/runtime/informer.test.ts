/**
 * The informer against a loopback HTTP server that speaks just enough of the API server's LIST and
 * WATCH protocol: no cluster involved.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loopbackKubeConfig } from '../../support/loopback-kubeconfig.js';
import { ManualClock } from '../../../src/util/clock.js';
import { BucketShare, type WatchShare } from '../../../src/runtime/watch-share.js';
import { fnv1a64 } from '../../../src/runtime/shard-assignment.js';
import { shardSelectorOf } from '../../../src/runtime/shard-selector.js';
import {
  Informer,
  InformerStoppedError,
  keepMetadataOnly,
  longWatchParams,
  MIN_WATCH_TIMEOUT_S,
  resourcePath,
  WATCH_INACTIVITY_MS,
  type ObjectSummary,
} from '../../../src/runtime/informer.js';

interface Recorded {
  path: string;
  query: URLSearchParams;
  accept: string | undefined;
}

/** A fake API server for one resource collection. */
class FakeApiServer {
  readonly lists: Recorded[] = [];
  readonly watches: Recorded[] = [];
  items: KubernetesObject[] = [];
  resourceVersion = '100';
  /** HTTP status of the next list calls, consumed one by one (then 200). */
  listFailures: number[] = [];
  watchFailures: number[] = [];
  listKind = 'SecretList';
  /** An empty list's items as a PartialObjectMetadataList sends them. */
  nullWhenEmpty = false;
  #streams: ServerResponse[] = [];
  #closedWatches = 0;
  #closeWaiters: (() => void)[] = [];

  /** Resolves once `count` watch connections have been closed (by the client, or by close()). */
  async watchesClosed(count: number): Promise<void> {
    while (this.#closedWatches < count) await new Promise<void>((resolve) => this.#closeWaiters.push(resolve));
  }
  #server: Server = createServer((req, res) => {
    this.#handle(req, res);
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const s of this.#streams) s.end();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) =>
      this.#server.close(() => {
        resolve();
      }),
    );
  }

  send(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubernetesObject): void {
    for (const s of this.#streams) s.write(`${JSON.stringify({ type, object })}\n`);
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const rec = { path: url.pathname, query: url.searchParams, accept: req.headers.accept };
    if (url.searchParams.get('watch') === 'true') {
      this.watches.push(rec);
      const fail = this.watchFailures.shift();
      if (fail !== undefined) {
        this.#fail(res, fail);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      this.#streams.push(res);
      res.on('close', () => {
        this.#closedWatches++;
        for (const w of this.#closeWaiters.splice(0)) w();
      });
      return;
    }
    this.lists.push(rec);
    const fail = this.listFailures.shift();
    if (fail !== undefined) {
      this.#fail(res, fail);
      return;
    }
    const limit = Number(url.searchParams.get('limit') ?? '0');
    const offset = Number(url.searchParams.get('continue') ?? '0');
    const end = limit > 0 ? offset + limit : this.items.length;
    const body = {
      apiVersion: 'v1',
      kind: this.listKind,
      metadata: { resourceVersion: this.resourceVersion, continue: end < this.items.length ? String(end) : undefined },
      items: this.nullWhenEmpty && this.items.length === 0 ? null : this.items.slice(offset, end),
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  #fail(res: ServerResponse, code: number): void {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason: 'InternalError' }));
  }
}

const secret = (name: string, rv: string, extra: Partial<NonNullable<KubernetesObject['metadata']>> = {}) => ({
  metadata: { name, namespace: 'ns1', resourceVersion: rv, ...extra },
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(
  opts: {
    labelSelector?: string;
    pageSize?: number;
    namespace?: string;
    transform?: (o: KubernetesObject) => KubernetesObject;
    trackPrevious?: boolean;
    share?: WatchShare;
    metadataOnly?: boolean;
  } = {},
) {
  const api = new FakeApiServer();
  const url = await api.listen();
  const clock = new ManualClock();
  const informer = new Informer(loopbackKubeConfig(url), {
    resource: { group: '', version: 'v1', plural: 'secrets', namespace: opts.namespace },
    labelSelector: opts.labelSelector,
    pageSize: opts.pageSize,
    clock,
    ...(opts.transform === undefined ? {} : { transform: opts.transform }),
    ...(opts.trackPrevious === undefined ? {} : { trackPrevious: opts.trackPrevious }),
    ...(opts.share === undefined ? {} : { share: opts.share }),
    ...(opts.metadataOnly === undefined ? {} : { metadataOnly: opts.metadataOnly }),
  });
  cleanups.push(() => api.close());
  cleanups.push(() => informer.stop());
  return { api, clock, informer };
}

describe('resourcePath', () => {
  it.each([
    [{ group: '', version: 'v1', plural: 'secrets' }, '/api/v1/secrets'],
    [{ group: '', version: 'v1', plural: 'secrets', namespace: 'ns' }, '/api/v1/namespaces/ns/secrets'],
    [{ group: 'apps', version: 'v1', plural: 'deployments', namespace: 'ns' }, '/apis/apps/v1/namespaces/ns/deployments'],
    [{ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterroles' }, '/apis/rbac.authorization.k8s.io/v1/clusterroles'],
    [{ group: 'g.example.com', version: 'v1', plural: 'widgets', namespace: '' }, '/apis/g.example.com/v1/widgets'],
  ])('%o → %s', (ref, path) => {
    expect(resourcePath(ref)).toBe(path);
  });
});

describe('keepMetadataOnly', () => {
  it('keeps apiVersion, kind and metadata without managedFields', () => {
    const obj = {
      apiVersion: 'example.com/v1',
      kind: 'Nginx',
      metadata: { name: 'a', finalizers: ['f'], deletionTimestamp: '2025-01-01T00:00:00Z', managedFields: [{ manager: 'm' }] },
      spec: { replicaCount: 2 },
      status: { conditions: [] },
    } as unknown as KubernetesObject;
    expect(keepMetadataOnly(obj)).toStrictEqual({
      apiVersion: 'example.com/v1',
      kind: 'Nginx',
      metadata: { name: 'a', finalizers: ['f'], deletionTimestamp: '2025-01-01T00:00:00Z' },
    });
  });

  it('adds no metadata to an object without any', () => {
    expect(keepMetadataOnly({ apiVersion: 'v1', kind: 'Secret', data: {} } as KubernetesObject)).toStrictEqual({
      apiVersion: 'v1',
      kind: 'Secret',
    });
  });
});

describe('longWatchParams', () => {
  it('asks the server to end the watch after 5 to 10 minutes, with bookmarks in between', () => {
    expect(longWatchParams(0)).toStrictEqual({ timeoutSeconds: '300', allowWatchBookmarks: 'true' });
    expect(longWatchParams(0.999_999)).toStrictEqual({ timeoutSeconds: '599', allowWatchBookmarks: 'true' });
  });
});

describe('Informer', () => {
  it('holds an idle watch open: a server timeout of 5 to 10 minutes, bookmarks, and an inactivity timeout above their interval', async () => {
    const { api, informer } = await setup();
    await informer.start();
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(1);
    });
    const query = api.watches[0]?.query;
    const timeout = Number(query?.get('timeoutSeconds'));
    expect(timeout).toBeGreaterThanOrEqual(MIN_WATCH_TIMEOUT_S);
    expect(timeout).toBeLessThan(2 * MIN_WATCH_TIMEOUT_S);
    expect(query?.get('allowWatchBookmarks')).toBe('true');
    expect(WATCH_INACTIVITY_MS).toBeGreaterThan(60_000);
  });

  it('asks for metadata only when told to, for the LIST and the WATCH, and takes an empty list with null items', async () => {
    const { api, informer } = await setup({ metadataOnly: true });
    api.nullWhenEmpty = true;
    await informer.start();
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(1);
    });
    expect(api.lists[0]?.accept).toBe('application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1');
    expect(api.watches[0]?.accept).toBe('application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1');
    api.send('ADDED', { apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', ...secret('a', '101') });
    await vi.waitFor(() => {
      expect(informer.get('a', 'ns1')?.metadata?.resourceVersion).toBe('101');
    });
  });

  it('asks for JSON otherwise', async () => {
    const { api, informer } = await setup();
    await informer.start();
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(1);
    });
    expect(api.lists[0]?.accept).toBe('application/json');
    expect(api.watches[0]?.accept).not.toContain('PartialObjectMetadata');
  });

  it('caches and hands out listed and watched objects after the transform', async () => {
    const { api, informer } = await setup({ transform: keepMetadataOnly });
    api.items = [{ ...secret('a', '1'), data: { k: 'dg==' } } as KubernetesObject];
    const seen: KubernetesObject[] = [];
    informer.onAdd((o) => seen.push(o));
    informer.onUpdate((o) => seen.push(o));
    await informer.start();
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(1);
    });
    api.send('MODIFIED', { ...secret('a', '101', { managedFields: [{ manager: 'm' }] }), data: { k: 'dw==' } } as KubernetesObject);
    await vi.waitFor(() => {
      expect(seen).toHaveLength(2);
    });
    for (const o of [...seen, informer.get('a', 'ns1')]) expect(o).not.toHaveProperty('data');
    expect(informer.get('a', 'ns1')?.metadata).toStrictEqual({ name: 'a', namespace: 'ns1', resourceVersion: '101' });
  });

  it('lists page by page with the label selector, then watches from the list resourceVersion', async () => {
    const { api, informer } = await setup({ labelSelector: 'app=web', pageSize: 2, namespace: 'ns1' });
    api.items = [secret('a', '1'), secret('b', '2'), secret('c', '3')];
    const added: string[] = [];
    informer.onAdd((o) => added.push(o.metadata!.name!));
    expect(informer.hasSynced()).toBe(false);
    await informer.start();
    expect(informer.hasSynced()).toBe(true);
    expect(added).toEqual(['a', 'b', 'c']);
    expect(api.lists.map((l) => [l.path, l.query.get('labelSelector'), l.query.get('limit'), l.query.get('continue')])).toEqual([
      ['/api/v1/namespaces/ns1/secrets', 'app=web', '2', null],
      ['/api/v1/namespaces/ns1/secrets', 'app=web', '2', '2'],
    ]);
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(1);
    });
    expect(api.watches[0]!.query.get('resourceVersion')).toBe('100');
    expect(api.watches[0]!.query.get('labelSelector')).toBe('app=web');
    expect(informer.get('b', 'ns1')).toMatchObject({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'b' } });
    expect(informer.list('ns1')).toHaveLength(3);
  });

  it('delivers watch events, with a summary of the previous version on update', async () => {
    const { api, informer } = await setup();
    api.items = [secret('a', '1', { labels: { x: '1' }, generation: 1 })];
    const updates: [string, ObjectSummary | undefined][] = [];
    const deleted: string[] = [];
    informer.onUpdate((o, old) => updates.push([o.metadata!.resourceVersion!, old]));
    informer.onDelete((o) => deleted.push(o.metadata!.name!));
    await informer.start();
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(1);
    });
    api.send('MODIFIED', secret('a', '101', { labels: { x: '2' }, generation: 2 }));
    await vi.waitFor(() => {
      expect(updates).toHaveLength(1);
    });
    expect(updates[0]).toEqual([
      '101',
      { resourceVersion: '1', generation: 1, labels: { x: '1' }, annotations: {}, finalizers: [], deletionTimestamp: undefined },
    ]);
    api.send('DELETED', secret('a', '102'));
    await vi.waitFor(() => {
      expect(deleted).toEqual(['a']);
    });
    expect(informer.get('a', 'ns1')).toBeUndefined();
  });

  it('with trackPrevious: false, delivers updates without a previous version', async () => {
    const { api, informer } = await setup({ trackPrevious: false });
    api.items = [secret('a', '1', { labels: { x: '1' } })];
    const updates: [string, ObjectSummary | undefined][] = [];
    informer.onUpdate((o, old) => updates.push([o.metadata!.resourceVersion!, old]));
    await informer.start();
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(1);
    });
    api.send('MODIFIED', secret('a', '101', { labels: { x: '2' } }));
    await vi.waitFor(() => {
      expect(updates).toEqual([['101', undefined]]);
    });
    expect(informer.get('a', 'ns1')?.metadata?.labels).toEqual({ x: '2' });
  });

  it('keeps retrying a failing LIST with backoff and syncs once it succeeds', async () => {
    const { api, informer, clock } = await setup();
    api.listFailures = [500, 403];
    let synced = false;
    const started = informer.start().then(() => (synced = true));
    await vi.waitFor(() => {
      expect(clock.pendingTimers()).toBe(1);
    });
    expect(api.lists).toHaveLength(1);
    clock.advance(999);
    expect(api.lists).toHaveLength(1);
    clock.advance(1);
    await vi.waitFor(() => {
      expect(api.lists).toHaveLength(2);
    });
    await vi.waitFor(() => {
      expect(clock.pendingTimers()).toBe(1);
    });
    clock.advance(1_999);
    expect(api.lists).toHaveLength(2);
    expect(synced).toBe(false);
    clock.advance(1);
    await started;
    expect(api.lists).toHaveLength(3);
    expect(informer.hasSynced()).toBe(true);
  });

  it('restarts a failed watch from the last resourceVersion without re-listing', async () => {
    const { api, informer, clock } = await setup();
    api.watchFailures = [500];
    await informer.start();
    expect(informer.hasSynced()).toBe(true); // the LIST succeeded; only the watch failed
    await vi.waitFor(() => {
      expect(clock.pendingTimers()).toBe(1);
    });
    clock.advance(1_000);
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(2);
    });
    expect(api.watches[1]!.query.get('resourceVersion')).toBe('100');
    expect(api.lists).toHaveLength(1);
  });

  it('does not restart after stop(), and a start() still waiting for sync rejects', async () => {
    const { api, informer, clock } = await setup();
    api.listFailures = [500];
    const started = informer.start();
    await vi.waitFor(() => {
      expect(clock.pendingTimers()).toBe(1);
    });
    await informer.stop();
    await expect(started).rejects.toBeInstanceOf(InformerStoppedError);
    expect(clock.pendingTimers()).toBe(0);

    const { informer: running, clock: clock2, api: api2 } = await setup();
    await running.start();
    await vi.waitFor(() => {
      expect(api2.watches).toHaveLength(1);
    });
    await running.stop(); // aborts the watch: ListWatch reports an AbortError
    // The API server has seen the watch end, so the client has had its abort; one more turn of the
    // event loop for whatever that abort schedules: no restart.
    await api2.watchesClosed(1);
    await new Promise((r) => setImmediate(r));
    expect(clock2.pendingTimers()).toBe(0);
  });

  it('isolates a throwing handler from the others', async () => {
    const { api, informer } = await setup();
    api.items = [secret('a', '1')];
    const seen: string[] = [];
    informer.onAdd(() => {
      throw new Error('handler bug');
    });
    informer.onAdd((o) => seen.push(o.metadata!.name!));
    await informer.start();
    expect(seen).toEqual(['a']);
  });
});

describe('Informer with a share (docs/adr/0103)', () => {
  // Namespace "left" is bucket 0, "right" bucket 1 (of 2): a share of bucket 0 is "left" only.
  const bucketOf = (ns: string): number => (ns === 'left' ? 0 : 1);
  const inNs = (namespace: string, name: string, rv: string): KubernetesObject => ({ metadata: { name, namespace, resourceVersion: rv } });
  const names = (objs: readonly KubernetesObject[]): string[] => objs.map((o) => o.metadata!.name!).sort();

  it('client mode: never caches the objects of other namespaces, listed or watched, and relists when the share changes', async () => {
    const share = new BucketShare({ bucketOf, mode: 'client' });
    share.set([0]);
    const { api, informer } = await setup({ share });
    api.items = [inNs('left', 'l1', '1'), inNs('right', 'r1', '2')];
    const added: string[] = [];
    const deleted: string[] = [];
    informer.onAdd((o) => added.push(o.metadata!.name!));
    informer.onDelete((o) => deleted.push(o.metadata!.name!));
    await informer.start();
    expect(names(informer.list())).toEqual(['l1']);
    expect(api.lists[0]!.query.get('shardSelector')).toBeNull();
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(1);
    });
    api.send('ADDED', inNs('right', 'r2', '103'));
    api.send('ADDED', inNs('left', 'l2', '104'));
    await vi.waitFor(() => {
      expect(added).toEqual(['l1', 'l2']);
    });
    expect(informer.get('r2', 'right')).toBeUndefined();
    expect(informer.covers('right')).toBe(false);
    // The share moves to bucket 1: the watch ends, the relist drops "left" and brings "right".
    api.items = [inNs('left', 'l1', '1'), inNs('left', 'l2', '104'), inNs('right', 'r1', '2'), inNs('right', 'r2', '103')];
    share.set([1]);
    // Until the relist lands, the cache does not speak for the namespace just taken.
    expect(informer.covers('right')).toBe(false);
    await vi.waitFor(() => {
      expect(names(informer.list())).toEqual(['r1', 'r2']);
    });
    expect(informer.covers('right')).toBe(true);
    expect(informer.covers('left')).toBe(false);
    expect(deleted.sort()).toEqual(['l1', 'l2']);
    expect(added.slice(2).sort()).toEqual(['r1', 'r2']);
    await api.watchesClosed(1);
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(2);
    });
    expect(api.lists).toHaveLength(2);
  });

  it('server mode: asks the API server for the learnt namespaces of the share on every LIST and WATCH, and again after a change', async () => {
    const share = new BucketShare({ bucketOf, mode: 'server' });
    share.learn('left');
    share.learn('right');
    share.set([0]);
    const { api, informer } = await setup({ share });
    // The fake server does not filter; a capped selector may let others through: the informer drops them.
    api.items = [inNs('left', 'l1', '1'), inNs('right', 'r1', '2')];
    await informer.start();
    expect(names(informer.list())).toEqual(['l1']);
    const only = (ns: string): string => shardSelectorOf([{ start: fnv1a64(ns), end: fnv1a64(ns) + 1n }]);
    expect(api.lists[0]!.query.get('shardSelector')).toBe(only('left'));
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(1);
    });
    expect(api.watches[0]!.query.get('shardSelector')).toBe(only('left'));
    share.set([1]);
    await vi.waitFor(() => {
      expect(api.watches).toHaveLength(2);
    });
    expect(api.lists.map((l) => l.query.get('shardSelector'))).toEqual([only('left'), only('right')]);
    expect(api.watches[1]!.query.get('shardSelector')).toBe(only('right'));
    expect(api.watches[1]!.query.get('resourceVersion')).toBe('100');
    expect(names(informer.list())).toEqual(['r1']);
  });

  it('lists again when the share changes between the LIST and its watch', async () => {
    const share = new BucketShare({ bucketOf, mode: 'client' });
    share.set([0]);
    const { api, informer } = await setup({ share, pageSize: 1 });
    api.items = [inNs('left', 'l1', '1'), inNs('right', 'r1', '2')];
    let changed = false;
    informer.onAdd(() => {
      if (!changed) {
        changed = true;
        share.set([0, 1]);
      }
    });
    await informer.start();
    await vi.waitFor(() => {
      expect(names(informer.list())).toEqual(['l1', 'r1']);
    });
  });
});
