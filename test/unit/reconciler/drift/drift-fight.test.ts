import { describe, expect, it } from 'vitest';
import {
  conflictMessage,
  FIGHT_RESTORES,
  FIGHT_WINDOW_MS,
  fightsFor,
  heldPaths,
  judgeRewrites,
  MAX_FIGHT_FIELDS,
  unrestored,
  type FightKey,
} from '../../../../src/reconciler/drift/drift-fight.js';
import { DriftRepairPolicy } from '../../../../src/reconciler/drift/drift-policy.js';
import type { InventoryEntry } from '../../../../src/reconciler/objects/inventory.js';
import { otherManagerOf } from '../../../../src/reconciler/objects/field-owner.js';
import type { ManagedFieldsEntry } from '../../../../src/reconciler/objects/field-takeover.js';
import type { DriftFights } from '../../../../src/reconciler/status/status.js';

const KEY: FightKey = { revision: 2, generation: 3, rules: 'r1' };
const CFG = { kind: 'MutatingWebhookConfiguration', namespace: '', name: 'vault-agent-injector-cfg' };
const CA = '/webhooks/0/clientConfig/caBundle';
const T0 = new Date('2026-11-27T10:00:00Z');
const at = (ms: number): Date => new Date(T0.getTime() + ms);

/** Restores of `path` by `manager`, one a second from T0; the last judgement. */
function restore(times: number, manager = 'vault-injector', start: DriftFights = fightsFor(undefined, KEY), path = CA) {
  let fights = start;
  let last = judgeRewrites(fights, CFG, [], T0);
  for (let i = 0; i < times; i++) {
    last = judgeRewrites(fights, CFG, [{ path, manager }], at(i * 1000));
    fights = last.fights;
  }
  return last;
}

describe('judgeRewrites', () => {
  it('restores a field the same manager rewrites FIGHT_RESTORES times, then holds it once and declares the fight', () => {
    const before = restore(FIGHT_RESTORES);
    expect(before.hold).toEqual([]);
    expect(before.declared).toEqual([]);
    expect(before.fights.fields).toEqual([
      { kind: CFG.kind, name: CFG.name, path: CA, manager: 'vault-injector', restores: FIGHT_RESTORES, since: T0.toISOString() },
    ]);
    const fight = restore(FIGHT_RESTORES + 1);
    expect(fight.hold).toEqual([CA]);
    expect(fight.declared).toEqual([expect.objectContaining({ path: CA, manager: 'vault-injector', conflict: true })]);
    expect(heldPaths(fight.fights, CFG)).toEqual([CA]);
    expect(heldPaths(fight.fights, { ...CFG, name: 'other' })).toEqual([]);
    // Held from then on, never declared again.
    const again = judgeRewrites(fight.fights, CFG, [{ path: CA, manager: 'vault-injector' }], at(60_000));
    expect(again).toMatchObject({ hold: [CA], declared: [] });
  });

  it('starts over when another manager wrote the field, and counts each field on its own', () => {
    const first = restore(FIGHT_RESTORES);
    const other = judgeRewrites(first.fights, CFG, [{ path: CA, manager: 'kubectl-edit' }], at(5000));
    expect(other.hold).toEqual([]);
    expect(other.fights.fields).toEqual([expect.objectContaining({ manager: 'kubectl-edit', restores: 1 })]);
    const two = judgeRewrites(first.fights, CFG, [{ path: '/webhooks/0/timeoutSeconds', manager: 'vault-injector' }], at(5000));
    expect(two.hold).toEqual([]);
    expect(two.fights.fields.map((f) => [f.path, f.restores])).toEqual([
      [CA, FIGHT_RESTORES],
      ['/webhooks/0/timeoutSeconds', 1],
    ]);
  });

  it('is no fight when the restores are further apart than the window', () => {
    const first = restore(FIGHT_RESTORES);
    const late = judgeRewrites(first.fights, CFG, [{ path: CA, manager: 'vault-injector' }], at(FIGHT_WINDOW_MS + 1));
    expect(late.hold).toEqual([]);
    expect(late.fights.fields).toEqual([expect.objectContaining({ restores: 1, since: at(FIGHT_WINDOW_MS + 1).toISOString() })]);
  });

  it('keeps at most MAX_FIGHT_FIELDS fields, fights first', () => {
    let fights = restore(FIGHT_RESTORES + 1).fights;
    for (let i = 0; i < MAX_FIGHT_FIELDS + 5; i++) fights = judgeRewrites(fights, CFG, [{ path: `/f${i}`, manager: 'm' }], at(i)).fights;
    expect(fights.fields).toHaveLength(MAX_FIGHT_FIELDS);
    expect(fights.fields[0]).toMatchObject({ path: CA, conflict: true });
  });
});

describe('unrestored', () => {
  it('uncounts the restores of a judgement whose write did not happen', () => {
    const before = restore(FIGHT_RESTORES - 1).fights;
    const attempt = judgeRewrites(before, CFG, [{ path: CA, manager: 'vault-injector' }], at(60_000));
    expect(attempt.fights.fields[0]?.restores).toBe(FIGHT_RESTORES);
    expect(unrestored(attempt.fights, before, CFG, [CA])).toEqual(before);
  });

  it('keeps a fight the judgement declared: it rests on restores made earlier', () => {
    const before = restore(FIGHT_RESTORES).fights;
    const fight = judgeRewrites(
      before,
      CFG,
      [
        { path: CA, manager: 'vault-injector' },
        { path: '/metadata/labels', manager: 'kubectl' },
      ],
      at(60_000),
    );
    const after = unrestored(fight.fights, before, CFG, [CA, '/metadata/labels']);
    expect(heldPaths(after, CFG)).toEqual([CA]);
    expect(after.fields).toHaveLength(1);
  });
});

describe('DriftRepairPolicy', () => {
  const entry: InventoryEntry = { apiVersion: 'admissionregistration.k8s.io/v1', kind: CFG.kind, namespace: '', name: CFG.name };
  const ca = ['webhooks', 0, 'clientConfig', 'caBundle'];

  it('declares no fight over attempts whose writes did not go through, however many (a Deployment rolling out)', () => {
    const policy = new DriftRepairPolicy([], undefined, KEY, () => T0);
    for (let i = 0; i < 3 * FIGHT_RESTORES; i++) {
      const j = policy.judge(entry, [{ path: ca, manager: 'kubectl-patch' }]);
      expect(j.hold).toEqual([]);
      j.notRestored();
    }
    expect(policy.declared).toEqual([]);
    expect(policy.fights.fields).toEqual([]);
  });

  it("takes back only its own judgement's counts: another object's restore judged meanwhile stays", () => {
    const policy = new DriftRepairPolicy([], undefined, KEY, () => T0);
    const mine = policy.judge(entry, [{ path: ca, manager: 'kubectl-patch' }]);
    policy.judge({ ...entry, name: 'other' }, [{ path: ca, manager: 'kubectl-patch' }]);
    mine.notRestored();
    expect(policy.fights.fields.map((f) => `${f.name} ${f.restores}`)).toEqual(['other 1']);
  });

  it('declares a fight after FIGHT_RESTORES restores that went through', () => {
    const policy = new DriftRepairPolicy([], undefined, KEY, () => T0);
    for (let i = 0; i < FIGHT_RESTORES; i++) expect(policy.judge(entry, [{ path: ca, manager: 'vault-injector' }]).hold).toEqual([]);
    // The held path comes back as parsed pointer tokens.
    expect(policy.judge(entry, [{ path: ca, manager: 'vault-injector' }])).toMatchObject({ hold: [ca.map(String)], found: 1 });
  });
});

describe('fightsFor', () => {
  it('keeps the records of the same revision, generation and rules; any change starts over', () => {
    const fights = restore(FIGHT_RESTORES).fights;
    expect(fightsFor(fights, KEY)).toBe(fights);
    for (const key of [
      { ...KEY, revision: 3 },
      { ...KEY, generation: 4 },
      { ...KEY, rules: 'r2' },
    ]) {
      expect(fightsFor(fights, key).fields).toEqual([]);
    }
  });

  it('keeps a fight found across revisions and generations (upgrades leave it too), not across other rules', () => {
    const fights = restore(FIGHT_RESTORES + 1).fights;
    for (const key of [
      { ...KEY, revision: 3 },
      { ...KEY, generation: 4 },
    ]) {
      expect(fightsFor(fights, key)).toMatchObject({
        revision: key.revision,
        generation: key.generation,
        fields: [{ path: CA, manager: 'vault-injector', conflict: true }],
      });
    }
    expect(fightsFor(fights, { ...KEY, rules: 'r2' }).fields).toEqual([]);
  });
});

describe('conflictMessage', () => {
  it('names the object, the field, the other manager and the rule that settles it', () => {
    const [f] = restore(FIGHT_RESTORES + 1).declared;
    expect(f && conflictMessage(f)).toBe(
      `MutatingWebhookConfiguration vault-agent-injector-cfg: field ${CA} is written by field manager "vault-injector" again after each repair ` +
        `(restored ${FIGHT_RESTORES} times since ${T0.toISOString()}); it is no longer restored, nor taken by upgrades, until the ignore rules change, and the rest of the release still is. ` +
        `To leave it to "vault-injector" for good, add the rule {paths: [${CA}], target: {kind: MutatingWebhookConfiguration, name: vault-agent-injector-cfg}} to the watch's driftIgnore ` +
        "(or to the CR's helm.sdk.operatorframework.io/drift-ignore annotation where the watch allows it)",
    );
  });
});

describe('otherManagerOf', () => {
  const live = { webhooks: [{ name: 'vault.hashicorp.com', clientConfig: { caBundle: 'Q0E=' }, rules: [{ operations: ['CREATE'] }] }] };
  const keyed = 'k:{"name":"vault.hashicorp.com"}';
  const entries: ManagedFieldsEntry[] = [
    {
      manager: 'helm',
      operation: 'Apply',
      time: '2026-11-27T10:00:00Z',
      fieldsV1: { 'f:webhooks': { [keyed]: { '.': {}, 'f:name': {}, 'f:rules': {} } } },
    },
    {
      manager: 'vault-injector',
      operation: 'Update',
      time: '2026-11-27T10:00:05Z',
      fieldsV1: { 'f:webhooks': { [keyed]: { 'f:clientConfig': { 'f:caBundle': {} } } } },
    },
    { manager: 'status-writer', operation: 'Update', subresource: 'status', fieldsV1: { 'f:webhooks': {} } },
  ];

  it('names the manager of a field inside a keyed list entry, and of an atomic list as a whole', () => {
    expect(otherManagerOf(entries, live, ['webhooks', 0, 'clientConfig', 'caBundle'], { ours: ['helm'] })).toBe('vault-injector');
    expect(otherManagerOf(entries, live, ['webhooks', 0, 'rules', 0, 'operations'], { ours: [] })).toBe('helm');
  });

  it('names nobody for a field only the repair’s own managers hold, or nobody holds', () => {
    expect(otherManagerOf(entries, live, ['webhooks', 0, 'rules'], { ours: ['helm'] })).toBeUndefined();
    expect(otherManagerOf(entries, live, ['metadata', 'labels'], { ours: ['helm'] })).toBeUndefined();
  });
});
