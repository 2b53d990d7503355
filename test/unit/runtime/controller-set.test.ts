import { describe, expect, it } from 'vitest';
import type { StopOptions } from '../../../src/runtime/controller.js';
import { ControllerSet, DuplicateControllerError, type ManagedController } from '../../../src/runtime/controller-set.js';
import { silentLogger } from '../../../src/telemetry/logger.js';

class FakeRunnable implements ManagedController {
  started = 0;
  stopped = 0;
  synced = false;

  constructor(
    readonly name: string,
    private readonly failStart = false,
  ) {}

  start(): Promise<void> {
    this.started++;
    if (this.failStart) return Promise.reject(new Error(`${this.name} cannot start`));
    this.synced = true;
    return Promise.resolve();
  }
  stoppedWith: (StopOptions | undefined)[] = [];
  stop(how?: StopOptions): Promise<void> {
    this.stopped++;
    this.stoppedWith.push(how);
    return Promise.resolve();
  }
  hasSynced(): boolean {
    return this.synced;
  }
}

const manager = () => new ControllerSet<FakeRunnable>({ log: silentLogger() });

describe('ControllerSet', () => {
  it('starts and stops every controller; hasSynced waits for all', async () => {
    const m = manager();
    const a = new FakeRunnable('a');
    const b = new FakeRunnable('b');
    await m.add(a);
    await m.add(b);
    expect(a.started).toBe(0);
    expect(m.hasSynced()).toBe(false);
    await m.start();
    expect([a.started, b.started]).toEqual([1, 1]);
    expect(m.hasSynced()).toBe(true);
    b.synced = false;
    expect(m.hasSynced()).toBe(false);
    const lost: StopOptions = { timeoutMs: 0, leadershipLost: true };
    await m.stop(lost);
    expect([a.stopped, b.stopped]).toEqual([1, 1]);
    expect([a.stoppedWith, b.stoppedWith]).toEqual([[lost], [lost]]);
  });

  it('starts a controller added while running, and remove() stops it', async () => {
    const m = manager();
    await m.start();
    const c = new FakeRunnable('c');
    await m.add(c);
    expect(c.started).toBe(1);
    expect(m.names()).toEqual(['c']);
    expect(await m.remove('c')).toBe(true);
    expect(c.stopped).toBe(1);
    expect(m.get('c')).toBeUndefined();
    expect(await m.remove('c')).toBe(false);
  });

  it('rejects a duplicate name', async () => {
    const m = manager();
    await m.add(new FakeRunnable('a'));
    await expect(m.add(new FakeRunnable('a'))).rejects.toBeInstanceOf(DuplicateControllerError);
  });

  it('stops everything and rethrows when a controller fails to start', async () => {
    const m = manager();
    const ok = new FakeRunnable('ok');
    await m.add(ok);
    await m.add(new FakeRunnable('bad', true));
    await expect(m.start()).rejects.toThrow('bad cannot start');
    expect(ok.stopped).toBe(1);
  });

  it('unregisters a controller whose start fails when added to a running manager', async () => {
    const m = manager();
    await m.start();
    await expect(m.add(new FakeRunnable('bad', true))).rejects.toThrow();
    expect(m.names()).toEqual([]);
  });
});
