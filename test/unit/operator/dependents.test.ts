import { describe, expect, it } from 'vitest';
import { dependentEventPriority } from '../../../src/operator/dependents.js';

describe('dependentEventPriority', () => {
  it('queues a deleted release object (drift) with the CRs\' own events, other changes behind them', () => {
    expect(dependentEventPriority('deleted')).toBe('normal');
    expect(dependentEventPriority('added')).toBe('low');
    expect(dependentEventPriority('updated')).toBe('low');
  });
});
