import { describe, expect, it } from 'vitest';
import { leaseRecordFromSpec, leaseSpecFromRecord } from '../../../src/runtime/lease-lock.js';

describe('Lease spec conversion', () => {
  it('writes MicroTime with microsecond precision and reads it back from the string the API returns', () => {
    const ms = Date.parse('2026-11-22T10:53:09.892Z');
    const spec = leaseSpecFromRecord({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: ms,
      renewTime: ms,
      leaseTransitions: 2,
    });
    const json = JSON.parse(JSON.stringify(spec)) as Record<string, unknown>;
    expect(json.renewTime).toBe('2026-11-22T10:53:09.892000Z');
    expect(json.acquireTime).toBe('2026-11-22T10:53:09.892000Z');
    // The generated client hands MicroTime fields back as plain strings.
    expect(leaseRecordFromSpec(json as never)).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: ms,
      renewTime: ms,
      leaseTransitions: 2,
    });
  });

  it('reads a missing or empty spec as a free lease', () => {
    expect(leaseRecordFromSpec(undefined)).toEqual({
      holderIdentity: '',
      leaseDurationSeconds: 0,
      acquireTime: 0,
      renewTime: 0,
      leaseTransitions: 0,
    });
  });
});
