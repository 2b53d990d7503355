import { describe, expect, it } from 'vitest';
import { table } from '../../../bench/approval-idle.js';
import type { OperatorRound, Phase } from '../../../bench/compare/scenarios.js';

const phase = (seconds: number, cpuSeconds: number, apiRequests: number, helmExecutions: number): Phase =>
  ({ seconds, process: { cpuSeconds }, apiRequests, apiRequestsByVerb: {}, helmExecutions }) as unknown as Phase;
const round = (idleCpu: number, idleRequests: number): OperatorRound => ({
  operator: 'ours',
  namespace: 'x',
  rssReadyBytes: 0,
  converge: phase(10, 5, 100, 20),
  idle: phase(30, idleCpu, idleRequests, 0),
  specChangeMs: [100, 300],
  driftMs: [],
  deleteAll: phase(4, 1, 50, 20),
});

describe('the approval-idle table', () => {
  it('gives each setting its mean over rounds and its ratio to the first setting', () => {
    const text = table(
      [
        { approval: 'never', round: round(0.2, 60) },
        { approval: 'risky', round: round(0.3, 66) },
        { approval: 'never', round: round(0.4, 60) },
        { approval: 'risky', round: round(0.3, 54) },
      ],
      ['never', 'risky'],
    );
    const lines = text.split('\n');
    expect(lines[0]).toBe('| | unit | approval: never | approval: risky | risky / never |');
    expect(lines).toContain('| idle CPU | CPU-s | 0.30 | 0.30 | 1.00× |');
    expect(lines).toContain('| idle API requests | req | 60 | 60 | 1.00× |');
    // 0 against 0 is no change, not a division by zero.
    expect(lines).toContain('| idle helm processes | proc | 0 | 0 | 1.00× |');
    expect(lines).toContain('| spec change (median) | ms | 200 | 200 | 1.00× |');
  });
});
