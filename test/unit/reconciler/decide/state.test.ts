import { describe, expect, it } from 'vitest';
import {
  determineReleaseState,
  RELEASE_LABELS,
  type ExpectedLabels,
  type ReleaseRecord,
  type ReleaseState,
  type ReleaseStatus,
} from '../../../../src/reconciler/decide/state.js';

const OURS = 'Nginx.example.com';
const WANT = 'f'.repeat(40);
const OLD = '0'.repeat(40);
const desired: ExpectedLabels = { fingerprint: WANT, ownerKind: OURS };

/** A revision written by this operator for `ownerKind` with fingerprint `fp` (omit with null). */
function rec(revision: number, status: ReleaseStatus, fp: string | null = WANT, ownerKind: string | null = OURS): ReleaseRecord {
  const labels: Record<string, string> = { name: 'web', owner: 'helm', status, version: String(revision) };
  if (fp !== null) labels[RELEASE_LABELS.fingerprint] = fp;
  if (ownerKind !== null) labels[RELEASE_LABELS.ownerKind] = ownerKind;
  return { revision, status, labels };
}

/** Every ordering of `items` (the inputs here have at most 4 records). */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

/** The state must not depend on the order helm's storage lists the Secrets in. */
function expectState(records: readonly ReleaseRecord[], expected: ReleaseState, want: ExpectedLabels = desired): void {
  for (const order of permutations(records)) {
    expect(determineReleaseState(order, want)).toStrictEqual(expected);
  }
}

describe('determineReleaseState', () => {
  describe('Absent', () => {
    it('when there are no records', () => {
      expect(determineReleaseState([], desired)).toStrictEqual({ kind: 'Absent' });
    });

    it('when the latest revision is uninstalled (helm uninstall --keep-history)', () => {
      expectState([rec(1, 'superseded'), rec(2, 'deployed'), rec(3, 'uninstalled')], { kind: 'Absent' });
    });

    it('when the latest revision is uninstalled even without our labels', () => {
      expectState([rec(1, 'uninstalled', null, null)], { kind: 'Absent' });
    });

    it('is not chosen when an uninstalled revision is older than a live one', () => {
      const latest = rec(2, 'deployed');
      expectState([rec(1, 'uninstalled'), latest], { kind: 'InSync', deployed: latest });
    });
  });

  describe('Unmanaged', () => {
    it('when the latest revision has no owner label (installed by hand or by operator-sdk)', () => {
      const latest = rec(1, 'deployed', null, null);
      expectState([latest], { kind: 'Unmanaged', latest });
    });

    it('looks only at the latest revision: an owned older revision does not make it managed', () => {
      const latest = rec(3, 'deployed', null, null);
      expectState([rec(1, 'superseded'), rec(2, 'superseded'), latest], { kind: 'Unmanaged', latest });
    });

    it('comes before Locked: a pending revision without an owner label is Unmanaged', () => {
      const latest = rec(2, 'pending-upgrade', null, null);
      expectState([rec(1, 'deployed', null, null), latest], { kind: 'Unmanaged', latest });
    });

    it('a fingerprint alone does not make a release ours', () => {
      const latest = rec(1, 'deployed', WANT, null);
      expectState([latest], { kind: 'Unmanaged', latest });
    });
  });

  describe('Conflict', () => {
    it('when another kind owns the release', () => {
      expectState([rec(1, 'deployed', WANT, 'Other.example.com')], { kind: 'Conflict', ownerKind: 'Other.example.com' });
    });

    it('even when the fingerprint happens to match', () => {
      expectState([rec(1, 'superseded', WANT, 'Other.example.com'), rec(2, 'deployed', WANT, 'Other.example.com')], {
        kind: 'Conflict',
        ownerKind: 'Other.example.com',
      });
    });

    it('the owner of the latest revision decides', () => {
      expectState([rec(1, 'superseded'), rec(2, 'deployed', WANT, 'Other.example.com')], {
        kind: 'Conflict',
        ownerKind: 'Other.example.com',
      });
    });

    it('comes before Locked and FailedInstall', () => {
      expectState([rec(1, 'pending-install', WANT, 'Other')], { kind: 'Conflict', ownerKind: 'Other' });
      expectState([rec(1, 'failed', WANT, 'Other')], { kind: 'Conflict', ownerKind: 'Other' });
    });

    it('compares owner kinds exactly (case matters)', () => {
      expectState([rec(1, 'deployed', WANT, OURS.toLowerCase())], { kind: 'Conflict', ownerKind: OURS.toLowerCase() });
    });

    it('an empty owner label is still someone else', () => {
      expectState([rec(1, 'deployed', WANT, '')], { kind: 'Conflict', ownerKind: '' });
    });
  });

  describe('Locked', () => {
    it('pending-install with no good revision: no lastGood at all', () => {
      const latest = rec(1, 'pending-install');
      const state = determineReleaseState([latest], desired);
      expect(state).toStrictEqual({ kind: 'Locked', latest });
      expect(Object.keys(state)).not.toContain('lastGood');
    });

    it('pending-install after failed attempts: still no lastGood', () => {
      const latest = rec(3, 'pending-install');
      expectState([rec(1, 'failed'), rec(2, 'failed'), latest], { kind: 'Locked', latest });
    });

    it('pending-upgrade: lastGood is the deployed revision', () => {
      const deployed = rec(2, 'deployed', OLD);
      const latest = rec(3, 'pending-upgrade');
      expectState([rec(1, 'superseded', OLD), deployed, latest], { kind: 'Locked', latest, lastGood: deployed });
    });

    it('pending-upgrade: lastGood is the newest good revision, superseded or deployed', () => {
      // A failed upgrade leaves no deployed revision; 2 is the newest that ever worked.
      const good = rec(2, 'superseded', OLD);
      const latest = rec(4, 'pending-upgrade');
      expectState([rec(1, 'superseded', OLD), good, rec(3, 'failed'), latest], { kind: 'Locked', latest, lastGood: good });
    });

    it('pending-upgrade: a newer superseded revision wins over an older deployed one', () => {
      const good = rec(3, 'superseded', OLD);
      const latest = rec(4, 'pending-upgrade');
      expectState([rec(1, 'failed'), rec(2, 'deployed', OLD), good, latest], { kind: 'Locked', latest, lastGood: good });
    });

    it('pending-rollback: lastGood is the newest deployed or superseded revision', () => {
      const good = rec(2, 'superseded', OLD);
      const latest = rec(4, 'pending-rollback', OLD);
      expectState([rec(1, 'superseded', OLD), good, rec(3, 'failed'), latest], { kind: 'Locked', latest, lastGood: good });
    });

    it('pending-rollback with a deployed revision', () => {
      const good = rec(2, 'deployed', OLD);
      const latest = rec(3, 'pending-rollback', OLD);
      expectState([rec(1, 'superseded', OLD), good, latest], { kind: 'Locked', latest, lastGood: good });
    });

    it('pending-upgrade with no good revision at all', () => {
      const latest = rec(2, 'pending-upgrade');
      expectState([rec(1, 'failed'), latest], { kind: 'Locked', latest });
    });

    it('uninstalling', () => {
      const good = rec(1, 'superseded');
      const latest = rec(2, 'uninstalling');
      expectState([good, latest], { kind: 'Locked', latest, lastGood: good });
      expectState([rec(1, 'uninstalling')], { kind: 'Locked', latest: rec(1, 'uninstalling') });
    });

    it('unknown', () => {
      const good = rec(1, 'deployed');
      const latest = rec(2, 'unknown');
      expectState([good, latest], { kind: 'Locked', latest, lastGood: good });
      expectState([rec(1, 'unknown')], { kind: 'Locked', latest: rec(1, 'unknown') });
    });

    it('even when the pending revision carries the desired fingerprint', () => {
      const good = rec(1, 'deployed', WANT);
      const latest = rec(2, 'pending-upgrade', WANT);
      expectState([good, latest], { kind: 'Locked', latest, lastGood: good });
    });
  });

  describe('FailedInstall', () => {
    it('when the only revision failed', () => {
      const latest = rec(1, 'failed');
      expectState([latest], { kind: 'FailedInstall', latest });
    });

    it('when every revision failed: latest is the newest', () => {
      const latest = rec(3, 'failed', OLD);
      expectState([rec(1, 'failed'), rec(2, 'failed'), latest], { kind: 'FailedInstall', latest });
    });

    it('regardless of the fingerprint', () => {
      const latest = rec(1, 'failed', WANT);
      expectState([latest], { kind: 'FailedInstall', latest });
    });

    it('a failed revision without a fingerprint label', () => {
      const latest = rec(1, 'failed', null);
      expectState([latest], { kind: 'FailedInstall', latest });
    });
  });

  describe('OutOfSync', () => {
    it('deployed with another fingerprint: latest and deployed are the same revision', () => {
      const deployed = rec(2, 'deployed', OLD);
      expectState([rec(1, 'superseded', OLD), deployed], { kind: 'OutOfSync', latest: deployed, deployed });
    });

    it('deployed without a fingerprint label', () => {
      const deployed = rec(1, 'deployed', null);
      expectState([deployed], { kind: 'OutOfSync', latest: deployed, deployed });
    });

    it('a fingerprint is compared exactly', () => {
      const deployed = rec(1, 'deployed', WANT.toUpperCase());
      expectState([deployed], { kind: 'OutOfSync', latest: deployed, deployed });
    });

    it('latest failed with an older deployed revision: deployed is that revision', () => {
      const deployed = rec(2, 'deployed', OLD);
      const latest = rec(3, 'failed', WANT);
      expectState([rec(1, 'superseded', OLD), deployed, latest], { kind: 'OutOfSync', latest, deployed });
    });

    it('latest failed even though it carries the desired fingerprint: upgrade again', () => {
      const deployed = rec(1, 'deployed', WANT);
      const latest = rec(2, 'failed', WANT);
      expectState([deployed, latest], { kind: 'OutOfSync', latest, deployed });
    });

    it('latest failed with only superseded revisions behind it: no deployed', () => {
      const latest = rec(3, 'failed');
      const state = determineReleaseState([rec(1, 'superseded'), rec(2, 'superseded'), latest], desired);
      expect(state).toStrictEqual({ kind: 'OutOfSync', latest });
      expect(Object.keys(state)).not.toContain('deployed');
      expectState([rec(1, 'superseded'), rec(2, 'superseded'), latest], { kind: 'OutOfSync', latest });
    });

    it('deployed is the deployed revision, not a newer superseded one', () => {
      const deployed = rec(1, 'deployed', OLD);
      const latest = rec(3, 'failed');
      expectState([deployed, rec(2, 'superseded', OLD), latest], { kind: 'OutOfSync', latest, deployed });
    });

    it('deployed is the newest of several deployed revisions', () => {
      const deployed = rec(2, 'deployed', OLD);
      const latest = rec(3, 'failed');
      expectState([rec(1, 'deployed', OLD), deployed, latest], { kind: 'OutOfSync', latest, deployed });
    });

    it('a latest revision that is superseded rather than deployed is out of sync', () => {
      const deployed = rec(1, 'deployed', WANT);
      const latest = rec(2, 'superseded', WANT);
      expectState([deployed, latest], { kind: 'OutOfSync', latest, deployed });
    });
  });

  describe('InSync', () => {
    it('the latest revision is deployed with the desired fingerprint', () => {
      const deployed = rec(3, 'deployed', WANT);
      expectState([rec(1, 'superseded', OLD), rec(2, 'superseded', OLD), deployed], { kind: 'InSync', deployed });
    });

    it('older failures do not matter once a later revision is deployed in sync', () => {
      const deployed = rec(3, 'deployed', WANT);
      expectState([rec(1, 'superseded', OLD), rec(2, 'failed', WANT), deployed], { kind: 'InSync', deployed });
    });

    it('the same release is out of sync for another desired fingerprint', () => {
      const deployed = rec(1, 'deployed', WANT);
      expect(determineReleaseState([deployed], { fingerprint: OLD, ownerKind: OURS })).toStrictEqual({
        kind: 'OutOfSync',
        latest: deployed,
        deployed,
      });
    });

    it('ignores other labels', () => {
      const deployed: ReleaseRecord = { revision: 1, status: 'deployed', labels: { ...rec(1, 'deployed').labels, extra: 'x' } };
      expectState([deployed], { kind: 'InSync', deployed });
    });
  });

  describe('revision order', () => {
    it('sorts numerically, not as text (revision 10 is newer than 9)', () => {
      const records = [rec(9, 'superseded', OLD), rec(10, 'deployed', WANT), rec(2, 'superseded', OLD)];
      expectState(records, { kind: 'InSync', deployed: records[1]! });
    });

    it('does not reorder or change the input array', () => {
      const records = [rec(2, 'deployed'), rec(1, 'superseded'), rec(3, 'failed')];
      const copy = structuredClone(records);
      determineReleaseState(records, desired);
      expect(records).toStrictEqual(copy);
    });

    it('returns the very record objects it was given', () => {
      const deployed = rec(1, 'deployed', OLD);
      const latest = rec(2, 'failed');
      const state = determineReleaseState([latest, deployed], desired);
      expect(state.kind).toBe('OutOfSync');
      if (state.kind !== 'OutOfSync') return;
      expect(state.latest).toBe(latest);
      expect(state.deployed).toBe(deployed);
    });
  });
});

describe('a deployed latest revision decides alone (the reconciler reads only it when it can)', () => {
  const older: ReleaseStatus[] = ['superseded', 'failed', 'deployed', 'pending-upgrade', 'uninstalled'];
  const cases: [string, string | null, string | null][] = [
    ['ours, in sync', WANT, OURS],
    ['ours, out of sync', OLD, OURS],
    ["another kind's", WANT, 'Other.example.com'],
    ['unlabelled', null, null],
  ];
  it.each(cases)('%s: the whole history decides the same', (_, fp, owner) => {
    const latest = rec(4, 'deployed', fp, owner);
    for (const a of older) {
      for (const b of older) {
        const history = [rec(1, a, OLD), rec(2, b, WANT), rec(3, 'superseded', OLD), latest];
        expect(determineReleaseState([latest], desired)).toStrictEqual(determineReleaseState(history, desired));
      }
    }
  });
});
