import { describe, expect, it } from 'vitest';
import { LeaseConflictError, type LeaseRecord, type VersionedLease } from '../../../src/runtime/leader.js';
import { lostLeadership } from '../../../src/runtime/reconcile.js';
import { assignment, bucketsOf, LEGACY_SHARD_HASH, namespaceBucket, SHARD_HASH } from '../../../src/runtime/shard-assignment.js';
import { balanceLeaseName, SHARD_BALANCE } from '../../../src/runtime/shard-balance.js';
import {
  fenceBucket,
  fenceLeaseName,
  ShardCoordinator,
  type ShardCoordinatorOptions,
  type ShardLease,
  type ShardLeaseStore,
  type ShardLeaseWrite,
} from '../../../src/runtime/shard-coordinator.js';
import { makeLogger, silentLogger } from '../../../src/telemetry/logger.js';
import { ManualClock } from '../../../src/util/clock.js';

/** Leases in memory, with the API server's optimistic concurrency; counts writes. */
class MemoryStore implements ShardLeaseStore {
  readonly description = 'memory';
  readonly leases = new Map<string, ShardLease>();
  writes = 0;
  #rv = 0;
  list(): Promise<ShardLease[]> {
    return Promise.resolve([...this.leases.values()]);
  }
  create(name: string, lease: ShardLeaseWrite): Promise<VersionedLease> {
    if (this.leases.has(name)) return Promise.reject(new LeaseConflictError(name));
    return Promise.resolve(this.#put(name, lease));
  }
  update(name: string, lease: ShardLeaseWrite, resourceVersion: string): Promise<VersionedLease> {
    if (this.leases.get(name)?.resourceVersion !== resourceVersion) return Promise.reject(new LeaseConflictError(name));
    return Promise.resolve(this.#put(name, lease));
  }
  holder(bucket: number): string | undefined {
    return this.leases.get(fenceLeaseName('g', bucket))?.record.holderIdentity;
  }
  /** A peer Lease of a replica on another bucket function (one before docs/adr/0110, say). */
  stranger(identity: string, hash: string, renewTime: number): void {
    this.#put(`g-peer-${identity}`, { role: 'peer', record: peerRecord(identity, renewTime) }, { hash });
  }
  /** A live peer Lease of a replica from before docs/adr/0113: it carries no balance rule. */
  unbalanced(identity: string, renewTime: number): void {
    this.#put(`g-peer-${identity}`, { role: 'peer', record: peerRecord(identity, renewTime) }, { balance: undefined });
  }
  /** As the Kubernetes store labels it: this release's bucket function and balance rule, unless `labels` says otherwise. */
  #put(name: string, lease: ShardLeaseWrite, labels: { hash?: string; balance?: string | undefined } = {}): VersionedLease {
    this.writes++;
    const balance = 'balance' in labels ? labels.balance : SHARD_BALANCE;
    const stored: ShardLease = {
      name,
      ...lease,
      hash: labels.hash ?? SHARD_HASH,
      resourceVersion: String(++this.#rv),
      ...(balance === undefined ? {} : { balance }),
    };
    this.leases.set(name, stored);
    return stored;
  }
}

const peerRecord = (identity: string, renewTime: number): LeaseRecord => ({
  holderIdentity: identity,
  leaseDurationSeconds: 15,
  renewTime,
  acquireTime: renewTime,
  leaseTransitions: 0,
});

const BUCKETS = 8;

/** A replica's view of the store: `kill()` makes every later call hang, as for a SIGKILLed process. */
class ReplicaStore implements ShardLeaseStore {
  readonly description = 'replica';
  #dead = false;
  constructor(private readonly shared: MemoryStore) {}
  kill(): void {
    this.#dead = true;
  }
  list(): Promise<ShardLease[]> {
    return this.#dead ? new Promise(() => undefined) : this.shared.list();
  }
  create(name: string, lease: ShardLeaseWrite): Promise<VersionedLease> {
    return this.#dead ? new Promise(() => undefined) : this.shared.create(name, lease);
  }
  update(name: string, lease: ShardLeaseWrite, rv: string): Promise<VersionedLease> {
    return this.#dead ? new Promise(() => undefined) : this.shared.update(name, lease, rv);
  }
}

/** A slow API server: every call is served at once and answered `latencyMs` (now) later on the clock. */
class SlowStore implements ShardLeaseStore {
  readonly description = 'slow';
  constructor(
    private readonly shared: MemoryStore,
    private readonly clock: ManualClock,
    private readonly latencyMs: number | (() => number),
  ) {}
  list(): Promise<ShardLease[]> {
    return this.#later(this.shared.list());
  }
  create(name: string, lease: ShardLeaseWrite): Promise<VersionedLease> {
    return this.#later(this.shared.create(name, lease));
  }
  update(name: string, lease: ShardLeaseWrite, rv: string): Promise<VersionedLease> {
    return this.#later(this.shared.update(name, lease, rv));
  }
  #later<T>(answer: Promise<T>): Promise<T> {
    const ms = typeof this.latencyMs === 'number' ? this.latencyMs : this.latencyMs();
    if (ms === 0) return answer;
    return new Promise((resolve, reject) => {
      this.clock.setTimeout(
        () => void answer.then(resolve, reject),
        typeof this.latencyMs === 'number' ? this.latencyMs : this.latencyMs(),
      );
    });
  }
}

const replicas = new WeakMap<ShardCoordinator, ReplicaStore>();

/** `slowMs`: every Lease call answers that much later on the clock (asked at each call when a function). */
type MemberOptions = Partial<Pick<ShardCoordinatorOptions, 'load' | 'rebalancePeriodMs'>> & { readonly slowMs?: number | (() => number) };

function member(store: MemoryStore, clock: ManualClock, identity: string, { slowMs, ...more }: MemberOptions = {}): ShardCoordinator {
  const own = new ReplicaStore(store);
  const m = new ShardCoordinator({
    store: slowMs === undefined ? own : new SlowStore(store, clock, slowMs),
    identity,
    group: 'g',
    buckets: BUCKETS,
    clock,
    random: () => 0,
    log: process.env.DBG ? makeLogger({ level: 'debug' }) : silentLogger(),
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    ...more,
  });
  replicas.set(m, own);
  return m;
}

const kill = (m: ShardCoordinator): void => replicas.get(m)?.kill();

/** Lets every pending Lease call and round run to completion (the store answers in microtasks). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** `times` retry periods on the clock: every member's timer takes one round each. */
async function rounds(clock: ManualClock, _members: ShardCoordinator[], times = 1): Promise<void> {
  for (let i = 0; i < times; i++) {
    clock.advance(2_000);
    await settle();
  }
}

/** Owners by bucket, by what the members themselves say. */
function owners(members: ShardCoordinator[]): Map<number, string[]> {
  const by = new Map<number, string[]>();
  for (const m of members) for (const b of m.ownedBuckets()) by.set(b, [...(by.get(b) ?? []), m.identity]);
  return by;
}

async function started(store: MemoryStore, clock: ManualClock, identity: string, more: MemberOptions = {}): Promise<ShardCoordinator> {
  const m = member(store, clock, identity, more);
  const joined = m.acquire();
  await settle();
  expect(await joined).toBe(true);
  return m;
}

/** A first replica, alone, after a round: it owns every bucket. */
async function alone(): Promise<{ clock: ManualClock; store: MemoryStore; a: ShardCoordinator }> {
  const clock = new ManualClock(1_000_000);
  const store = new MemoryStore();
  const a = await started(store, clock, 'a');
  await rounds(clock, [a]);
  expect(a.ownedBuckets()).toHaveLength(BUCKETS);
  return { clock, store, a };
}

describe('ShardCoordinator', () => {
  it('owns nothing while a live peer runs another bucket function, and takes every bucket once it has gone', async () => {
    const { clock, store, a } = await alone();
    // An old replica joins (a rollback of the Deployment): a hands off every bucket and takes none.
    store.stranger('old', LEGACY_SHARD_HASH, clock.now());
    await rounds(clock, [a], 2);
    expect(a.ownedBuckets()).toEqual([]);
    for (let b = 0; b < BUCKETS; b++) expect(store.holder(b)).toBe('');
    expect(a.owns('tenant-1')).toBe(false);
    // The old replica stops renewing: once a has seen its Lease unchanged for a lease duration, a owns all again.
    await rounds(clock, [a], 9);
    expect(a.ownedBuckets()).toHaveLength(BUCKETS);
    expect(a.owns('tenant-1')).toBe(true);
  });

  it('one replica owns every bucket; a second joins and takes its share only after the first released it', async () => {
    const { clock, store, a } = await alone();
    const namespace = 'tenant-1';
    expect(a.owns(namespace)).toBe(true);
    const signal = a.signal(namespace);

    const b = await started(store, clock, 'b');
    const bWants = bucketsOf('b', ['a', 'b'], BUCKETS);
    expect(bWants.size).toBeGreaterThan(0);
    // b saw a's fences held by a live peer: it takes nothing yet.
    expect(b.ownedBuckets()).toEqual([]);
    // a sees b, drains and releases b's buckets; b takes them on its next round.
    await rounds(clock, [a, b], 2);
    const by = owners([a, b]);
    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      expect(by.get(bucket)).toEqual([bWants.has(bucket) ? 'b' : 'a']);
      expect(store.holder(bucket)).toBe(bWants.has(bucket) ? 'b' : 'a');
    }
    expect(signal.aborted).toBe(bWants.has(a.bucketOf(namespace)));
  });

  it('waits for a bucket’s in-flight reconcile before releasing it, up to the drain bound', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const a = await started(store, clock, 'a');
    await rounds(clock, [a]);
    const b = await started(store, clock, 'b');
    const moving = [...bucketsOf('b', ['a', 'b'], BUCKETS)][0] ?? 0;
    const leave = a.enter(nsIn(a, moving));
    const inFlight = a.signal(nsIn(a, moving));
    await rounds(clock, [a, b], 2);
    // a is draining: no new helm run (the fence is closed), but the fence is still a's.
    expect(a.checkOwns(nsIn(a, moving))).toBe(false);
    // The reconcile in flight is cancelled as by lost leadership: it neither undoes nor reports (ADR 0114).
    expect(lostLeadership(inFlight)).toBe(true);
    expect(store.holder(moving)).toBe('a');
    expect(b.ownedBuckets()).not.toContain(moving);
    leave();
    await rounds(clock, [a, b], 2);
    expect(store.holder(moving)).toBe('b');
    expect(b.ownedBuckets()).toContain(moving);

    // A reconcile that never ends holds a bucket only until the drain bound (the renew deadline).
    const back = [...bucketsOf('c', ['a', 'b', 'c'], BUCKETS)].find((x) => store.holder(x) === 'b');
    if (back === undefined) return;
    b.enter(nsIn(b, back));
    const c = await started(store, clock, 'c');
    await rounds(clock, [a, b, c], 3);
    expect(store.holder(back)).toBe('b');
    await rounds(clock, [a, b, c], 5);
    expect(store.holder(back)).toBe('c');
  });

  it('a dead replica’s buckets are taken only once its peer lease has expired by the survivor’s clock', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const a = await started(store, clock, 'a');
    const b = await started(store, clock, 'b');
    await rounds(clock, [a, b], 3);
    const bHeld = b.ownedBuckets();
    expect(bHeld.length).toBeGreaterThan(0);
    // b dies (SIGKILL): its calls never arrive. 12 s on, a still leaves its buckets alone.
    kill(b);
    await rounds(clock, [a], 6);
    for (const bucket of bHeld) expect(store.holder(bucket)).toBe('b');
    await rounds(clock, [a], 3);
    for (const bucket of bHeld) expect(store.holder(bucket)).toBe('a');
    expect(a.ownedBuckets()).toHaveLength(BUCKETS);
  });

  it('a replica that joins after a peer died takes its share of the dead peer’s buckets once a survivor saw it expire, not a lease duration after joining', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const [a, b, c] = [await started(store, clock, 'a'), await started(store, clock, 'b'), await started(store, clock, 'c')];
    await rounds(clock, [a, b, c], 3);
    // The buckets c holds that rendezvous gives d once c is gone: d must take them.
    const toD = c.ownedBuckets().filter((bucket) => bucketsOf('d', ['a', 'b', 'd'], BUCKETS).has(bucket));
    expect(toD.length).toBeGreaterThan(0);
    kill(c);
    await rounds(clock, [a, b], 5);
    // d starts 10 s after c died: by its own clock c's record is fresh, live for 15 s more.
    const d = await started(store, clock, 'd');
    await rounds(clock, [a, b, d], 5);
    // 20 s after the death (lease 15 s + 2 rounds + a round of d): a survivor released c's peer
    // Lease once it saw it expire, so d counts c gone at its next round instead of at 25 s.
    for (const bucket of toD) expect(store.holder(bucket), `bucket ${bucket}`).toBe('d');
    expect(store.leases.get('g-peer-2e7d2c03a950')?.record.holderIdentity).toBe('');
    for (let bucket = 0; bucket < BUCKETS; bucket++) expect(owners([a, b, d]).get(bucket)).toHaveLength(1);
  });

  it('a frozen replica stops owning by its own clock before anyone may take its buckets, and the loss is final', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const a = await started(store, clock, 'a');
    await rounds(clock, [a]);
    let lost = 0;
    a.onLost(() => lost++);
    const signal = a.signal('tenant-1');
    // Frozen: no rounds, no timers (advance without firing them), then thawed past the renew deadline.
    const frozenAt = clock.now();
    expect(a.checkOwns('tenant-1')).toBe(true);
    vi_advanceWithoutTimers(clock, 10_000);
    expect(clock.now() - frozenAt).toBe(10_000);
    expect(a.owns('tenant-1')).toBe(false);
    expect(a.checkOwns('tenant-1')).toBe(false);
    expect(lost).toBe(1);
    expect(lostLeadership(signal)).toBe(true);
    expect((await a.lost).message).toMatch(/renew deadline/);
    await a.tick();
    expect(a.ownedBuckets()).toEqual([]);
  });

  it('keeps its peer lease when each Lease call takes 3 s: the renewal is sent with the LIST, not after it', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    // A renewal counts from when it is sent. Sent after a 3 s LIST, the one held is 11 s old (3 + 2 +
    // 3 + 3) before the next lands, past the 10 s deadline; sent with the LIST, 8 s (3 + 2 + 3).
    const a = member(store, clock, 'a', { slowMs: 3_000 });
    let lost = 0;
    a.onLost(() => lost++);
    const joined = a.acquire();
    // Its helm runs ask the fence all the time (checkOwns, which declares the loss past the deadline).
    for (let t = 0; t < 60_000; t += 250) {
      clock.advance(250);
      await settle();
      a.checkOwns('tenant-1');
    }
    expect(await joined).toBe(true);
    expect(lost).toBe(0);
    expect(a.holdsLease()).toBe(true);
    expect(a.ownedBuckets()).toHaveLength(BUCKETS);
    // Every round renewed: no conflict from a LIST that was sent before the renewal and answered after it.
    expect(store.leases.get('g-peer-ca978112ca1b')?.record.renewTime).toBeGreaterThan(45_000);
  });

  it('when each Lease call comes to take 5 s, keeps its share while its renewal is late by the clock: assigned, owning nothing for a moment, not lost (docs/adr/0114)', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    let latencyMs = 0;
    // Sent with the LIST, a renewal is 5 + 2 + 5 = 12 s old when the next lands: from 10 s to 12 s
    // the clock proves nothing (owns false), yet the loss is declared only 10 s after a renewal
    // landed, and the next one lands first. The controller keeps its keys through that stretch.
    const a = await started(store, clock, 'a', { slowMs: () => latencyMs });
    await rounds(clock, [a]);
    expect(a.ownedBuckets()).toHaveLength(BUCKETS);
    let lost = 0;
    a.onLost(() => lost++);
    latencyMs = 5_000;
    let late = 0;
    for (let t = 0; t < 60_000; t += 250) {
      clock.advance(250);
      await settle();
      if (a.assigned('tenant-1') && !a.owns('tenant-1')) late += 250;
    }
    expect(late).toBeGreaterThan(0);
    expect(lost).toBe(0);
    expect(a.ownedBuckets()).toHaveLength(BUCKETS);
    // Shut down: the calls still on the wire land, and the share is no longer assigned.
    latencyMs = 0;
    const released = a.release();
    await rounds(clock, [a], 5);
    await released;
    expect(a.assigned('tenant-1')).toBe(false);
  });

  it('writes no fence in a steady state: one peer-lease write per replica per round', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const members = [await started(store, clock, 'a'), await started(store, clock, 'b'), await started(store, clock, 'c')];
    await rounds(clock, members, 5);
    const before = store.writes;
    await rounds(clock, members, 10);
    expect(store.writes - before).toBe(30);
  });

  it('on shutdown releases its fences, then its peer lease, so the others take over at their next round', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const a = await started(store, clock, 'a');
    const b = await started(store, clock, 'b');
    await rounds(clock, [a, b], 3);
    await b.release();
    await rounds(clock, [a], 1);
    expect(store.leases.get('g-peer-3e23e8160039')?.record.holderIdentity ?? '').toBe('');
    expect(a.ownedBuckets()).toHaveLength(BUCKETS);
    for (const [name, lease] of store.leases) if (fenceBucket('g', name) !== undefined) expect(lease.record.holderIdentity).toBe('a');
  });
});

describe('ShardCoordinator: shares balanced by the CRs they hold (docs/adr/0113)', () => {
  /** CRs by namespace: 10 in every bucket bucket-count rendezvous gives b, 1 in one of a's. */
  const lopsided = (): Map<string, number> => {
    const byCount = assignment(['a', 'b'], BUCKETS);
    const load = new Map<string, number>();
    let one = false;
    for (const [bucket, owner] of byCount) {
      if (owner === 'b') load.set(namespaceIn(bucket), 10);
      else if (!one) {
        load.set(namespaceIn(bucket), 1);
        one = true;
      }
    }
    return load;
  };
  const weightsOf = (load: ReadonlyMap<string, number>): number[] => {
    const w = new Array<number>(BUCKETS).fill(0);
    for (const [ns, crs] of load) w[namespaceBucket(ns, BUCKETS)] = (w[namespaceBucket(ns, BUCKETS)] ?? 0) + crs;
    return w;
  };
  const crsOf = (m: ShardCoordinator, w: readonly number[]): number => m.ownedBuckets().reduce((sum, b) => sum + (w[b] ?? 0), 0);

  it('the smallest live identity publishes the CRs per bucket once, and every replica then holds the share they give it', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    let load: Map<string, number> | undefined = lopsided();
    const more = { load: () => load, rebalancePeriodMs: 6_000 };
    const a = await started(store, clock, 'a', more);
    const b = await started(store, clock, 'b', more);
    await rounds(clock, [a, b], 8);
    const weights = weightsOf(lopsided());
    const balance = store.leases.get(balanceLeaseName('g'));
    expect(balance?.weights).toEqual(weights);
    expect(balance?.record.holderIdentity).toBe('a');
    const want = assignment(['a', 'b'], BUCKETS, weights);
    for (let bucket = 0; bucket < BUCKETS; bucket++) expect(store.holder(bucket), `bucket ${bucket}`).toBe(want.get(bucket));
    // By bucket count b held 40 CRs and a 1; now neither holds more than half of 41, rounded up.
    expect(Math.max(crsOf(a, weights), crsOf(b, weights))).toBeLessThanOrEqual(21);
    // The same load, or one CR more, is not worth moving buckets for: nothing is written again.
    const published = balance?.resourceVersion;
    await rounds(clock, [a, b], 10);
    load = new Map([...lopsided(), [namespaceIn(0), (lopsided().get(namespaceIn(0)) ?? 0) + 1]]);
    await rounds(clock, [a, b], 10);
    expect(store.leases.get(balanceLeaseName('g'))?.resourceVersion).toBe(published);
    // Caches not synced (undefined): nothing is measured, nothing published.
    load = undefined;
    await rounds(clock, [a, b], 10);
    expect(store.leases.get(balanceLeaseName('g'))?.resourceVersion).toBe(published);
  });

  it('a live peer from before the balance rule keeps the whole group on bucket count', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const load = lopsided();
    const a = await started(store, clock, 'a', { load: () => load, rebalancePeriodMs: 2_000 });
    const b = await started(store, clock, 'b', { load: () => load, rebalancePeriodMs: 2_000 });
    await rounds(clock, [a, b], 6);
    expect(store.leases.get(balanceLeaseName('g'))?.weights).toEqual(weightsOf(load));
    // An old replica joins: both replicas fall back to bucket count among the three, as it computes.
    store.unbalanced('c', clock.now());
    const byCount = assignment(['a', 'b', 'c'], BUCKETS);
    for (let i = 0; i < 4; i++) {
      store.unbalanced('c', clock.now());
      await rounds(clock, [a, b], 1);
    }
    for (const m of [a, b])
      expect(new Set(m.ownedBuckets())).toEqual(new Set([...byCount].filter(([, o]) => o === m.identity).map(([bucket]) => bucket)));
  });

  it('without a load (--shard-rebalance-period 0) nothing is published and the shares stay by bucket count', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    const a = await started(store, clock, 'a');
    const b = await started(store, clock, 'b');
    await rounds(clock, [a, b], 20);
    expect(store.leases.has(balanceLeaseName('g'))).toBe(false);
    expect(new Set(b.ownedBuckets())).toEqual(bucketsOf('b', ['a', 'b'], BUCKETS));
  });
});

/** A namespace in `bucket` of BUCKETS. */
function namespaceIn(bucket: number): string {
  for (let i = 0; i < 10_000; i++) if (namespaceBucket(`ns-${i}`, BUCKETS) === bucket) return `ns-${i}`;
  throw new Error(`no namespace found for bucket ${bucket}`);
}

/** A namespace of `bucket` (searched, since buckets come from a hash). */
function nsIn(m: ShardCoordinator, bucket: number): string {
  for (let i = 0; i < 10_000; i++) if (m.bucketOf(`ns-${i}`) === bucket) return `ns-${i}`;
  throw new Error(`no namespace found for bucket ${bucket}`);
}

/** The clock moves on while the process is stopped: its timers have not run yet when it thaws. */
function vi_advanceWithoutTimers(clock: ManualClock, ms: number): void {
  const now = clock.now();
  Object.defineProperty(clock, 'now', { value: () => now + ms, configurable: true });
}
