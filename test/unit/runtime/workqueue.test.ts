import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/util/clock.js';
import { WorkQueue } from '../../../src/runtime/workqueue.js';
import type { WorkqueueMetrics } from '../../../src/telemetry/metric-hooks.js';

/** Lets pending promise callbacks run. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The key get() hands out right now, undefined after shutdown, or PENDING if it would wait. */
const PENDING: unique symbol = Symbol('pending');
async function poll(q: WorkQueue): Promise<string | undefined | typeof PENDING> {
  const ac = new AbortController();
  const got = q.get(ac.signal);
  const result = await Promise.race([got, tick().then((): typeof PENDING => PENDING)]);
  ac.abort();
  return result;
}

describe('WorkQueue basics', () => {
  it('dedupes: a key is queued once however many times it is added', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('a');
    q.add('a');
    expect(q.len()).toBe(1);
    expect(await q.get()).toBe('a');
    expect(q.len()).toBe(0);
    expect(await poll(q)).toBe(PENDING);
  });

  it('hands out ready keys FIFO', async () => {
    const q = new WorkQueue();
    for (const k of ['c', 'a', 'b', 'a']) q.add(k);
    expect([await q.get(), await q.get(), await q.get()]).toEqual(['c', 'a', 'b']);
  });

  it('wakes a waiting get() when a key arrives', async () => {
    const q = new WorkQueue();
    const got = q.get();
    await tick();
    q.add('x');
    expect(await got).toBe('x');
    expect(q.processing()).toBe(1);
  });

  it('re-queues a key added while it is processing only when done() is called', async () => {
    const q = new WorkQueue();
    q.add('a');
    expect(await q.get()).toBe('a');
    q.add('a');
    q.add('a');
    expect(q.len()).toBe(0);
    const second = q.get();
    await tick();
    expect(await Promise.race([second, tick().then(() => PENDING)])).toBe(PENDING);
    q.done('a');
    expect(await second).toBe('a');
    q.done('a');
    expect(await poll(q)).toBe(PENDING);
  });

  it('done() without a new add does not re-queue, and an unknown done() is ignored', async () => {
    const q = new WorkQueue();
    q.add('a');
    await q.get();
    q.done('a');
    q.done('zzz');
    expect(q.len()).toBe(0);
    expect(q.processing()).toBe(0);
  });

  it('get() resolves undefined when its signal aborts, and the key then goes to the queue', async () => {
    const q = new WorkQueue();
    const ac = new AbortController();
    const got = q.get(ac.signal);
    ac.abort();
    expect(await got).toBeUndefined();
    q.add('a');
    expect(q.len()).toBe(1);
    expect(await q.get(AbortSignal.abort())).toBeUndefined();
  });
});

describe('WorkQueue under concurrency', () => {
  it('never hands one key to two workers and never loses the last add', async () => {
    const q = new WorkQueue();
    const keys = ['k0', 'k1', 'k2', 'k3'];
    const inFlight = new Set<string>();
    const lastAdd = new Map<string, number>();
    const lastStart = new Map<string, number>();
    let seq = 0;
    let violations = 0;
    let stop = false;

    const worker = async () => {
      for (;;) {
        const key = await q.get();
        if (key === undefined) return;
        if (inFlight.has(key)) violations++;
        inFlight.add(key);
        lastStart.set(key, seq++);
        for (let i = 0; i < (seq % 3) + 1; i++) await tick();
        inFlight.delete(key);
        q.done(key);
      }
    };
    const workers = Array.from({ length: 5 }, () => worker());
    for (let i = 0; i < 300; i++) {
      const key = keys[(i * 7) % keys.length]!;
      q.add(key);
      lastAdd.set(key, seq++);
      if (i % 5 === 0) await tick();
    }
    // Let everything drain, then stop.
    for (let i = 0; i < 200 && !stop; i++) {
      await tick();
      stop = q.len() === 0 && q.processing() === 0;
    }
    expect(stop).toBe(true);
    await q.shutDownWithDrain();
    await Promise.all(workers);
    expect(violations).toBe(0);
    for (const key of keys) expect(lastStart.get(key)!).toBeGreaterThan(lastAdd.get(key)!);
  });
});

describe('WorkQueue delayed adds', () => {
  it('adds after the delay, in due order', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock });
    q.addAfter('late', 100);
    q.addAfter('early', 50);
    clock.advance(49);
    expect(q.len()).toBe(0);
    clock.advance(1);
    expect(q.len()).toBe(1);
    clock.advance(50);
    expect([await q.get(), await q.get()]).toEqual(['early', 'late']);
  });

  it('keeps the earliest pending time for a key', () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock });
    q.addAfter('a', 100);
    q.addAfter('a', 30);
    q.addAfter('a', 200);
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(30);
    expect(q.len()).toBe(1);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('an immediate add supersedes a delayed one', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock });
    q.addAfter('a', 100);
    q.add('a');
    expect(clock.pendingTimers()).toBe(0);
    expect(await q.get()).toBe('a');
    q.done('a');
    clock.advance(100);
    expect(q.len()).toBe(0);
  });

  it('ignores addAfter for a key that is already queued or dirty', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock });
    q.add('a');
    q.addAfter('a', 10);
    expect(clock.pendingTimers()).toBe(0);
    await q.get();
    q.add('a'); // dirty while processing
    q.addAfter('a', 10);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a delayed add of a processing key waits for done()', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock });
    q.add('a');
    await q.get();
    q.addAfter('a', 10); // as a reconcile returning requeueAfter does, before done()
    q.done('a');
    clock.advance(10);
    expect(await q.get()).toBe('a');
  });

  it('addAfter with a non-positive delay is an add', () => {
    const q = new WorkQueue({ clock: new ManualClock() });
    q.addAfter('a', 0);
    expect(q.len()).toBe(1);
  });
});

describe('WorkQueue priorities', () => {
  it('hands out low keys only when no normal key waits, FIFO within each', async () => {
    const q = new WorkQueue();
    q.add('l1', 'low');
    q.add('n1');
    q.add('l2', 'low');
    q.add('n2');
    expect(q.len()).toBe(4);
    expect([await q.get(), await q.get(), await q.get(), await q.get()]).toEqual(['n1', 'n2', 'l1', 'l2']);
  });

  it('a waiting low key added as normal moves to the normal queue; a normal key stays normal', async () => {
    const q = new WorkQueue();
    q.add('a', 'low');
    q.add('b');
    q.add('a');
    q.add('b', 'low');
    q.add('c', 'low');
    expect(q.len()).toBe(3);
    expect([await q.get(), await q.get(), await q.get()]).toEqual(['b', 'a', 'c']);
  });

  it('a processing key keeps the highest priority it was added with again', async () => {
    const q = new WorkQueue();
    q.add('p');
    expect(await q.get()).toBe('p');
    q.add('p', 'low');
    q.add('p');
    q.add('x', 'low');
    q.done('p');
    expect(await q.get()).toBe('p');
    q.done('p');
    q.add('p', 'low');
    expect(await q.get()).toBe('x');
    expect(await q.get()).toBe('p');
  });

  it('a delayed add keeps its priority', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock });
    q.addAfter('late', 1_000, 'low');
    q.add('early', 'low');
    clock.advance(1_000);
    q.add('normal');
    expect([await q.get(), await q.get(), await q.get()]).toEqual(['normal', 'early', 'late']);
  });

  it('shutDown drops low keys too', async () => {
    const q = new WorkQueue();
    q.add('l', 'low');
    q.shutDown();
    expect(q.len()).toBe(0);
    expect(await q.get()).toBeUndefined();
  });
});

describe('WorkQueue rate limiting', () => {
  async function failOnce(q: WorkQueue, clock: ManualClock, key: string): Promise<number> {
    q.addRateLimited(key);
    let waited = 0;
    while (q.len() === 0) {
      clock.advance(1_000);
      waited += 1_000;
    }
    expect(await q.get()).toBe(key);
    q.done(key);
    return waited;
  }

  it('backs off exponentially per key from 1 s to the 5 min cap', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock });
    const waits: number[] = [];
    for (let i = 0; i < 11; i++) waits.push(await failOnce(q, clock, 'a'));
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300].map((s) => s * 1_000));
    expect(q.numRequeues('a')).toBe(11);
    expect(await failOnce(q, clock, 'b')).toBe(1_000);
  });

  it('forget resets the backoff', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock, backoff: { baseMs: 1_000, capMs: 60_000 } });
    await failOnce(q, clock, 'a');
    await failOnce(q, clock, 'a');
    q.forget('a');
    expect(q.numRequeues('a')).toBe(0);
    expect(await failOnce(q, clock, 'a')).toBe(1_000);
  });
});

describe('WorkQueue shutdown', () => {
  it('shutDown resolves waiting and later gets with undefined, drops queued and delayed keys, ignores adds', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock });
    const waiting = q.get();
    await tick();
    q.shutDown();
    expect(await waiting).toBeUndefined();

    const q2 = new WorkQueue({ clock });
    q2.add('queued');
    q2.addAfter('delayed', 10);
    q2.shutDown();
    expect(clock.pendingTimers()).toBe(0);
    expect(q2.len()).toBe(0);
    expect(await q2.get()).toBeUndefined();
    q2.add('late');
    q2.addRateLimited('late');
    expect(q2.len()).toBe(0);
    expect(q2.shuttingDown()).toBe(true);
  });

  it('a key added while processing is not re-queued after shutdown', async () => {
    const q = new WorkQueue();
    q.add('a');
    await q.get();
    q.add('a');
    q.shutDown();
    q.done('a');
    expect(q.len()).toBe(0);
    expect(q.processing()).toBe(0);
  });

  it('shutDownWithDrain waits for in-flight keys to be done', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('b');
    await q.get();
    await q.get();
    let drained = false;
    const drain = q.shutDownWithDrain().then(() => (drained = true));
    await tick();
    q.done('a');
    await tick();
    expect(drained).toBe(false);
    q.done('b');
    await drain;
    expect(drained).toBe(true);
    await q.shutDownWithDrain(); // nothing in flight: resolves at once
  });
});

describe('WorkQueue metrics', () => {
  it('reports adds, depth, queue and work durations, and retries', async () => {
    const clock = new ManualClock();
    const calls = { add: 0, retry: 0, depth: [] as number[], queue: [] as number[], work: [] as number[] };
    const metrics: WorkqueueMetrics = {
      add: () => calls.add++,
      retry: () => calls.retry++,
      depth: (d) => calls.depth.push(d),
      queueDuration: (s) => calls.queue.push(s),
      workDuration: (s) => calls.work.push(s),
    };
    const q = new WorkQueue({ clock, metrics });
    q.add('a');
    q.add('a'); // deduplicated: not an add
    q.add('b');
    clock.advance(2_000);
    await q.get();
    clock.advance(500);
    expect(q.unfinishedWorkSeconds()).toBe(0.5);
    expect(q.longestRunningProcessorSeconds()).toBe(0.5);
    q.done('a');
    q.addRateLimited('a');
    expect(calls).toEqual({ add: 2, retry: 1, depth: [1, 2, 1], queue: [2], work: [0.5] });
  });
});

describe('WorkQueue fairness across namespaces', () => {
  it('hands out a key of a second namespace within the first 2 gets after 500 keys of another', async () => {
    const q = new WorkQueue();
    for (let i = 0; i < 500; i++) q.add(`a/cr-${i}`);
    q.add('b/only');
    const first = [await q.get(), await q.get()];
    expect(first).toContain('b/only');
    expect(q.len()).toBe(499);
  });

  it('takes namespaces in turns, one key each, FIFO within a namespace', async () => {
    const q = new WorkQueue();
    for (const k of ['a/1', 'a/2', 'a/3', 'b/1', 'b/2', 'c/1']) q.add(k);
    const got: (string | undefined)[] = [];
    for (let i = 0; i < 6; i++) got.push(await q.get());
    expect(got).toEqual(['a/1', 'b/1', 'c/1', 'a/2', 'b/2', 'a/3']);
  });

  it('a namespace that starts waiting joins the end of the round', async () => {
    const q = new WorkQueue();
    for (const k of ['a/1', 'a/2', 'b/1', 'b/2']) q.add(k);
    expect(await q.get()).toBe('a/1');
    q.add('c/1');
    expect([await q.get(), await q.get(), await q.get(), await q.get()]).toEqual(['b/1', 'a/2', 'c/1', 'b/2']);
  });

  it('delayed adds and retries of a flooding namespace join its FIFO, not the front of the round', async () => {
    const clock = new ManualClock();
    const q = new WorkQueue({ clock });
    for (let i = 0; i < 50; i++) q.addAfter(`a/${i}`, 1_000);
    q.addRateLimited('b/retry');
    clock.advance(1_000);
    expect(q.len()).toBe(51);
    expect([await q.get(), await q.get()]).toContain('b/retry');
  });

  it('priorities win over fairness: every normal key of a flooding namespace goes before a low key of another', async () => {
    const q = new WorkQueue();
    q.add('b/resync', 'low');
    for (let i = 0; i < 3; i++) q.add(`a/${i}`);
    q.add('a/resync', 'low');
    const got: (string | undefined)[] = [];
    for (let i = 0; i < 5; i++) got.push(await q.get());
    expect(got).toEqual(['a/0', 'a/1', 'a/2', 'b/resync', 'a/resync']);
  });

  it('a low key raised to normal keeps fairness: it waits in its namespace of the normal queue', async () => {
    const q = new WorkQueue();
    q.add('a/1');
    q.add('a/2');
    q.add('b/1', 'low');
    q.add('b/1');
    expect([await q.get(), await q.get(), await q.get()]).toEqual(['a/1', 'b/1', 'a/2']);
  });
});

describe('WorkQueue cap per namespace', () => {
  it('a namespace at its cap waits while other namespaces go; done() hands its next key to a waiting worker', async () => {
    const q = new WorkQueue({ maxInFlightPerNamespace: 1 });
    for (const k of ['a/1', 'a/2', 'a/3', 'b/1']) q.add(k);
    expect(await q.get()).toBe('a/1');
    expect(await q.get()).toBe('b/1');
    const waiting = q.get();
    await tick();
    expect(await Promise.race([waiting, tick().then(() => PENDING)])).toBe(PENDING);
    expect(q.len()).toBe(2);
    q.done('b/1');
    expect(await Promise.race([waiting, tick().then(() => PENDING)])).toBe(PENDING);
    q.done('a/1');
    expect(await waiting).toBe('a/2');
    q.add('b/2');
    expect(await q.get()).toBe('b/2');
  });

  it('hanging keys of one namespace leave a worker for another namespace that arrives later', async () => {
    const q = new WorkQueue({ maxInFlightPerNamespace: 3 });
    for (let i = 0; i < 4; i++) q.add(`hostile/hang-${i}`);
    const held = [await q.get(), await q.get(), await q.get()];
    expect(held).toEqual(['hostile/hang-0', 'hostile/hang-1', 'hostile/hang-2']);
    const fourthWorker = q.get();
    await tick();
    q.add('other/trivial');
    expect(await fourthWorker).toBe('other/trivial');
  });

  it('a low key of another namespace goes before a normal key at its cap', async () => {
    const q = new WorkQueue({ maxInFlightPerNamespace: 1 });
    q.add('a/1');
    q.add('a/2');
    q.add('b/resync', 'low');
    expect(await q.get()).toBe('a/1');
    expect(await q.get()).toBe('b/resync');
    q.done('a/1');
    expect(await q.get()).toBe('a/2');
  });

  it('cluster-scoped keys (no namespace) are not capped', async () => {
    const q = new WorkQueue({ maxInFlightPerNamespace: 1 });
    for (const k of ['x', 'y', 'z']) q.add(k);
    expect([await q.get(), await q.get(), await q.get()]).toEqual(['x', 'y', 'z']);
  });

  it('a dirty key re-queued by done() counts its namespace free again', async () => {
    const q = new WorkQueue({ maxInFlightPerNamespace: 1 });
    q.add('a/1');
    expect(await q.get()).toBe('a/1');
    q.add('a/1');
    q.add('a/2');
    q.done('a/1');
    expect(await q.get()).toBe('a/2');
    expect(await poll(q)).toBe(PENDING);
    q.done('a/2');
    expect(await q.get()).toBe('a/1');
  });

  it('refuses a cap that is not a positive whole number', () => {
    expect(() => new WorkQueue({ maxInFlightPerNamespace: 0 })).toThrow(RangeError);
    expect(() => new WorkQueue({ maxInFlightPerNamespace: 1.5 })).toThrow(RangeError);
  });
});

describe('WorkQueue fairness, property-based', () => {
  type Op = { t: 'add'; ns: number; low: boolean } | { t: 'get' } | { t: 'done'; i: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ t: fc.constant('add' as const), ns: fc.integer({ min: 0, max: 3 }), low: fc.boolean() }),
    fc.record({ t: fc.constant('get' as const) }),
    fc.record({ t: fc.constant('done' as const), i: fc.nat({ max: 7 }) }),
  );

  /** Every added key handed out once, and in the order of its adds within its namespace and priority. */
  function expectEachOnceInOrder(added: readonly { key: string; ns: string; low: boolean }[], handedOut: readonly string[]): void {
    expect([...handedOut].sort()).toEqual(added.map((a) => a.key).sort());
    for (const ns of ['ns0', 'ns1', 'ns2', 'ns3']) {
      for (const low of [false, true]) {
        const inOrder = added.filter((a) => a.ns === ns && a.low === low).map((a) => a.key);
        expect(handedOut.filter((k) => inOrder.includes(k))).toEqual(inOrder);
      }
    }
  }

  it('hands every added key out exactly once, FIFO per namespace and priority, normal first, within the cap', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), fc.constantFrom(1, 2, Infinity), async (ops, cap) => {
        const q = new WorkQueue({ maxInFlightPerNamespace: cap });
        const added: { key: string; ns: string; low: boolean }[] = [];
        const waiting = new Set<string>();
        const held: string[] = [];
        const handedOut: string[] = [];
        const heldIn = (ns: string): number => held.filter((k) => k.startsWith(`${ns}/`)).length;
        const take = async (): Promise<boolean> => {
          const key = await poll(q);
          if (key === PENDING || key === undefined) return false;
          const entry = added.find((a) => a.key === key);
          expect(entry).toBeDefined();
          expect(waiting.has(key)).toBe(true);
          expect(heldIn(entry!.ns)).toBeLessThan(cap);
          // A low key only when no normal key of a namespace below its cap waits.
          if (entry!.low) for (const a of added) if (waiting.has(a.key) && !a.low) expect(heldIn(a.ns)).toBeGreaterThanOrEqual(cap);
          waiting.delete(key);
          held.push(key);
          handedOut.push(key);
          return true;
        };
        for (const o of ops) {
          if (o.t === 'add') {
            const entry = { key: `ns${o.ns}/k${added.length}`, ns: `ns${o.ns}`, low: o.low };
            added.push(entry);
            waiting.add(entry.key);
            q.add(entry.key, o.low ? 'low' : 'normal');
          } else if (o.t === 'get') {
            await take();
          } else if (held.length > 0) {
            const [key] = held.splice(o.i % held.length, 1);
            q.done(key!);
          }
        }
        for (let round = 0; round < 200 && (held.length > 0 || q.len() > 0); round++) {
          for (const key of held.splice(0)) q.done(key);
          while (await take());
        }
        expect(q.len()).toBe(0);
        expectEachOnceInOrder(added, handedOut);
      }),
      { seed: 20261126, numRuns: 200 },
    );
  });
});
