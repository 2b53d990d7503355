import { describe, expect, it } from 'vitest';
import type { ConditionStatus } from '../../../src/reconciler/status/conditions.js';
import { crSample } from '../../../src/reconciler/status/cr-sample.js';
import type { HelmStatus } from '../../../src/reconciler/status/status.js';
import { OperatorMetrics } from '../../../src/telemetry/metrics.js';
import { sample, total } from '../../support/prometheus.js';

const status = (ready: ConditionStatus): HelmStatus => ({
  conditions: [
    { type: 'Ready', status: ready, reason: 'x', message: '', lastTransitionTime: '' },
    { type: 'Deployed', status: 'True', reason: 'x', message: '', lastTransitionTime: '' },
    { type: 'Initialized', status: 'True', reason: 'x', message: '', lastTransitionTime: '' },
  ],
  deployedRelease: { name: 'web', namespace: 'a', revision: 3, chart: 'nginx', chartVersion: '1.2.3' },
  rollout: { fleetRevision: 'abc' },
});

describe('per-CR series (ADR 0080)', () => {
  const cr = { controller: 'nginx-controller', namespace: 'a', name: 'web' };

  it('release info, revision as a value, current conditions, last success; gone when the CR is', async () => {
    const m = new OperatorMetrics({ version: 't', processMetrics: false });
    m.crState(cr.controller, cr.namespace, cr.name, crSample(status('False'), true));
    let text = await m.metrics();
    expect(sample(text, 'helm_operator_cr_info', { ...cr, chart: 'nginx', chart_version: '1.2.3', fleet_revision: 'abc' })).toBe(1);
    expect(sample(text, 'helm_operator_cr_release_revision', cr)).toBe(3);
    expect(sample(text, 'helm_operator_cr_condition', { ...cr, type: 'Ready', status: 'False' })).toBe(1);
    expect(sample(text, 'helm_operator_cr_condition', { ...cr, type: 'Deployed', status: 'True' })).toBe(1);
    // Only the listed types; one series per type.
    expect(sample(text, 'helm_operator_cr_condition', { ...cr, type: 'Initialized' })).toBeUndefined();
    expect(total(text, 'helm_operator_cr_condition', { ...cr, type: 'Ready' })).toBe(1);
    const success = sample(text, 'helm_operator_cr_last_success_timestamp_seconds', cr) ?? 0;
    expect(Math.abs(success - Date.now() / 1000)).toBeLessThan(3600);

    // A failed reconcile keeps the last success; Ready moves to its new status.
    m.crState(cr.controller, cr.namespace, cr.name, crSample(status('True'), false));
    text = await m.metrics();
    expect(sample(text, 'helm_operator_cr_condition', { ...cr, type: 'Ready', status: 'False' })).toBeUndefined();
    expect(sample(text, 'helm_operator_cr_condition', { ...cr, type: 'Ready', status: 'True' })).toBe(1);
    expect(sample(text, 'helm_operator_cr_last_success_timestamp_seconds', cr)).toBe(success);

    m.forget(cr.controller, cr.namespace, cr.name);
    text = await m.metrics();
    for (const name of [
      'helm_operator_cr_info',
      'helm_operator_cr_release_revision',
      'helm_operator_cr_condition',
      'helm_operator_cr_last_success_timestamp_seconds',
    ]) {
      expect(sample(text, name, cr), name).toBeUndefined();
    }
  });

  it('stays within the limit, counting the CRs left out; 0 turns the series off', async () => {
    const m = new OperatorMetrics({ version: 't', processMetrics: false, crLimit: 2 });
    for (const name of ['a', 'b', 'c', 'd']) m.crState('k', 'ns', name, crSample(status('True'), true));
    let text = await m.metrics();
    expect(total(text, 'helm_operator_cr_info')).toBe(2);
    expect(sample(text, 'helm_operator_cr_series_dropped', { controller: 'k' })).toBe(2);
    // A tracked CR deleted makes room for the next one reported.
    m.forget('k', 'ns', 'a');
    m.crState('k', 'ns', 'c', crSample(status('True'), true));
    text = await m.metrics();
    expect(sample(text, 'helm_operator_cr_info', { controller: 'k', namespace: 'ns', name: 'c' })).toBe(1);
    m.forgetController('k');
    expect(total(await m.metrics(), 'helm_operator_cr_info')).toBe(0);

    const off = new OperatorMetrics({ version: 't', processMetrics: false, crLimit: 0 });
    off.crState('k', 'ns', 'a', crSample(status('True'), true));
    expect(await off.metrics()).not.toContain('helm_operator_cr_');
  });
});
