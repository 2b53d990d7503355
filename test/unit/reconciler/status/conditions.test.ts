import { describe, expect, it } from 'vitest';
import {
  ConditionType,
  findCondition,
  isTrue,
  MAX_MESSAGE_LENGTH,
  Reason,
  removeCondition,
  setCondition,
  truncateMessage,
  type Condition,
} from '../../../../src/reconciler/status/conditions.js';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const T1 = new Date('2026-01-01T00:05:00.000Z');

const deployed = (
  status: Condition['status'],
  reason: string = Reason.InstallSuccessful,
  message = '',
): Omit<Condition, 'lastTransitionTime'> => ({
  type: ConditionType.Deployed,
  status,
  reason,
  message,
});

describe('setCondition', () => {
  it('appends a new condition stamped with now', () => {
    const list = setCondition([], deployed('True'), T0);
    expect(list).toEqual([
      { type: 'Deployed', status: 'True', reason: 'InstallSuccessful', message: '', lastTransitionTime: T0.toISOString() },
    ]);
  });

  it('appends after the existing conditions, keeping their order', () => {
    let list = setCondition([], { type: 'Initialized', status: 'True', reason: 'Reconciled', message: '' }, T0);
    list = setCondition(list, deployed('True'), T0);
    list = setCondition(list, { type: 'ReleaseFailed', status: 'False', reason: 'InstallSuccessful', message: '' }, T0);
    expect(list.map((c) => c.type)).toEqual(['Initialized', 'Deployed', 'ReleaseFailed']);
  });

  it('keeps lastTransitionTime when the status stays the same', () => {
    const first = setCondition([], deployed('True'), T0);
    const second = setCondition(first, deployed('True'), T1);
    expect(second[0]?.lastTransitionTime).toBe(T0.toISOString());
    expect(second).toEqual(first);
  });

  it('keeps lastTransitionTime when only reason or message change, but takes them', () => {
    const first = setCondition([], deployed('True', Reason.InstallSuccessful, 'notes v1'), T0);
    const second = setCondition(first, deployed('True', Reason.UpgradeSuccessful, 'notes v2'), T1);
    expect(second[0]).toEqual({
      type: 'Deployed',
      status: 'True',
      reason: 'UpgradeSuccessful',
      message: 'notes v2',
      lastTransitionTime: T0.toISOString(),
    });
  });

  it.each<[Condition['status'], Condition['status']]>([
    ['True', 'False'],
    ['False', 'True'],
    ['Unknown', 'True'],
    ['True', 'Unknown'],
  ])('moves lastTransitionTime when the status flips %s → %s', (from, to) => {
    const first = setCondition([], deployed(from), T0);
    const second = setCondition(first, deployed(to), T1);
    expect(second[0]?.status).toBe(to);
    expect(second[0]?.lastTransitionTime).toBe(T1.toISOString());
  });

  it('replaces the condition in place and leaves the others alone', () => {
    const others: Condition[] = [
      { type: 'Initialized', status: 'True', reason: 'Reconciled', message: '', lastTransitionTime: 'a' },
      { type: 'Deployed', status: 'False', reason: 'InstallError', message: 'boom', lastTransitionTime: 'b' },
      { type: 'ReleaseFailed', status: 'True', reason: 'InstallError', message: 'boom', lastTransitionTime: 'c' },
    ];
    const list = setCondition(others, deployed('True'), T1);
    expect(list.map((c) => c.type)).toEqual(['Initialized', 'Deployed', 'ReleaseFailed']);
    expect(list[0]).toBe(others[0]);
    expect(list[2]).toBe(others[2]);
    expect(list[1]).toEqual({
      type: 'Deployed',
      status: 'True',
      reason: 'InstallSuccessful',
      message: '',
      lastTransitionTime: T1.toISOString(),
    });
  });

  it('does not mutate the list it was given', () => {
    const list = Object.freeze([Object.freeze({ ...deployed('False'), lastTransitionTime: 'old' })]);
    const next = setCondition(list, deployed('True'), T1);
    expect(next).not.toBe(list);
    expect(list[0]?.status).toBe('False');
    expect(list[0]?.lastTransitionTime).toBe('old');
    expect(setCondition(list, { type: 'Paused', status: 'True', reason: 'x', message: '' }, T1)).toHaveLength(2);
    expect(list).toHaveLength(1);
  });

  it('keeps observedGeneration when given', () => {
    const list = setCondition([], { ...deployed('True'), observedGeneration: 7 }, T0);
    expect(list[0]?.observedGeneration).toBe(7);
  });

  it('truncates a long message', () => {
    const long = 'x'.repeat(MAX_MESSAGE_LENGTH + 100);
    const list = setCondition([], deployed('False', Reason.InstallError, long), T0);
    const message = list[0]?.message ?? '';
    expect(message.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
    expect(message.endsWith('…(truncated)')).toBe(true);
  });

  it('a long message repeated is unchanged: no status churn', () => {
    const long = 'y'.repeat(10_000);
    const first = setCondition([], deployed('False', Reason.InstallError, long), T0);
    expect(setCondition(first, deployed('False', Reason.InstallError, long), T1)).toEqual(first);
  });
});

describe('truncateMessage', () => {
  it('leaves a message up to the limit alone', () => {
    expect(truncateMessage('')).toBe('');
    expect(truncateMessage('short')).toBe('short');
    const exact = 'a'.repeat(MAX_MESSAGE_LENGTH);
    expect(truncateMessage(exact)).toBe(exact);
  });

  it('cuts a message over the limit to at most the limit, keeping its start', () => {
    const over = `${'a'.repeat(MAX_MESSAGE_LENGTH)}b`;
    const cut = truncateMessage(over);
    expect(cut.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
    expect(cut.length).toBeGreaterThan(MAX_MESSAGE_LENGTH - 20);
    expect(cut.startsWith('a'.repeat(MAX_MESSAGE_LENGTH - 20))).toBe(true);
    expect(cut).toMatch(/ …\(truncated\)$/);
    expect(cut).not.toContain('b');
  });

  it('is idempotent', () => {
    const cut = truncateMessage('z'.repeat(50_000));
    expect(truncateMessage(cut)).toBe(cut);
  });
});

describe('removeCondition / findCondition / isTrue', () => {
  const list: Condition[] = [
    { type: 'Initialized', status: 'True', reason: 'Reconciled', message: '', lastTransitionTime: 'a' },
    { type: 'Deployed', status: 'False', reason: 'InstallError', message: 'boom', lastTransitionTime: 'b' },
    { type: 'Paused', status: 'Unknown', reason: 'x', message: '', lastTransitionTime: 'c' },
  ];

  it('removeCondition drops only that type and returns a new list', () => {
    const next = removeCondition(list, 'Deployed');
    expect(next.map((c) => c.type)).toEqual(['Initialized', 'Paused']);
    expect(list).toHaveLength(3);
  });

  it('removeCondition of a missing type is a no-op', () => {
    expect(removeCondition(list, 'Nope')).toEqual(list);
  });

  it('findCondition', () => {
    expect(findCondition(list, 'Deployed')?.message).toBe('boom');
    expect(findCondition(list, 'Nope')).toBeUndefined();
    expect(findCondition(undefined, 'Deployed')).toBeUndefined();
  });

  it('isTrue only for status True', () => {
    expect(isTrue(list, 'Initialized')).toBe(true);
    expect(isTrue(list, 'Deployed')).toBe(false);
    expect(isTrue(list, 'Paused')).toBe(false);
    expect(isTrue(list, 'Nope')).toBe(false);
    expect(isTrue(undefined, 'Initialized')).toBe(false);
  });
});
