import { describe, expect, it } from 'vitest';
import type { Request } from '../../../src/runtime/reconcile.js';
import { RequeueSource } from '../../../src/runtime/requeue-source.js';
import { ManualClock } from '../../../src/util/clock.js';

const key = (name: string): Request => ({ namespace: 'ns', name });

function started(clock = new ManualClock()) {
  const source = new RequeueSource(clock);
  const queued: string[] = [];
  source.start((r) => queued.push(r.name));
  return { clock, source, queued };
}

describe('RequeueSource', () => {
  it('hands each request to the controller that started it, and none made before', () => {
    const source = new RequeueSource(new ManualClock());
    const queued: string[] = [];
    source.request(key('before'));
    source.start((r) => queued.push(r.name));
    source.request(key('a'));
    source.request(key('b'));
    expect(queued).toEqual(['a', 'b']);
  });

  it('runs a look when the clock reaches its time, not before; a time passed runs at the next tick of the clock', () => {
    const { clock, source, queued } = started(new ManualClock(1_000));
    source.at(3_000, () => {
      source.request(key('later'));
    });
    source.at(500, () => {
      source.request(key('overdue'));
    });
    clock.advance(0);
    expect(queued).toEqual(['overdue']);
    clock.advance(1_999);
    expect(queued).toEqual(['overdue']);
    clock.advance(1);
    expect(queued).toEqual(['overdue', 'later']);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('cancels a look', () => {
    const { clock, source, queued } = started();
    source
      .at(1_000, () => {
        source.request(key('never'));
      })
      .cancel();
    expect(clock.pendingTimers()).toBe(0);
    clock.advance(2_000);
    expect(queued).toEqual([]);
  });

  it('once stopped, cancels every pending look and drops every request, and takes no new look or start', () => {
    const { clock, source, queued } = started();
    let looked = 0;
    source.at(1_000, () => looked++);
    source.at(2_000, () => looked++);
    source.stop();
    expect(clock.pendingTimers()).toBe(0);
    source.at(500, () => looked++);
    source.start((r) => queued.push(r.name));
    source.request(key('after-stop'));
    clock.advance(5_000);
    expect(looked).toBe(0);
    expect(queued).toEqual([]);
    expect(clock.pendingTimers()).toBe(0);
  });
});
