import { describe, expect, it } from 'vitest';
import {
  confirmedOnce,
  observeRelease,
  ownsRelease,
  RECORDS_REMEMBERED_MS,
  recordsRememberedMs,
  rememberedRecords,
  stillDeployed,
  watchedRecords,
  type ReleaseOwner,
} from '../../../../src/reconciler/core/observe.js';
import { PERIOD_JITTER } from '../../../../src/reconciler/decide/period.js';
import { ReleaseChangedError } from '../../../../src/reconciler/objects/release-object-types.js';
import { CHART, harness, NAME, NAMESPACE, OWNER_KIND, record, UID } from '../actions/fakes.js';

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
    expect(await observeRelease(h.ctx, { ...owner(true), chartName: 'redis' }, at)).toStrictEqual({
      kind: 'Conflict',
      ownerKind: `chart ${CHART.name}`,
    });
  });
});

describe('records remembered (ADR 0069)', () => {
  const deployed = record(3, 'deployed', { a: 'b' });
  const at = (atMs: number) => ({ confirmed: { record: deployed, atMs } });

  it('are the confirmed record for as long as asked, and nothing before or after', () => {
    const forMs = 5_000;
    expect(rememberedRecords(at(1_000), 1_000, forMs)).toEqual([deployed]);
    expect(rememberedRecords(at(1_000), 1_000 + forMs - 1, forMs)).toEqual([deployed]);
    expect(rememberedRecords(at(1_000), 1_000 + forMs, forMs)).toBeUndefined();
    // A clock that went back is no reason to trust what was seen "in the future".
    expect(rememberedRecords(at(1_000), 999, forMs)).toBeUndefined();
    expect(rememberedRecords({}, 1_000, forMs)).toBeUndefined();
    expect(rememberedRecords(undefined, 1_000, forMs)).toBeUndefined();
  });

  it('are remembered for less than the reconcile period, so that every periodic reconcile reads the storage', () => {
    expect(recordsRememberedMs(600_000)).toBe(RECORDS_REMEMBERED_MS);
    // The period is jittered by PERIOD_JITTER either way: the earliest periodic reconcile reads.
    expect(recordsRememberedMs(60_000)).toBe(60_000 * (1 - PERIOD_JITTER));
    expect(recordsRememberedMs(30_000)).toBe(30_000 * (1 - PERIOD_JITTER));
    // No periodic reconcile: the longest.
    expect(recordsRememberedMs(0)).toBe(RECORDS_REMEMBERED_MS);
  });

  it('stillDeployed: the remembered revision is the highest stored, deployed, with the labels it had', () => {
    expect(stillDeployed([record(2, 'superseded'), record(3, 'deployed', { a: 'b' })], deployed)).toBe(true);
    expect(stillDeployed([record(3, 'superseded'), record(4, 'deployed', { a: 'b' })], deployed)).toBe(false);
    expect(stillDeployed([record(3, 'uninstalling', { a: 'b' })], deployed)).toBe(false);
    expect(stillDeployed([], deployed)).toBe(false);
    // Uninstalled and installed again up to the same revision number, by hand or by another kind's CR.
    expect(stillDeployed([record(3, 'deployed', {})], deployed)).toBe(false);
    expect(stillDeployed([record(3, 'deployed', { a: 'c' })], deployed)).toBe(false);
    expect(stillDeployed([record(3, 'deployed', { a: 'b', extra: 'x' })], deployed)).toBe(false);
  });

  it('confirmedOnce reads once however often it is awaited, and throws the records it read when the revision is gone', async () => {
    let reads = 0;
    const fine = confirmedOnce(() => Promise.resolve((reads++, [record(3, 'deployed', { a: 'b' })])), 'web', deployed);
    await Promise.all([fine(), fine(), fine()]);
    expect(reads).toBe(1);
    const upgraded = [record(3, 'superseded'), record(4, 'deployed')];
    const stale = confirmedOnce(() => Promise.resolve(upgraded), 'web', deployed);
    const err: unknown = await stale().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReleaseChangedError);
    expect((err as ReleaseChangedError).records).toEqual(upgraded);
    expect((err as ReleaseChangedError).message).toBe('revision 3 of release web is no longer its latest deployed revision');
  });
});

describe('watchedRecords (ADR 0111)', () => {
  const deployed = record(3, 'deployed');
  const asked: [string, string, number][] = [];
  const storage = {
    watched: (namespace: string, release: string, revision: number) => {
      asked.push([namespace, release, revision]);
      return revision === 3 ? deployed : undefined;
    },
  };

  it('asks the watch about the kept revision, and answers with that record alone', () => {
    expect(watchedRecords(storage, NAMESPACE, NAME, { revision: 3 })).toEqual([deployed]);
    expect(asked).toContainEqual([NAMESPACE, NAME, 3]);
  });

  it('answers nothing when the watch does not show the kept revision latest and deployed', () => {
    expect(watchedRecords(storage, NAMESPACE, NAME, { revision: 2 })).toBeUndefined();
  });

  it('answers nothing with no kept revision, or a port without a watch', () => {
    expect(watchedRecords(storage, NAMESPACE, NAME, undefined)).toBeUndefined();
    expect(watchedRecords({}, NAMESPACE, NAME, { revision: 3 })).toBeUndefined();
  });
});
