import { describe, expect, it } from 'vitest';
import { CLIENT_GO_LIMITS, COMBINED_PREFIX, EventCorrelator, type Verdict } from '../../../src/k8s/event-correlator.js';

/** Correlates `n` events and says what each wrote, creating the Events it asks for. */
function run(c: EventCorrelator, events: readonly { object: string; message: string; at?: number }[]): Verdict[] {
  return events.map((e, i) => {
    const v = c.correlate({ object: e.object, type: 'Warning', reason: 'InstallFailed', message: e.message }, e.at ?? i);
    if (v.write === 'create') c.created(v.key, { name: `${e.object}.${i}`, namespace: 'ns' });
    return v;
  });
}

const times = (n: number, f: (i: number) => { object: string; message: string; at?: number }) => Array.from({ length: n }, (_, i) => f(i));

describe('EventCorrelator', () => {
  it('updates one Event for the same failure repeated, with the count of every repeat', () => {
    const verdicts = run(
      new EventCorrelator(),
      times(5, () => ({ object: 'uid-a', message: 'boom' })),
    );
    expect(verdicts.map((v) => v.write)).toEqual(['create', 'update', 'update', 'update', 'update']);
    expect(verdicts.at(-1)).toMatchObject({ write: 'update', count: 5, event: { name: 'uid-a.0' } });
  });

  it('starts a new Event once the window has passed', () => {
    const c = new EventCorrelator({ ...CLIENT_GO_LIMITS, windowMs: 100 });
    expect(
      run(c, [
        { object: 'a', message: 'boom', at: 0 },
        { object: 'a', message: 'boom', at: 50 },
        { object: 'a', message: 'boom', at: 200 },
      ]).map((v) => v.write),
    ).toEqual(['create', 'update', 'create']);
  });

  it('combines distinct messages of one reason past ten into one Event', () => {
    const verdicts = run(
      new EventCorrelator(),
      times(15, (i) => ({ object: 'uid-a', message: `bad value ${i}` })),
    );
    expect(verdicts.filter((v) => v.write === 'create')).toHaveLength(11);
    expect(verdicts.slice(11).map((v) => v.write)).toEqual(['update', 'update', 'update', 'update']);
    expect(verdicts.at(-1)).toMatchObject({ message: `${COMBINED_PREFIX}bad value 14`, count: 5 });
  });

  it('drops writes about an object past its burst, refills one per interval, and leaves other objects alone', () => {
    const c = new EventCorrelator({ ...CLIENT_GO_LIMITS, burst: 3, refillMs: 1000 });
    const flood = run(
      c,
      times(6, (i) => ({ object: 'hostile', message: 'same', at: i })),
    );
    expect(flood.map((v) => v.write)).toEqual(['create', 'update', 'update', 'drop', 'drop', 'drop']);
    // Another CR's events go through.
    expect(run(c, [{ object: 'other', message: 'same', at: 6 }])[0]?.write).toBe('create');
    // A token later, the update carries every repeat, the dropped ones included.
    expect(c.correlate({ object: 'hostile', type: 'Warning', reason: 'InstallFailed', message: 'same' }, 1006)).toMatchObject({
      write: 'update',
      count: 7,
    });
  });

  it('keeps at most maxKeys entries per map', () => {
    const c = new EventCorrelator({ ...CLIENT_GO_LIMITS, maxKeys: 10 });
    run(
      c,
      times(100, (i) => ({ object: `uid-${i}`, message: 'boom' })),
    );
    expect(c.events).toBe(10);
    expect(c.size).toBeLessThanOrEqual(30);
  });
});
