import { describe, expect, it } from 'vitest';
import { ANNOTATIONS, parseReleaseAnnotations } from '../../../../src/reconciler/decide/annotations.js';

const DEFAULTS = { upgradeForce: false, rollbackForce: true, uninstallWait: false, paused: false, driftRepair: true, problems: [] };

// strconv.ParseBool, which operator-sdk uses for these annotations, accepts exactly these.
const TRUE_SPELLINGS = ['1', 't', 'T', 'TRUE', 'true', 'True'];
const FALSE_SPELLINGS = ['0', 'f', 'F', 'FALSE', 'false', 'False'];
const NOT_BOOLEANS = ['yes', 'no', 'on', 'off', 'y', 'n', 'TrUe', 'fAlse', ' true', 'true ', '', '2', '-1', 'enabled'];

const BOOLEANS = [
  ['upgradeForce', ANNOTATIONS.upgradeForce, false],
  ['rollbackForce', ANNOTATIONS.rollbackForce, true],
  ['uninstallWait', ANNOTATIONS.uninstallWait, false],
  ['paused', ANNOTATIONS.paused, false],
  ['driftRepair', ANNOTATIONS.driftRepair, true],
] as const;

describe('parseReleaseAnnotations', () => {
  it('uses operator-sdk annotation names, and the same prefix for ours', () => {
    expect(ANNOTATIONS).toMatchObject({
      upgradeForce: 'helm.sdk.operatorframework.io/upgrade-force',
      rollbackForce: 'helm.sdk.operatorframework.io/rollback-force',
      uninstallWait: 'helm.sdk.operatorframework.io/uninstall-wait',
      reconcilePeriod: 'helm.sdk.operatorframework.io/reconcile-period',
      paused: 'helm.sdk.operatorframework.io/paused',
      driftRepair: 'helm.sdk.operatorframework.io/drift-repair',
    });
  });

  it('defaults without annotations: rollback-force and drift-repair on, everything else off, no period', () => {
    const parsed = parseReleaseAnnotations(undefined);
    expect(parsed).toStrictEqual(DEFAULTS);
    expect(Object.keys(parsed)).not.toContain('reconcilePeriodMs');
    expect(parseReleaseAnnotations({})).toStrictEqual(DEFAULTS);
  });

  it('ignores unrelated annotations, including look-alikes with another prefix', () => {
    expect(
      parseReleaseAnnotations({
        'kubectl.kubernetes.io/last-applied-configuration': '{}',
        'example.com/upgrade-force': 'maybe',
        'helm.sdk.operatorframework.io/unknown': 'x',
        'upgrade-force': 'true',
      }),
    ).toStrictEqual(DEFAULTS);
  });

  describe.each(BOOLEANS)('%s (%s)', (field, key, fallback) => {
    it.each(TRUE_SPELLINGS)('%j is true', (raw) => {
      const parsed = parseReleaseAnnotations({ [key]: raw });
      expect(parsed[field]).toBe(true);
      expect(parsed.problems).toEqual([]);
    });

    it.each(FALSE_SPELLINGS)('%j is false', (raw) => {
      const parsed = parseReleaseAnnotations({ [key]: raw });
      expect(parsed[field]).toBe(false);
      expect(parsed.problems).toEqual([]);
    });

    it.each(NOT_BOOLEANS)(`%j is reported and defaults to ${fallback}`, (raw) => {
      const parsed = parseReleaseAnnotations({ [key]: raw });
      expect(parsed[field]).toBe(fallback);
      expect(parsed.problems).toEqual([`annotation ${key}: "${raw}" is not a boolean; using ${fallback}`]);
    });

    it('changes only its own field', () => {
      const parsed = parseReleaseAnnotations({ [key]: fallback ? 'false' : 'true' });
      expect(parsed).toStrictEqual({ ...DEFAULTS, [field]: !fallback });
    });
  });

  it('rollback-force "false" turns the forced rollback off', () => {
    expect(parseReleaseAnnotations({ [ANNOTATIONS.rollbackForce]: 'false' }).rollbackForce).toBe(false);
  });

  it('reports every bad annotation, and parses the good ones', () => {
    const parsed = parseReleaseAnnotations({
      [ANNOTATIONS.upgradeForce]: 'yes',
      [ANNOTATIONS.rollbackForce]: 'nope',
      [ANNOTATIONS.uninstallWait]: 'true',
      [ANNOTATIONS.paused]: 'paused',
      [ANNOTATIONS.reconcilePeriod]: 'soon',
    });
    expect(parsed).toMatchObject({ upgradeForce: false, rollbackForce: true, uninstallWait: true, paused: false });
    expect(parsed.problems).toHaveLength(4);
    expect(parsed.problems.join('\n')).toContain(ANNOTATIONS.upgradeForce);
    expect(parsed.problems.join('\n')).toContain(ANNOTATIONS.rollbackForce);
    expect(parsed.problems.join('\n')).toContain(ANNOTATIONS.paused);
    expect(parsed.problems.join('\n')).toContain(ANNOTATIONS.reconcilePeriod);
    expect(parsed.problems.join('\n')).not.toContain(ANNOTATIONS.uninstallWait);
    expect(Object.keys(parsed)).not.toContain('reconcilePeriodMs');
  });

  describe('reconcile-period', () => {
    it.each([
      ['30s', 30_000],
      ['1m30s', 90_000],
      ['5m', 300_000],
      ['1h', 3_600_000],
      ['1.5h', 5_400_000],
      ['500ms', 500],
      ['0', 0],
      ['0s', 0],
    ])('%s → %d ms', (raw, ms) => {
      const parsed = parseReleaseAnnotations({ [ANNOTATIONS.reconcilePeriod]: raw });
      expect(parsed.reconcilePeriodMs).toBe(ms);
      expect(parsed.problems).toEqual([]);
    });

    it.each(['', 'soon', '30', '5d', '-1m', '1 m', 'PT1M'])('%j is reported; the watch period applies', (raw) => {
      const parsed = parseReleaseAnnotations({ [ANNOTATIONS.reconcilePeriod]: raw });
      expect(parsed).toStrictEqual({ ...DEFAULTS, problems: [expect.stringContaining(ANNOTATIONS.reconcilePeriod)] });
      expect(parsed.problems[0]).toContain(`invalid duration ${JSON.stringify(raw)}`);
      expect(parsed.problems[0]).toMatch(/using the watch's period$/);
    });

    it('does not change the booleans', () => {
      expect(parseReleaseAnnotations({ [ANNOTATIONS.reconcilePeriod]: '2m' })).toStrictEqual({ ...DEFAULTS, reconcilePeriodMs: 120_000 });
    });
  });
});
