import { describe, expect, it } from 'vitest';
import { statusText } from '../../../src/cli/rollout.js';
import type { HelmStatus } from '../../../src/reconciler/status/status.js';

const T0 = '2026-01-01T00:00:00Z';
const release = (chartVersion: string): HelmStatus['deployedRelease'] => ({
  name: 'x',
  namespace: 'ns',
  revision: 1,
  chart: 'app',
  chartVersion,
});
const cr = (name: string, chart: string, fleet: string, rollout?: { reason: string; message: string; failure?: string }) => ({
  namespace: 'ns',
  name,
  status: {
    conditions: [
      { type: 'Ready', status: 'True' as const, reason: 'ResourcesReady', message: '', lastTransitionTime: T0 },
      ...(rollout === undefined
        ? []
        : [{ type: 'Rollout', status: 'False' as const, reason: rollout.reason, message: rollout.message, lastTransitionTime: T0 }]),
    ],
    deployedRelease: release(chart),
    rollout: {
      fleetRevision: fleet,
      ...(rollout?.failure === undefined ? {} : { attempt: { fleetRevision: fleet, at: T0, failure: rollout.failure } }),
    },
  } satisfies HelmStatus,
});

describe('rollout status', () => {
  it('says a rollout halted, which CR failed and why, and how many CRs run each chart', () => {
    const text = statusText(
      { kind: 'App', group: 'example.com' },
      [
        cr('a', '0.2.0', 'f2', { reason: 'RolloutFailed', message: 'failed', failure: 'not Ready within 15s' }),
        cr('b', '0.1.0', 'f1', { reason: 'RolloutHalted', message: 'halted' }),
        cr('c', '0.1.0', 'f1', { reason: 'RolloutHalted', message: 'halted' }),
      ],
      false,
    );
    expect(text.split('\n').slice(0, 6)).toEqual([
      'rollout of App.example.com: halted: 1 CR failed, beyond the failure budget',
      '3 CRs by fleet revision:',
      '  f1  chart 0.1.0: 2',
      '  f2  chart 0.2.0: 1',
      'failed: ns/a: not Ready within 15s',
      'waiting: 2 (first: ns/b: halted)',
    ]);
  });

  it('is complete when no CR has a Rollout condition, and paused when the switch is on', () => {
    const crs = [cr('a', '0.3.0', 'f3'), cr('b', '0.3.0', 'f3')];
    expect(statusText({ kind: 'App', group: 'example.com' }, crs, false)).toMatch(
      /^rollout of App.example.com: complete\n2 CRs by fleet revision:\n {2}f3 {2}chart 0.3.0: 2\n/,
    );
    expect(statusText({ kind: 'App', group: 'example.com' }, crs, true)).toMatch(/: paused\n/);
  });
});
