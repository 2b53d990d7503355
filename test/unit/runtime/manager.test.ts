import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/util/clock.js';
import type { StopOptions } from '../../../src/runtime/controller.js';
import {
  LeadershipLostError,
  ListenError,
  Manager,
  type ConfigWatch,
  type Elector,
  type LeaderWork,
  type ListenAddress,
  type ManagerOptions,
} from '../../../src/runtime/manager.js';
import type { HttpListener } from '../../../src/telemetry/health.js';
import { silentLogger } from '../../../src/telemetry/logger.js';

const deferred = <T = void>() => Promise.withResolvers<T>();

/** The controllers: `start` settles when the test says so. */
class FakeWork implements LeaderWork {
  readonly starting = deferred();
  starts = 0;
  stops: StopOptions[] = [];
  synced = false;
  resyncs = 0;

  start(): Promise<void> {
    this.starts++;
    return this.starting.promise.then(() => {
      this.synced = true;
    });
  }
  stop(how: StopOptions): Promise<void> {
    this.stops.push(how);
    this.synced = false;
    return Promise.resolve();
  }
  hasSynced(): boolean {
    return this.synced;
  }
  resyncAll(): number {
    this.resyncs++;
    return 3;
  }
}

class FakeElector implements Elector {
  readonly identity = 'me';
  readonly #lost = deferred<Error>();
  readonly lost = this.#lost.promise;
  #won = deferred<boolean>();
  leading = false;
  releases = 0;

  acquire(signal: AbortSignal): Promise<boolean> {
    signal.addEventListener('abort', () => {
      this.#won.resolve(false);
    });
    return this.#won.promise;
  }
  win(): void {
    this.leading = true;
    this.#won.resolve(true);
  }
  readonly #listeners: (() => void)[] = [];
  lose(reason: string): void {
    this.leading = false;
    for (const l of this.#listeners) l();
    this.#lost.resolve(new Error(reason));
  }
  onLost(listener: () => void): void {
    this.#listeners.push(listener);
  }
  isLeader(): boolean {
    return this.leading;
  }
  release(): Promise<void> {
    this.releases++;
    this.leading = false;
    return Promise.resolve();
  }
}

class FakeConfigWatch implements ConfigWatch {
  starts = 0;
  stops = 0;
  start(): void {
    this.starts++;
  }
  stop(): Promise<void> {
    this.stops++;
    return Promise.resolve();
  }
}

/** Records what listens and what is closed; `refuse` makes a port "taken". */
class FakeServers {
  open = new Set<number>();
  refuse = new Set<number>();
  listen = (bind: ListenAddress): Promise<HttpListener> => {
    if (this.refuse.has(bind.port)) return Promise.reject(new Error(`EADDRINUSE :${bind.port}`));
    this.open.add(bind.port);
    return Promise.resolve({
      address: `127.0.0.1:${bind.port}`,
      port: bind.port,
      close: () => {
        this.open.delete(bind.port);
        return Promise.resolve();
      },
    });
  };
}

const flush = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

const managers: { stop: AbortController; run: Promise<void> }[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) {
    m.stop.abort();
    await m.run.catch(() => undefined);
  }
});

function setup(extra: Partial<ManagerOptions> = {}) {
  const work = new FakeWork();
  const servers = new FakeServers();
  const clock = new ManualClock();
  const manager = new Manager({
    log: silentLogger(),
    work,
    clock,
    listen: servers.listen,
    gracefulShutdownTimeoutMs: 30_000,
    metricsServer: { bind: { host: undefined, port: 8080 }, handler: () => undefined },
    healthProbeBindAddress: { host: undefined, port: 8081 },
    ...extra,
  });
  const stop = new AbortController();
  const start = () => {
    const run = manager.run(stop.signal);
    managers.push({ stop, run });
    return run;
  };
  return { manager, work, servers, clock, stop, start };
}

const isReady = (m: Manager): boolean => {
  try {
    void m.ready();
    return true;
  } catch {
    return false;
  }
};

describe('Manager without leader election', () => {
  it('serves, starts the controllers, is ready once synced, and on the stop signal drains them within the graceful timeout and closes the servers', async () => {
    const { manager, work, servers, stop, start } = setup();
    const run = start();
    await flush();
    expect([...servers.open].sort()).toEqual([8080, 8081]);
    expect(manager.state).toBe('starting');
    expect(isReady(manager)).toBe(false);
    work.starting.resolve();
    await manager.started;
    expect(manager.state).toBe('running');
    expect(isReady(manager)).toBe(true);

    stop.abort();
    await run;
    expect(work.stops).toEqual([{ timeoutMs: 30_000 }]);
    expect(servers.open.size).toBe(0);
    expect(manager.state).toBe('stopped');
  });

  it('a stop signal while the controllers start stops them gracefully and never starts watching the config', async () => {
    const watch = new FakeConfigWatch();
    const { work, stop, start } = setup({ configWatch: watch });
    const run = start();
    await flush();
    stop.abort();
    work.starting.resolve();
    await run;
    expect(work.stops[0]).toEqual({ timeoutMs: 30_000 });
    expect(watch.starts).toBe(0);
    expect(watch.stops).toBeGreaterThan(0);
  });

  it('a controller that fails to start fails the run, after stopping everything', async () => {
    const { work, servers, start } = setup();
    const run = start();
    await flush();
    work.starting.reject(new Error('no such CRD'));
    await expect(run).rejects.toThrow('no such CRD');
    expect(work.stops.length).toBeGreaterThan(0);
    expect(servers.open.size).toBe(0);
  });

  it('a port that is taken is a ListenError, and the server already listening is closed', async () => {
    const { work, servers, start } = setup();
    servers.refuse.add(8081);
    await expect(start()).rejects.toThrow(ListenError);
    await expect(start()).rejects.toThrow(/may be called once/);
    expect(servers.open.size).toBe(0);
    expect(work.starts).toBe(0);
  });

  it('watches the config once the controllers run, and stops watching before it stops them', async () => {
    const watch = new FakeConfigWatch();
    const { work, stop, start, manager } = setup({ configWatch: watch });
    const run = start();
    work.starting.resolve();
    await manager.started;
    expect(watch.starts).toBe(1);
    stop.abort();
    await run;
    expect(watch.stops).toBeGreaterThan(0);
  });
});

describe('Manager with leader election', () => {
  it('a standby is ready and starts nothing; once leading it starts, and reconciles every CR once more after the settle delay', async () => {
    const elector = new FakeElector();
    const { manager, work, clock, start } = setup({ elector, settleAfterTakeoverMs: 50_000 });
    void start();
    await flush();
    expect(manager.state).toBe('standby');
    expect(isReady(manager)).toBe(true);
    expect(work.starts).toBe(0);

    elector.win();
    await flush();
    expect(work.starts).toBe(1);
    expect(isReady(manager)).toBe(false); // leading, caches not synced yet
    work.starting.resolve();
    await manager.started;
    expect(isReady(manager)).toBe(true);
    clock.advance(49_999);
    expect(work.resyncs).toBe(0);
    clock.advance(1);
    expect(work.resyncs).toBe(1);
  });

  it('stopped before winning the Lease: nothing starts, the elector is released, run resolves', async () => {
    const elector = new FakeElector();
    const { work, stop, start } = setup({ elector });
    const run = start();
    await flush();
    stop.abort();
    await run;
    expect(work.starts).toBe(0);
    expect(elector.releases).toBe(1);
  });

  it('shutdown drains gracefully, cancels the settle timer and releases the Lease', async () => {
    const elector = new FakeElector();
    const { manager, work, clock, stop, start } = setup({ elector, settleAfterTakeoverMs: 50_000 });
    const run = start();
    elector.win();
    work.starting.resolve();
    await manager.started;
    stop.abort();
    await run;
    expect(work.stops).toEqual([{ timeoutMs: 30_000 }]);
    expect(elector.releases).toBe(1);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('lost leadership cancels the reconciles at once and fails the run with LeadershipLostError', async () => {
    const elector = new FakeElector();
    const watch = new FakeConfigWatch();
    const { manager, work, servers, start } = setup({ elector, configWatch: watch });
    const run = start();
    elector.win();
    work.starting.resolve();
    await manager.started;
    elector.lose('the lease is now held by other');
    // In the same tick: nothing queued meanwhile may find its reconcile still running.
    expect(work.stops).toEqual([{ timeoutMs: 0, abortGraceMs: 3_000, leadershipLost: true }]);
    await expect(run).rejects.toThrow(LeadershipLostError);
    await expect(run).rejects.toThrow('the lease is now held by other');
    expect(work.stops[0]).toEqual({ timeoutMs: 0, abortGraceMs: 3_000, leadershipLost: true });
    expect(watch.stops).toBeGreaterThan(0);
    expect(servers.open.size).toBe(0);
  });
});
