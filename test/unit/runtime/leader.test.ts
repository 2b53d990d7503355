import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/util/clock.js';
import {
  LeaderElector,
  LeaseConflictError,
  type LeaseLock,
  type LeaseRecord,
  type LeaderElectorOptions,
  type VersionedLease,
} from '../../../src/runtime/leader.js';
import { silentLogger } from '../../../src/telemetry/logger.js';

/** One Lease in memory, with the apiserver's optimistic concurrency (409 on a stale resourceVersion). */
class LeaseStore {
  record: LeaseRecord | undefined;
  rv = 0;
  writes: LeaseRecord[] = [];

  /** Someone else writes the lease (another replica, kubectl). */
  put(record: LeaseRecord): void {
    this.record = record;
    this.rv++;
  }
}

/** A client of the store; `broken` makes every call fail, `hang` makes every call never settle. */
class FakeLock implements LeaseLock {
  readonly description = 'ns/lease';
  broken = false;
  hang = false;
  calls = 0;

  constructor(readonly store: LeaseStore) {}

  #check(): Promise<void> {
    this.calls++;
    if (this.hang) return new Promise(() => undefined);
    if (this.broken) return Promise.reject(new Error('connection refused'));
    return Promise.resolve();
  }

  async get(): Promise<VersionedLease | undefined> {
    await this.#check();
    const { record } = this.store;
    return record === undefined ? undefined : { record: { ...record }, resourceVersion: String(this.store.rv) };
  }

  async create(record: LeaseRecord): Promise<VersionedLease> {
    await this.#check();
    if (this.store.record !== undefined) throw new LeaseConflictError('exists');
    this.store.put(record);
    this.store.writes.push(record);
    return { record: { ...record }, resourceVersion: String(this.store.rv) };
  }

  async update(record: LeaseRecord, resourceVersion: string): Promise<VersionedLease> {
    await this.#check();
    if (resourceVersion !== String(this.store.rv)) throw new LeaseConflictError('stale');
    this.store.put(record);
    this.store.writes.push(record);
    return { record: { ...record }, resourceVersion: String(this.store.rv) };
  }
}

const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await new Promise<void>((r) => setImmediate(r));
};

/** Advances the manual clock in small steps, letting promise callbacks run in between. */
async function advance(clock: ManualClock, ms: number, step = 100): Promise<void> {
  await flush();
  for (let t = 0; t < ms; t += step) {
    clock.advance(Math.min(step, ms - t));
    await flush();
  }
}

const electors: LeaderElector[] = [];
afterEach(async () => {
  for (const e of electors.splice(0)) await e.release().catch(() => undefined);
});

function elector(clock: ManualClock, lock: LeaseLock, identity: string, extra: Partial<LeaderElectorOptions> = {}) {
  const changes: boolean[] = [];
  const e = new LeaderElector({
    lock,
    identity,
    clock,
    random: () => 0,
    log: silentLogger(),
    onLeadershipChange: (leading) => changes.push(leading),
    ...extra,
  });
  electors.push(e);
  return { e, changes };
}

describe('LeaderElector', () => {
  it('creates the Lease when there is none and becomes the leader', async () => {
    const clock = new ManualClock(1_000_000);
    const store = new LeaseStore();
    const { e, changes } = elector(clock, new FakeLock(store), 'a');
    await expect(e.acquire()).resolves.toBe(true);
    expect(e.isLeader()).toBe(true);
    expect(changes).toEqual([true]);
    expect(store.record).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: 1_000_000,
      renewTime: 1_000_000,
      leaseTransitions: 0,
    });
  });

  it('renews every retry period, keeping acquireTime and transitions', async () => {
    const clock = new ManualClock(0);
    const store = new LeaseStore();
    const { e } = elector(clock, new FakeLock(store), 'a');
    await e.acquire();
    await advance(clock, 6_000);
    expect(store.writes.map((w) => w.renewTime)).toEqual([0, 2_000, 4_000, 6_000]);
    expect(store.record).toMatchObject({ holderIdentity: 'a', acquireTime: 0, leaseTransitions: 0 });
    expect(e.isLeader()).toBe(true);
  });

  it('a second candidate waits while the lease is held and renewed', async () => {
    const clock = new ManualClock(0);
    const store = new LeaseStore();
    const { e: a } = elector(clock, new FakeLock(store), 'a');
    await a.acquire();
    const { e: b } = elector(clock, new FakeLock(store), 'b');
    let bLeads = false;
    void b.acquire().then((v) => (bLeads = v));
    await advance(clock, 60_000);
    expect(bLeads).toBe(false);
    expect(a.isLeader()).toBe(true);
    expect(b.observedHolder()).toBe('a');
  });

  it('retries with client-go jitter: retryPeriod × (1 + 1.2 × random)', async () => {
    const clock = new ManualClock(0);
    const store = new LeaseStore();
    store.put({ holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: 0, renewTime: 0, leaseTransitions: 0 });
    const lock = new FakeLock(store);
    const { e } = elector(clock, lock, 'b', { random: () => 0.5 });
    void e.acquire();
    await flush();
    expect(lock.calls).toBe(1);
    await advance(clock, 3_100);
    expect(lock.calls).toBe(1);
    await advance(clock, 100);
    expect(lock.calls).toBe(2); // 2 s × 1.6 = 3.2 s
  });

  it('when the leader can no longer renew, it gives up at the renew deadline, before anyone can take over', async () => {
    const clock = new ManualClock(0);
    const store = new LeaseStore();
    const lockA = new FakeLock(store);
    const { e: a, changes } = elector(clock, lockA, 'a');
    await a.acquire();
    const { e: b } = elector(clock, new FakeLock(store), 'b');
    let bLeadsAt: number | undefined;
    void b.acquire().then(() => (bLeadsAt = clock.now()));
    let lostAt: number | undefined;
    let lostMessage = '';
    void a.lost.then((err) => {
      lostAt = clock.now();
      lostMessage = err.message;
    });
    await advance(clock, 4_000); // last successful renewal at t=4s
    lockA.broken = true;
    await advance(clock, 9_900);
    expect(lostAt).toBeUndefined();
    await advance(clock, 100);
    expect(lostAt).toBe(14_000); // 4 s + renew deadline 10 s
    expect(lostMessage).toMatch(/renew deadline/);
    expect(a.isLeader()).toBe(false);
    expect(changes).toEqual([true, false]);
    expect(bLeadsAt).toBeUndefined();
    await advance(clock, 10_000);
    // b's t=4s poll ran just before a's last renewal, so b first saw that record at t=6s: on b's own
    // clock the lease is free from 6 s + 15 s, and b's next poll after that is at 22 s.
    expect(bLeadsAt).toBe(22_000);
    expect(store.record).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1, acquireTime: 22_000 });
  });

  it('a process paused past the renew deadline is no leader by its clock, before its deadline timer runs', async () => {
    const manual = new ManualClock(0);
    // A thawed process: the time jumped, and none of its timers has run yet.
    let jump = 0;
    const clock = { now: () => manual.now() + jump, setTimeout: (cb: () => void, ms: number) => manual.setTimeout(cb, ms) };
    const store = new LeaseStore();
    const { e, changes } = elector(manual, new FakeLock(store), 'a', { clock });
    await e.acquire();
    await advance(manual, 2_000); // renewed at t=2s
    let cancelledInTick = false;
    e.onLost(() => (cancelledInTick = true));
    jump = 10_000; // the renewal was sent at t=2s; now t=12s
    // The side-effect-free question (the helm runner's, between a fork and a kill) declares nothing.
    expect(e.holdsLease()).toBe(false);
    expect(cancelledInTick).toBe(false);
    expect(e.isLeader()).toBe(false);
    expect(cancelledInTick).toBe(true);
    expect(changes).toEqual([true, false]);
    expect((await e.lost).message).toMatch(/renew deadline .*paused/);
  });

  it('within the renew deadline since the last renewal, the clock keeps it the leader', async () => {
    const manual = new ManualClock(0);
    let jump = 0;
    const clock = { now: () => manual.now() + jump, setTimeout: (cb: () => void, ms: number) => manual.setTimeout(cb, ms) };
    const { e } = elector(manual, new FakeLock(new LeaseStore()), 'a', { clock });
    await e.acquire();
    await advance(manual, 2_000);
    jump = 9_999; // renewal sent at t=2s; now t=11.999s
    expect(e.holdsLease()).toBe(true);
    expect(e.isLeader()).toBe(true);
  });

  it('loses leadership at once when a read shows another holder', async () => {
    const clock = new ManualClock(0);
    const store = new LeaseStore();
    const { e } = elector(clock, new FakeLock(store), 'a');
    await e.acquire();
    let lostAt: number | undefined;
    void e.lost.then(() => (lostAt = clock.now()));
    await advance(clock, 500);
    store.put({ holderIdentity: 'intruder', leaseDurationSeconds: 15, acquireTime: 500, renewTime: 500, leaseTransitions: 1 });
    await advance(clock, 1_500);
    expect(lostAt).toBe(2_000);
    expect((await e.lost).message).toMatch(/held by intruder/);
    expect(store.record?.holderIdentity).toBe('intruder'); // never overwritten
  });

  it('a request that never answers counts as a failure at the renew deadline', async () => {
    const clock = new ManualClock(0);
    const store = new LeaseStore();
    const lock = new FakeLock(store);
    const { e } = elector(clock, lock, 'a');
    await e.acquire();
    lock.hang = true;
    let lostAt: number | undefined;
    void e.lost.then(() => (lostAt = clock.now()));
    await advance(clock, 12_100);
    expect(lostAt).toBe(10_000);
  });

  it('release() hands the lease over: empty holder, 1 s duration, and a standby takes it at its next retry', async () => {
    const clock = new ManualClock(0);
    const store = new LeaseStore();
    const { e: a, changes } = elector(clock, new FakeLock(store), 'a');
    await a.acquire();
    const { e: b } = elector(clock, new FakeLock(store), 'b');
    let bLeadsAt: number | undefined;
    void b.acquire().then(() => (bLeadsAt = clock.now()));
    await advance(clock, 5_000);
    await a.release();
    expect(changes).toEqual([true, false]);
    expect(store.record).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1, leaseTransitions: 0 });
    await advance(clock, 2_000);
    expect(bLeadsAt).toBe(6_000);
    expect(store.record).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    // a released: it no longer renews.
    const writes = store.writes.length;
    await advance(clock, 4_000);
    expect(store.writes.slice(writes).every((w) => w.holderIdentity === 'b')).toBe(true);
  });

  it('release() does not touch a lease someone else holds now', async () => {
    const clock = new ManualClock(0);
    const store = new LeaseStore();
    const { e } = elector(clock, new FakeLock(store), 'a');
    await e.acquire();
    store.put({ holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: 0, renewTime: 0, leaseTransitions: 1 });
    await e.release();
    expect(store.record?.holderIdentity).toBe('other');
  });

  it('acquire() resolves false when aborted, and release() then writes nothing', async () => {
    const clock = new ManualClock(0);
    const store = new LeaseStore();
    store.put({ holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: 0, renewTime: 0, leaseTransitions: 0 });
    const { e } = elector(clock, new FakeLock(store), 'b');
    const abort = new AbortController();
    const acquired = e.acquire(abort.signal);
    await advance(clock, 3_000);
    abort.abort();
    await expect(acquired).resolves.toBe(false);
    await e.release();
    expect(store.writes).toEqual([]);
    await advance(clock, 30_000);
    expect(store.record?.holderIdentity).toBe('other');
  });

  it('two candidates racing for a free lease: exactly one wins', async () => {
    const clock = new ManualClock(0);
    const store = new LeaseStore();
    const a = elector(clock, new FakeLock(store), 'a').e;
    const b = elector(clock, new FakeLock(store), 'b').e;
    const won: string[] = [];
    void a.acquire().then((v) => v && won.push('a'));
    void b.acquire().then((v) => v && won.push('b'));
    await advance(clock, 30_000);
    expect(won).toHaveLength(1);
    expect([a.isLeader(), b.isLeader()].filter(Boolean)).toHaveLength(1);
  });

  it('validates durations like client-go', () => {
    const lock = new FakeLock(new LeaseStore());
    const make = (o: Partial<LeaderElectorOptions>) => () => new LeaderElector({ lock, identity: 'x', log: silentLogger(), ...o });
    expect(make({ leaseDurationMs: 10_000, renewDeadlineMs: 10_000 })).toThrow(/greater than the renew deadline/);
    expect(make({ renewDeadlineMs: 2_000, retryPeriodMs: 2_000 })).toThrow(/1.2/);
    expect(make({ identity: '' })).toThrow(/identity/);
    expect(make({})).not.toThrow();
  });
});
