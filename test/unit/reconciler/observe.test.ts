import { describe, expect, it } from 'vitest';
import { observeRelease, ownsRelease, type ReleaseOwner } from '../../../src/reconciler/observe.js';
import { CHART, harness, NAME, NAMESPACE, OWNER_KIND, record, UID } from './actions/fakes.js';

const owner = (adoptReleases = false): ReleaseOwner => ({ chartName: CHART.name, ownerKind: OWNER_KIND, adoptReleases });
const at = { namespace: NAMESPACE, name: NAME, uid: UID, fingerprint: 'fp' };
const BY_HAND = [record(1, 'deployed', {})];

describe('observeRelease of a release without our owner label', () => {
  it('is NotOwned when it runs our chart but nothing allows adopting it: never upgraded, never ours to uninstall', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, BY_HAND);
    expect(await observeRelease(h.ctx, owner(), at)).toStrictEqual({ kind: 'NotOwned', chart: `${CHART.name}-${CHART.version}` });
    expect(await ownsRelease(h.ctx, owner(), at)).toBe(false);
  });

  it('is adopted (OutOfSync, then upgraded) when the watch adopts releases', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, BY_HAND);
    expect(await observeRelease(h.ctx, owner(true), at)).toStrictEqual({ kind: 'OutOfSync', latest: BY_HAND[0], adopted: 'watch' });
    expect(await ownsRelease(h.ctx, owner(true), at)).toBe(true);
  });

  it('is adopted when its storage names this CR instance as owner, and only this one', async () => {
    const h = harness();
    const latest = { ...record(1, 'deployed', {}), ownerUids: [UID] };
    h.storage.set(NAMESPACE, NAME, [latest]);
    expect(await observeRelease(h.ctx, owner(), at)).toStrictEqual({ kind: 'OutOfSync', latest, adopted: 'owner-reference' });
    expect((await observeRelease(h.ctx, owner(), { ...at, uid: 'another-instance' })).kind).toBe('NotOwned');
  });

  it('is a name conflict when it runs another chart, even with the watch adopting releases', async () => {
    const h = harness();
    h.storage.set(NAMESPACE, NAME, BY_HAND);
    expect(await observeRelease(h.ctx, { ...owner(true), chartName: 'redis' }, at)).toStrictEqual({ kind: 'Conflict', ownerKind: `chart ${CHART.name}` });
  });
});
