import { describe, expect, it } from 'vitest';
import { LiveReleases } from '../../../src/helm/live-releases.js';

describe('LiveReleases', () => {
  it('holds a release while any of its processes is tracked, and each untrack counts once', () => {
    const live = new LiveReleases();
    const first = live.track('demo', 'web');
    const second = live.track('demo', 'web');
    expect(live.has('demo', 'web')).toBe(true);
    expect(live.has('demo', 'api')).toBe(false);
    expect(live.has('other', 'web')).toBe(false);
    first();
    first();
    expect(live.has('demo', 'web')).toBe(true);
    second();
    expect(live.has('demo', 'web')).toBe(false);
  });
});
