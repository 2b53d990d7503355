import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_LENGTH, type Condition } from '../../../../src/reconciler/status/conditions.js';
import { REDACTED, Redactor } from '../../../../src/reconciler/status/redaction.js';
import type { InventoryEntry } from '../../../../src/reconciler/objects/inventory.js';
import {
  countFailure,
  readStatus,
  StatusDraft,
  statusPatch,
  type DeployedRelease,
  type HelmStatus,
} from '../../../../src/reconciler/status/status.js';

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = new Date('2026-01-01T00:05:00.000Z');
const now = (): Date => T1;

const deployedCond: Condition = { type: 'Deployed', status: 'True', reason: 'InstallSuccessful', message: 'notes', lastTransitionTime: T0 };
const initCond: Condition = { type: 'Initialized', status: 'True', reason: 'Reconciled', message: '', lastTransitionTime: T0 };
const release: DeployedRelease = {
  name: 'web',
  namespace: 'demo',
  revision: 2,
  chart: 'nginx',
  chartVersion: '0.1.0',
  appVersion: '1.27.3',
};
const inventory: InventoryEntry[] = [
  { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'demo', name: 'web' },
  { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', namespace: '', name: 'web' },
];

/** A status as the server holds it after a successful install. */
const onServer = () => ({
  observedGeneration: 2,
  conditions: [initCond, deployedCond],
  deployedRelease: release,
  inventory,
  // Fields the operator does not own pass through untouched.
  somethingElse: { keep: true },
});

describe('readStatus', () => {
  it.each([undefined, null, 'status', 42, true, [], [{ conditions: [] }]])('tolerates a status of %j', (raw) => {
    expect(readStatus(raw)).toStrictEqual({ conditions: [] });
  });

  it('reads the owned fields and drops the rest', () => {
    expect(readStatus(onServer())).toStrictEqual({
      observedGeneration: 2,
      conditions: [initCond, deployedCond],
      deployedRelease: release,
      inventory,
    });
  });

  it('ignores owned fields of the wrong type', () => {
    expect(
      readStatus({ conditions: { type: 'Deployed' }, deployedRelease: 'web', inventory: { kind: 'x' }, observedGeneration: '2' }),
    ).toStrictEqual({ conditions: [] });
    expect(readStatus({ conditions: 'x', deployedRelease: [release], inventory: 'x', observedGeneration: null })).toStrictEqual({
      conditions: [],
    });
    expect(readStatus({ conditions: null, deployedRelease: null, inventory: null })).toStrictEqual({ conditions: [] });
  });

  it('keeps empty lists', () => {
    expect(readStatus({ conditions: [], inventory: [] })).toStrictEqual({ conditions: [], inventory: [] });
  });

  it('keeps observedGeneration 0', () => {
    expect(readStatus({ observedGeneration: 0 })).toStrictEqual({ conditions: [], observedGeneration: 0 });
  });

  it('drops list entries that are not objects, so later lookups cannot crash', () => {
    const status = readStatus({ conditions: [null, 'x', 3, [], deployedCond], inventory: [null, 'x', inventory[0]] });
    expect(status).toStrictEqual({ conditions: [deployedCond], inventory: [inventory[0]] });
  });

  it('a draft over junk conditions can still set and find conditions', () => {
    const draft = new StatusDraft(
      { conditions: [null, 'junk', { type: 'Deployed', status: 'True', reason: 'x', message: '', lastTransitionTime: T0 }] },
      now,
    );
    expect(() => {
      draft.setCondition({ type: 'Initialized', status: 'True', reason: 'Reconciled', message: '' });
    }).not.toThrow();
    expect(draft.current.conditions.map((c) => c.type)).toEqual(['Deployed', 'Initialized']);
  });
});

describe('statusPatch', () => {
  const full: HelmStatus = { conditions: [initCond, deployedCond], deployedRelease: release, inventory, observedGeneration: 2 };

  it('is empty when nothing changed', () => {
    expect(statusPatch(full, structuredClone(full))).toEqual({});
    expect(statusPatch({ conditions: [] }, { conditions: [] })).toEqual({});
  });

  it('is empty when only object key order differs', () => {
    const reordered: HelmStatus = {
      observedGeneration: 2,
      inventory: inventory.map((e) => ({ name: e.name, namespace: e.namespace, kind: e.kind, apiVersion: e.apiVersion })),
      deployedRelease: { appVersion: '1.27.3', chartVersion: '0.1.0', chart: 'nginx', revision: 2, namespace: 'demo', name: 'web' },
      conditions: [
        { lastTransitionTime: T0, message: '', reason: 'Reconciled', status: 'True', type: 'Initialized' },
        { lastTransitionTime: T0, message: 'notes', reason: 'InstallSuccessful', status: 'True', type: 'Deployed' },
      ],
    };
    expect(statusPatch(full, reordered)).toEqual({});
  });

  it('carries only the changed keys, whole', () => {
    const after: HelmStatus = { ...structuredClone(full), deployedRelease: { ...release, revision: 3 } };
    expect(statusPatch(full, after)).toStrictEqual({ deployedRelease: { ...release, revision: 3 } });
  });

  it('sets to null what a changed key dropped, at any depth (a merge patch would keep it)', () => {
    const failed: HelmStatus = {
      conditions: [],
      rollout: { fleetRevision: 'a', attempt: { fleetRevision: 'b', at: T0, failure: 'not Ready' } },
    };
    const after: HelmStatus = { conditions: [], rollout: { fleetRevision: 'b', attempt: { fleetRevision: 'b', at: T0 } } };
    expect(statusPatch(failed, after)).toStrictEqual({
      rollout: { fleetRevision: 'b', attempt: { fleetRevision: 'b', at: T0, failure: null } },
    });
  });

  it('carries the whole conditions list when one condition changes (a merge patch replaces lists)', () => {
    const after: HelmStatus = { ...structuredClone(full), conditions: [initCond, { ...deployedCond, message: 'new notes' }] };
    expect(statusPatch(full, after)).toStrictEqual({ conditions: [initCond, { ...deployedCond, message: 'new notes' }] });
  });

  it('notices a change in list order', () => {
    const after: HelmStatus = { ...structuredClone(full), inventory: [...inventory].reverse() };
    expect(statusPatch(full, after)).toStrictEqual({ inventory: [...inventory].reverse() });
  });

  it('writes null for removed keys', () => {
    expect(statusPatch(full, { conditions: full.conditions })).toStrictEqual({
      deployedRelease: null,
      inventory: null,
      observedGeneration: null,
    });
  });

  it('writes added keys', () => {
    expect(statusPatch({ conditions: [] }, full)).toStrictEqual({
      conditions: full.conditions,
      deployedRelease: release,
      inventory,
      observedGeneration: 2,
    });
  });

  it('tells an empty inventory from none', () => {
    expect(statusPatch({ conditions: [] }, { conditions: [], inventory: [] })).toStrictEqual({ inventory: [] });
    expect(statusPatch({ conditions: [], inventory: [] }, { conditions: [] })).toStrictEqual({ inventory: null });
  });

  it('never touches fields it does not own', () => {
    const before = { ...full, extra: 1 } as HelmStatus;
    const after = { ...full, extra: 2 } as HelmStatus;
    expect(statusPatch(before, after)).toEqual({});
  });
});

describe('StatusDraft', () => {
  it('a fresh draft has nothing to write', () => {
    expect(new StatusDraft(onServer(), now).patch()).toEqual({});
    expect(new StatusDraft(undefined, now).patch()).toEqual({});
  });

  it('current shows the owned status as read', () => {
    expect(new StatusDraft(onServer(), now).current).toStrictEqual(readStatus(onServer()));
  });

  it('setting a condition exactly as it is writes nothing', () => {
    const draft = new StatusDraft(onServer(), now);
    draft.setCondition({ type: 'Deployed', status: 'True', reason: 'InstallSuccessful', message: 'notes' });
    draft.setObservedGeneration(2);
    draft.setRelease(structuredClone(release), structuredClone(inventory));
    expect(draft.patch()).toEqual({});
  });

  it('a condition change patches the conditions with the injected clock', () => {
    const draft = new StatusDraft(onServer(), now);
    draft.setCondition({ type: 'Deployed', status: 'False', reason: 'UpgradeError', message: 'boom' });
    expect(draft.patch()).toStrictEqual({
      conditions: [
        initCond,
        { type: 'Deployed', status: 'False', reason: 'UpgradeError', message: 'boom', lastTransitionTime: T1.toISOString() },
      ],
    });
  });

  it('removing a condition patches the conditions; removing a missing one writes nothing', () => {
    const draft = new StatusDraft(onServer(), now);
    draft.removeCondition('Paused');
    expect(draft.patch()).toEqual({});
    draft.removeCondition('Initialized');
    expect(draft.patch()).toStrictEqual({ conditions: [deployedCond] });
  });

  it('setRelease(undefined, undefined) removes both keys (null in the patch)', () => {
    const draft = new StatusDraft(onServer(), now);
    draft.setRelease(undefined, undefined);
    expect(draft.current.deployedRelease).toBeUndefined();
    expect(draft.current.inventory).toBeUndefined();
    expect(draft.patch()).toStrictEqual({ deployedRelease: null, inventory: null });
  });

  it('setRelease replaces release and inventory', () => {
    const draft = new StatusDraft(undefined, now);
    draft.setRelease(release, inventory);
    expect(draft.patch()).toStrictEqual({ deployedRelease: release, inventory });
  });

  it('setObservedGeneration(undefined) keeps the old value', () => {
    const draft = new StatusDraft(onServer(), now);
    draft.setObservedGeneration(undefined);
    expect(draft.current.observedGeneration).toBe(2);
    expect(draft.patch()).toEqual({});
    draft.setObservedGeneration(3);
    expect(draft.patch()).toStrictEqual({ observedGeneration: 3 });
  });

  describe('markWritten', () => {
    it('makes the next patch empty', () => {
      const draft = new StatusDraft(undefined, now);
      draft.setCondition({ type: 'Initialized', status: 'True', reason: 'Reconciled', message: '' });
      draft.setObservedGeneration(1);
      expect(Object.keys(draft.patch()).sort()).toEqual(['conditions', 'observedGeneration']);
      draft.markWritten();
      expect(draft.patch()).toEqual({});
    });

    it('later patches carry only what changed after it', () => {
      const draft = new StatusDraft(undefined, now);
      draft.setCondition({ type: 'Initialized', status: 'True', reason: 'Reconciled', message: '' });
      draft.setObservedGeneration(1);
      draft.markWritten();
      draft.setRelease(release, inventory);
      expect(draft.patch()).toStrictEqual({ deployedRelease: release, inventory });
      draft.markWritten();
      draft.setRelease(undefined, undefined);
      expect(draft.patch()).toStrictEqual({ deployedRelease: null, inventory: null });
    });

    it('snapshots: mutating the draft afterwards does not leak into what counts as written', () => {
      const draft = new StatusDraft(undefined, now);
      draft.setRelease(release, [...inventory]);
      draft.markWritten();
      // Mutate the live draft's list in place; the written snapshot must not see it.
      (draft.current.inventory as InventoryEntry[]).pop();
      expect(draft.patch()).toStrictEqual({ inventory: [inventory[0]] });
    });

    it('a change undone before writing writes nothing', () => {
      const draft = new StatusDraft(onServer(), now);
      draft.setObservedGeneration(5);
      draft.setObservedGeneration(2);
      expect(draft.patch()).toEqual({});
    });

    it('with nothing changed is harmless', () => {
      const draft = new StatusDraft(onServer(), now);
      draft.markWritten();
      expect(draft.patch()).toEqual({});
    });
  });

  it('never changes the object it was built from', () => {
    const raw = onServer();
    const copy = structuredClone(raw);
    const draft = new StatusDraft(raw, now);
    draft.setCondition({ type: 'Deployed', status: 'False', reason: 'UpgradeError', message: 'boom' });
    draft.removeCondition('Initialized');
    draft.setRelease(undefined, undefined);
    draft.setObservedGeneration(9);
    draft.markWritten();
    expect(raw).toStrictEqual(copy);
  });

  it('uses the real clock by default', () => {
    const before = Date.now();
    const draft = new StatusDraft(undefined);
    draft.setCondition({ type: 'Initialized', status: 'True', reason: 'Reconciled', message: '' });
    const stamped = Date.parse(draft.current.conditions[0]?.lastTransitionTime ?? '');
    expect(stamped).toBeGreaterThanOrEqual(before - 1000);
    expect(stamped).toBeLessThanOrEqual(Date.now() + 1000);
  });
});

describe('StatusDraft failed attempts', () => {
  it('moves failures counted under the plain fingerprint (an operator before ADR 0044) to the keyed one, count kept', () => {
    const draft = new StatusDraft({ failedAttempts: { fingerprint: 'plain', count: 4 } });
    draft.rekeyFailures('other', 'keyed');
    expect(draft.current.failedAttempts).toEqual({ fingerprint: 'plain', count: 4 });
    draft.rekeyFailures('plain', 'keyed');
    expect(draft.current.failedAttempts).toEqual({ fingerprint: 'keyed', count: 4 });
    expect(draft.patch()).toEqual({ failedAttempts: { fingerprint: 'keyed', count: 4 } });
    expect(countFailure(draft.current.failedAttempts, 'keyed').count).toBe(5);
  });

  it('counts failures per desired state and starts again for a new one', () => {
    const draft = new StatusDraft({ failedAttempts: { fingerprint: 'a', count: 2 } });
    const a = countFailure(draft.current.failedAttempts, 'a');
    expect(a.count).toBe(3);
    draft.apply([{ failedAttempts: a }]);
    const b = countFailure(draft.current.failedAttempts, 'b');
    expect(b.count).toBe(1);
    draft.apply([{ failedAttempts: b }]);
    expect(draft.patch()).toEqual({ failedAttempts: { fingerprint: 'b', count: 1 } });
    draft.apply([{ failedAttempts: undefined }]);
    expect(draft.patch()).toEqual({ failedAttempts: null });
  });

  it('ignores a malformed failedAttempts', () => {
    expect(new StatusDraft({ failedAttempts: { fingerprint: 1, count: 'x' } }).current.failedAttempts).toBeUndefined();
  });
});

describe('StatusDraft redaction', () => {
  it('masks a sensitive value in a condition message before cutting the message to length', () => {
    const token = 'k'.repeat(10) + Array.from({ length: 600 }, (_, i) => String(i % 10)).join('');
    const redactor = new Redactor([token]);
    const draft = new StatusDraft(
      undefined,
      () => new Date(0),
      (t) => redactor.text(t),
    );
    // The value straddles the 4096-character cut: cut first, its first part would be left unmasked.
    const message = `${'x'.repeat(MAX_MESSAGE_LENGTH - 300)} Invalid value: "${token}" end`;
    draft.setCondition({ type: 'ReleaseFailed', status: 'True', reason: 'InstallError', message });
    const written = draft.current.conditions[0]?.message ?? '';
    expect(written).toContain(`Invalid value: "${REDACTED}" end`);
    expect(written).not.toContain('kkkkkkkkkk');
  });
});
