import { describe, expect, it } from 'vitest';
import {
  admit,
  MAX_FAILED_ATTEMPTS,
  nextAction,
  retriesSpent,
  type Admission,
  type Observed,
} from '../../../../src/reconciler/decide/next-action.js';
import type { ObservedState, ReleaseRecord } from '../../../../src/reconciler/decide/state.js';

const FP = 'f'.repeat(40);
const rec = (revision: number, status: ReleaseRecord['status']): ReleaseRecord => ({ revision, status, labels: {} });
const observed = (state: ObservedState, failedAttempts?: Observed['failedAttempts']): Observed => ({
  state,
  fingerprint: FP,
  failedAttempts,
});
const spent = { fingerprint: FP, count: MAX_FAILED_ATTEMPTS };

describe('admit', () => {
  const base: Admission = { helmRunning: false, deleting: false, finalizer: true, paused: false };

  it('reconciles a live CR that is not paused', () => {
    expect(admit(base)).toBe('reconcile');
  });

  it('waits for a live helm before anything else, a deletion or a pause included', () => {
    expect(admit({ ...base, helmRunning: true })).toBe('wait-for-helm');
    expect(admit({ ...base, helmRunning: true, deleting: true, paused: true })).toBe('wait-for-helm');
  });

  it('finalizes a deleted CR that holds our finalizer, and lets go of one that does not', () => {
    expect(admit({ ...base, deleting: true })).toBe('finalize');
    expect(admit({ ...base, deleting: true, finalizer: false })).toBe('let-go');
  });

  it('uninstalls a deleted CR even when it is paused: the pause holds changes, not deletion', () => {
    expect(admit({ ...base, deleting: true, paused: true })).toBe('finalize');
  });

  it('pauses a live paused CR', () => {
    expect(admit({ ...base, paused: true })).toBe('pause');
    expect(admit({ ...base, paused: true, finalizer: false })).toBe('pause');
  });
});

describe('nextAction', () => {
  it('installs an absent release', () => {
    expect(nextAction(observed({ kind: 'Absent' }))).toStrictEqual({ kind: 'install', leftovers: false });
  });

  it("installs after removing a failed install's leftovers", () => {
    expect(nextAction(observed({ kind: 'FailedInstall', latest: rec(1, 'failed') }))).toStrictEqual({ kind: 'install', leftovers: true });
  });

  it('upgrades from the deployed revision, else from the latest', () => {
    const deployed = rec(2, 'deployed');
    expect(nextAction(observed({ kind: 'OutOfSync', latest: rec(3, 'failed'), deployed }))).toStrictEqual({
      kind: 'upgrade',
      from: deployed,
    });
    const latest = rec(3, 'superseded');
    expect(nextAction(observed({ kind: 'OutOfSync', latest }))).toStrictEqual({ kind: 'upgrade', from: latest });
  });

  it('corrects drift of a release in sync', () => {
    const deployed = rec(4, 'deployed');
    expect(nextAction(observed({ kind: 'InSync', deployed }))).toStrictEqual({ kind: 'correct-drift', deployed });
  });

  it('unlocks a locked release, to its last good revision when there is one', () => {
    const latest = rec(3, 'pending-upgrade');
    const lastGood = rec(2, 'deployed');
    expect(nextAction(observed({ kind: 'Locked', latest, lastGood }))).toStrictEqual({ kind: 'unlock', latest, lastGood });
    expect(nextAction(observed({ kind: 'Locked', latest: rec(1, 'pending-install') }))).toStrictEqual({
      kind: 'unlock',
      latest: rec(1, 'pending-install'),
    });
  });

  it('reports a conflict with another owner', () => {
    expect(nextAction(observed({ kind: 'Conflict', ownerKind: 'Redis.example.com' }))).toStrictEqual({
      kind: 'report-conflict',
      ownerKind: 'Redis.example.com',
    });
  });

  it('reports a release of our chart that this operator did not make, whatever the retries', () => {
    expect(nextAction(observed({ kind: 'NotOwned', chart: 'nginx-1.2.3' }))).toStrictEqual({
      kind: 'report-not-owned',
      chart: 'nginx-1.2.3',
    });
    expect(nextAction(observed({ kind: 'NotOwned', chart: 'nginx-1.2.3' }, spent)).kind).toBe('report-not-owned');
  });

  it('upgrades an adopted release like any other out of sync', () => {
    const latest = rec(1, 'deployed');
    expect(nextAction(observed({ kind: 'OutOfSync', latest, adopted: 'watch' }))).toStrictEqual({ kind: 'upgrade', from: latest });
  });

  it('stalls an install or upgrade whose desired state spent its retries', () => {
    expect(nextAction(observed({ kind: 'Absent' }, spent))).toStrictEqual({ kind: 'stall', count: MAX_FAILED_ATTEMPTS });
    expect(nextAction(observed({ kind: 'FailedInstall', latest: rec(1, 'failed') }, { fingerprint: FP, count: 7 }))).toStrictEqual({
      kind: 'stall',
      count: 7,
    });
    expect(nextAction(observed({ kind: 'OutOfSync', latest: rec(2, 'failed'), deployed: rec(1, 'deployed') }, spent))).toStrictEqual({
      kind: 'stall',
      count: MAX_FAILED_ATTEMPTS,
    });
  });

  it('never stalls what is not an install or upgrade: unlocking, drift correction, a conflict', () => {
    expect(nextAction(observed({ kind: 'InSync', deployed: rec(1, 'deployed') }, spent)).kind).toBe('correct-drift');
    expect(nextAction(observed({ kind: 'Locked', latest: rec(2, 'pending-upgrade') }, spent)).kind).toBe('unlock');
    expect(nextAction(observed({ kind: 'Conflict', ownerKind: 'X' }, spent)).kind).toBe('report-conflict');
  });

  it('tries again once the spec or chart changed, or while attempts are left', () => {
    expect(nextAction(observed({ kind: 'Absent' }, { fingerprint: '0'.repeat(40), count: 9 })).kind).toBe('install');
    expect(nextAction(observed({ kind: 'Absent' }, { fingerprint: FP, count: MAX_FAILED_ATTEMPTS - 1 })).kind).toBe('install');
  });
});

describe('retriesSpent', () => {
  it('counts only failures of this very desired state', () => {
    expect(retriesSpent({ fingerprint: FP, failedAttempts: undefined })).toBeUndefined();
    expect(retriesSpent({ fingerprint: FP, failedAttempts: { fingerprint: FP, count: MAX_FAILED_ATTEMPTS } })).toBe(MAX_FAILED_ATTEMPTS);
    expect(retriesSpent({ fingerprint: FP, failedAttempts: { fingerprint: 'x', count: 50 } })).toBeUndefined();
  });
});
