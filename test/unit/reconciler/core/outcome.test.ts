import { describe, expect, it } from 'vitest';
import { TerminalError } from '../../../../src/runtime/reconcile.js';
import type { Condition } from '../../../../src/reconciler/status/conditions.js';
import { MAX_FAILED_ATTEMPTS } from '../../../../src/reconciler/decide/next-action.js';
import {
  HELM_EXIT_POLL_MS,
  ReportedError,
  UNINSTALL_WAIT_POLL_MS,
  type Deployment,
  type Outcome,
  type Summary,
  type SummaryInput,
} from '../../../../src/reconciler/core/outcome.js';
import { summarize as decide } from '../../../../src/reconciler/decide/summarize.js';
import { StatusDraft, type DeployedRelease } from '../../../../src/reconciler/status/status.js';

const T0 = '2026-01-01T00:00:00.000Z';
const now = (): Date => new Date('2026-01-01T00:05:00.000Z');
const FP = 'f'.repeat(40);
const input: SummaryInput = { name: 'web', generation: 3, deleting: false, periodMs: 60_000 };
const release: DeployedRelease = { name: 'web', namespace: 'demo', revision: 2, chart: 'nginx', chartVersion: '0.1.0' };
const inventory = [{ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'demo', name: 'web' }];
const ready: Deployment['ready'] = { status: 'True', reason: 'Ready', message: '1/1 ready', ready: 1, total: 1 };
const cond = (type: string, status: Condition['status'], reason = 'R', message = ''): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: T0,
});

/** `summarize`, its status edits applied to `d` as the reconciler applies them: the assertions read the draft. */
const summarize = (d: StatusDraft, outcome: Outcome, i: SummaryInput): Omit<Summary, 'status'> => {
  const { status, ...rest } = decide(d.current, outcome, i);
  d.apply(status);
  return rest;
};
const draft = (status: Record<string, unknown> = {}): StatusDraft => new StatusDraft({ conditions: [], ...status }, now);
const conditions = (d: StatusDraft): Record<string, { status: string; reason: string; message: string }> =>
  Object.fromEntries(d.current.conditions.map((c) => [c.type, { status: c.status, reason: c.reason, message: c.message }]));
const helmFailed = (o: Partial<Extract<Outcome, { kind: 'helm-failed' }>> = {}): Outcome => ({
  kind: 'helm-failed',
  reason: 'UpgradeError',
  event: 'UpgradeFailed',
  failure: { summary: 'boom', retryable: true },
  cause: new Error('raw'),
  ...o,
});

describe('summarize', () => {
  it('an install: Deployed with the NOTES, Ready from the objects, failures and drift cleared, an event, the resync period', () => {
    const d = draft({
      failedAttempts: { fingerprint: FP, count: 2 },
      driftRepairFailures: { revision: 1, count: 2 },
      conditions: [cond('Drifted', 'True'), cond('Paused', 'True')],
    });
    const s = summarize(d, { kind: 'installed', deployment: { release, inventory, ready }, notes: 'Visit http://web' }, input);
    expect(conditions(d)).toStrictEqual({
      Initialized: { status: 'True', reason: 'Reconciled', message: '' },
      Deployed: { status: 'True', reason: 'InstallSuccessful', message: 'Visit http://web' },
      ReleaseFailed: { status: 'False', reason: 'InstallSuccessful', message: '' },
      Irreconcilable: { status: 'False', reason: 'Reconciled', message: '' },
      Ready: { status: 'True', reason: 'Ready', message: '1/1 ready' },
    });
    expect(d.current).toMatchObject({ deployedRelease: release, inventory, observedGeneration: 3 });
    expect(d.current.failedAttempts).toBeUndefined();
    expect(d.current.driftRepairFailures).toBeUndefined();
    expect(s).toStrictEqual({
      result: { requeueAfterMs: 60_000 },
      events: [{ type: 'Normal', reason: 'InstallSuccessful', message: 'Installed release web: revision 2, chart nginx-0.1.0' }],
    });
  });

  it('an upgrade without NOTES says which revision is deployed', () => {
    const d = draft();
    const s = summarize(d, { kind: 'upgraded', deployment: { release, inventory, ready }, notes: '  ' }, input);
    expect(conditions(d).Deployed).toStrictEqual({
      status: 'True',
      reason: 'UpgradeSuccessful',
      message: 'Release web revision 2 deployed',
    });
    expect(s.events[0]?.message).toBe('Upgraded release web: revision 2, chart nginx-0.1.0');
  });

  it('an upgrade keeps the fights it left to their managers, and the Drifted condition that names them; without any, drift starts afresh', () => {
    const fight = {
      kind: 'MutatingWebhookConfiguration',
      name: 'cfg',
      path: '/webhooks/0/clientConfig/caBundle',
      manager: 'injector',
      restores: 3,
      since: T0,
      conflict: true,
    };
    const fights = { revision: 3, generation: 3, rules: 'r', fields: [fight] };
    const found = {
      driftFights: { ...fights, revision: 2 },
      driftRepairFailures: { revision: 2, count: 1 },
      conditions: [cond('Drifted', 'True', 'DriftConflict', 'the fight')],
    };
    const d = draft(found);
    summarize(d, { kind: 'upgraded', deployment: { release, inventory, ready }, notes: '', fights }, input);
    expect(d.current.driftFights).toStrictEqual(fights);
    expect(d.current.driftRepairFailures).toBeUndefined();
    expect(conditions(d).Drifted).toStrictEqual({ status: 'True', reason: 'DriftConflict', message: 'the fight' });
    const afresh = draft(found);
    summarize(afresh, { kind: 'upgraded', deployment: { release, inventory, ready }, notes: '' }, input);
    expect(afresh.current.driftFights).toBeUndefined();
    expect(conditions(afresh).Drifted).toBeUndefined();
  });

  it('a field conflict: ReleaseFailed/ResourceConflict with the message, terminal (not retried)', () => {
    const d = draft();
    const summary = 'upgrade stopped before helm changed anything: 1 field conflict under conflictPolicy: fail: …';
    const s = summarize(
      d,
      helmFailed({ reason: 'ResourceConflict', failure: { summary, retryable: false, fieldConflict: true }, fingerprint: FP }),
      input,
    );
    expect(conditions(d).ReleaseFailed).toStrictEqual({ status: 'True', reason: 'ResourceConflict', message: summary });
    expect(s.error).toBeInstanceOf(TerminalError);
  });

  it('in sync keeps the Deployed message and reason of the install that made it true', () => {
    const d = draft({ conditions: [cond('Deployed', 'True', 'InstallSuccessful', 'the notes')] });
    const s = summarize(d, { kind: 'in-sync', revision: 3, deployment: { inventory, ready }, drift: { kind: 'settled' } }, input);
    expect(conditions(d).Deployed).toStrictEqual({ status: 'True', reason: 'InstallSuccessful', message: 'the notes' });
    // ReleaseFailed's reason follows the revision: a later revision is an upgrade's.
    expect(conditions(d).ReleaseFailed).toStrictEqual({ status: 'False', reason: 'UpgradeSuccessful', message: '' });
    expect(d.current.deployedRelease).toBeUndefined();
    expect(s).toStrictEqual({ result: { requeueAfterMs: 60_000 }, events: [] });
  });

  it('in sync after Deployed was not true says which revision is deployed, and records a release read from helm', () => {
    const d = draft({ conditions: [cond('Deployed', 'False', 'UpgradeError', 'failed')] });
    summarize(d, { kind: 'in-sync', revision: 1, deployment: { release, inventory, ready }, drift: { kind: 'settled' } }, input);
    expect(conditions(d).Deployed).toStrictEqual({
      status: 'True',
      reason: 'InstallSuccessful',
      message: 'Release web revision 1 deployed',
    });
    expect(d.current.deployedRelease).toStrictEqual(release);
  });

  it('drift that could not be repaired: Drifted, the record kept, retried with backoff', () => {
    const d = draft();
    const record = { revision: 3, generation: 3, count: 1 };
    const s = summarize(
      d,
      {
        kind: 'in-sync',
        revision: 3,
        deployment: { inventory, ready },
        drift: { kind: 'failing', record, summary: 'Deployment web: denied' },
      },
      input,
    );
    expect(conditions(d).Drifted).toStrictEqual({
      status: 'True',
      reason: 'DriftRepairFailed',
      message: 'Could not restore the release manifest: Deployment web: denied',
    });
    expect(d.current.driftRepairFailures).toStrictEqual(record);
    expect(s.error).toBeInstanceOf(ReportedError);
    expect(d.current.observedGeneration).toBeUndefined();
  });

  it('drift repair that spent its budget says so once, in the condition and an event, and is not retried', () => {
    const d = draft();
    const record = { revision: 3, generation: 3, count: 5 };
    const s = summarize(
      d,
      { kind: 'in-sync', revision: 3, deployment: { inventory, ready }, drift: { kind: 'exhausted', record, message: 'stopped' } },
      input,
    );
    expect(conditions(d).Drifted).toStrictEqual({ status: 'True', reason: 'RetriesExhausted', message: 'stopped' });
    expect(s).toStrictEqual({
      result: { requeueAfterMs: 60_000 },
      events: [{ type: 'Warning', reason: 'RetriesExhausted', message: 'stopped' }],
    });
  });

  it('stopped drift repair leaves its condition as it was; settled drift clears it', () => {
    const stopped = draft({
      conditions: [cond('Drifted', 'True', 'RetriesExhausted', 'x')],
      driftRepairFailures: { revision: 3, count: 5 },
    });
    summarize(stopped, { kind: 'in-sync', revision: 3, deployment: { inventory, ready }, drift: { kind: 'stopped' } }, input);
    expect(conditions(stopped).Drifted?.reason).toBe('RetriesExhausted');
    expect(stopped.current.driftRepairFailures).toStrictEqual({ revision: 3, count: 5 });
    const settled = draft({ conditions: [cond('Drifted', 'True')], driftRepairFailures: { revision: 3, count: 2 } });
    summarize(settled, { kind: 'in-sync', revision: 3, deployment: { inventory, ready }, drift: { kind: 'settled' } }, input);
    expect(conditions(settled).Drifted).toBeUndefined();
    expect(settled.current.driftRepairFailures).toBeUndefined();
  });

  it('a failed upgrade: ReleaseFailed, Ready false naming the serving revision, a Warning, counted, retried', () => {
    const d = draft({ deployedRelease: release, conditions: [cond('Stalled', 'True')] });
    const s = summarize(d, helmFailed({ fingerprint: FP }), input);
    expect(conditions(d).ReleaseFailed).toStrictEqual({ status: 'True', reason: 'UpgradeError', message: 'boom' });
    expect(conditions(d).Ready).toStrictEqual({ status: 'False', reason: 'UpgradeError', message: 'revision 2 keeps serving; boom' });
    expect(conditions(d).Stalled).toBeUndefined();
    expect(d.current.failedAttempts).toStrictEqual({ fingerprint: FP, count: 1 });
    expect(s.events).toStrictEqual([{ type: 'Warning', reason: 'UpgradeFailed', message: 'boom' }]);
    expect(s.error).toBeInstanceOf(ReportedError);
    expect(s.error?.cause).toBeInstanceOf(Error);
  });

  it('the failure that spends the retries stalls, and ends the reconcile for good', () => {
    const d = draft({ failedAttempts: { fingerprint: FP, count: MAX_FAILED_ATTEMPTS - 1 } });
    const s = summarize(d, helmFailed({ fingerprint: FP }), input);
    expect(conditions(d).Stalled).toMatchObject({ status: 'True', reason: 'RetriesExhausted' });
    expect(conditions(d).ReleaseFailed?.message).toBe(
      `boom (failed ${MAX_FAILED_ATTEMPTS} times; retries stopped until the spec or the chart changes)`,
    );
    expect(s.error).toBeInstanceOf(TerminalError);
    expect(d.current.observedGeneration).toBe(3);
  });

  it('an uncounted failure (a cancelled helm, an unlock) leaves the count alone', () => {
    const d = draft({ failedAttempts: { fingerprint: FP, count: MAX_FAILED_ATTEMPTS - 1 } });
    summarize(d, helmFailed(), input);
    expect(d.current.failedAttempts).toStrictEqual({ fingerprint: FP, count: MAX_FAILED_ATTEMPTS - 1 });
    expect(conditions(d).Stalled).toBeUndefined();
  });

  it('a failed install is not deployed; a failure helm says retrying cannot fix is terminal', () => {
    const d = draft();
    const s = summarize(
      d,
      helmFailed({
        reason: 'InstallError',
        event: 'InstallFailed',
        notDeployed: true,
        failure: { summary: 'bad chart', retryable: false },
      }),
      input,
    );
    expect(conditions(d).Deployed).toStrictEqual({ status: 'False', reason: 'InstallError', message: 'bad chart' });
    expect(conditions(d).Ready).toStrictEqual({ status: 'False', reason: 'InstallError', message: 'bad chart' });
    expect(s.error).toBeInstanceOf(TerminalError);
  });

  it('refused input: Irreconcilable; terminal unless a retry can help; an event only when asked; Stalled untouched before the release is read', () => {
    const d = draft({ conditions: [cond('Stalled', 'True')] });
    const s = summarize(
      d,
      { kind: 'refused', reason: 'InvalidSpec', message: 'spec must be an object', retry: false, event: false, stage: 'input' },
      input,
    );
    expect(conditions(d).Irreconcilable).toStrictEqual({ status: 'True', reason: 'InvalidSpec', message: 'spec must be an object' });
    expect(conditions(d).Stalled?.status).toBe('True');
    expect(s.error).toBeInstanceOf(TerminalError);
    expect(s.events).toStrictEqual([]);
    expect(d.current.observedGeneration).toBe(3);

    const r = draft({ conditions: [cond('Stalled', 'True')] });
    const t = summarize(
      r,
      { kind: 'refused', reason: 'ValuesReferenceNotFound', message: 'missing', retry: true, event: true, stage: 'release' },
      input,
    );
    expect(t.error).toBeInstanceOf(ReportedError);
    expect(t.events).toStrictEqual([{ type: 'Warning', reason: 'ValuesReferenceNotFound', message: 'missing' }]);
    expect(conditions(r).Stalled).toBeUndefined();
    expect(r.current.observedGeneration).toBeUndefined();
  });

  it('refused until something outside the CR changes (recheck: period): Irreconcilable and an event, no backoff retry, looked at again at the period', () => {
    const d = draft();
    const s = summarize(
      d,
      {
        kind: 'refused',
        reason: 'ServiceAccountNotFound',
        message: 'create it',
        retry: false,
        event: true,
        stage: 'input',
        recheck: 'period',
      },
      input,
    );
    expect(conditions(d).Irreconcilable).toStrictEqual({ status: 'True', reason: 'ServiceAccountNotFound', message: 'create it' });
    expect(s.error).toBeUndefined();
    expect(s.result).toStrictEqual({ requeueAfterMs: 60_000 });
    expect(s.events).toStrictEqual([{ type: 'Warning', reason: 'ServiceAccountNotFound', message: 'create it' }]);
    expect(d.current.observedGeneration).toBe(3);
  });

  it('stalled: the condition, the generation, the resync period, no error', () => {
    const d = draft();
    expect(summarize(d, { kind: 'stalled', count: 6 }, input)).toStrictEqual({ result: { requeueAfterMs: 60_000 }, events: [] });
    expect(conditions(d).Stalled).toMatchObject({
      status: 'True',
      reason: 'RetriesExhausted',
      message: expect.stringContaining('6 times') as string,
    });
  });

  it('paused: the Paused condition and nothing else; the next reconcile removes it', () => {
    const d = draft();
    expect(summarize(d, { kind: 'paused' }, input)).toStrictEqual({ result: {}, events: [] });
    expect(Object.keys(conditions(d))).toStrictEqual(['Paused']);
    summarize(d, { kind: 'stalled', count: 5 }, input);
    expect(conditions(d).Paused).toBeUndefined();
    expect(conditions(d).Initialized?.status).toBe('True');
  });

  it('waits for a live helm, a batch or nothing without touching status', () => {
    for (const outcome of [{ kind: 'helm-busy' }, { kind: 'uninstall-held' }, { kind: 'let-go' }] as const) {
      const d = draft();
      const s = summarize(d, outcome, input);
      expect(d.patch()).toStrictEqual({});
      expect(s.result).toStrictEqual(outcome.kind === 'helm-busy' ? { requeueAfterMs: HELM_EXIT_POLL_MS } : {});
    }
  });

  it('cancelled by lost leadership: ends with its cause, status untouched', () => {
    const d = draft();
    const cause = new Error('aborted');
    expect(summarize(d, { kind: 'cancelled', cause }, input)).toStrictEqual({ result: {}, error: cause, events: [] });
    expect(d.patch()).toStrictEqual({});
  });

  it('uninstalled: Deployed false, the release dropped, an event when there was one', () => {
    const d = draft({ deployedRelease: release, inventory, conditions: [cond('Deployed', 'True'), cond('Initialized', 'True')] });
    const s = summarize(d, { kind: 'uninstalled', found: true, remaining: [] }, { ...input, deleting: true });
    expect(conditions(d)).toStrictEqual({
      Deployed: { status: 'False', reason: 'UninstallSuccessful', message: 'Release uninstalled' },
      Initialized: { status: 'True', reason: 'R', message: '' },
      ReleaseFailed: { status: 'False', reason: 'UninstallSuccessful', message: '' },
    });
    expect(d.current.deployedRelease).toBeUndefined();
    expect(d.current.inventory).toBeUndefined();
    expect(s).toStrictEqual({
      result: {},
      events: [{ type: 'Normal', reason: 'UninstallSuccessful', message: 'Uninstalled release web' }],
    });
    expect(summarize(draft(), { kind: 'uninstalled', found: false, remaining: [] }, input).events).toStrictEqual([]);
  });

  it('uninstall-wait: says what is left and looks again', () => {
    const d = draft();
    const s = summarize(
      d,
      { kind: 'uninstalled', found: true, remaining: ['Deployment/a', 'Service/a', 'Secret/a', 'Job/b'] },
      { ...input, deleting: true },
    );
    expect(conditions(d).Deployed?.message).toBe('Waiting until all resources are deleted: 4 left (Deployment/a, Service/a, Secret/a)');
    expect(s).toStrictEqual({ result: { requeueAfterMs: UNINSTALL_WAIT_POLL_MS }, events: [] });
  });

  it('a failure while deleting leaves the live conditions alone', () => {
    const d = draft({ conditions: [cond('Stalled', 'True')] });
    summarize(d, helmFailed({ reason: 'UninstallError', event: 'ReleaseOperationFailed' }), { ...input, deleting: true });
    expect(conditions(d).Initialized).toBeUndefined();
    expect(conditions(d).Stalled?.status).toBe('True');
    expect(conditions(d).ReleaseFailed).toStrictEqual({ status: 'True', reason: 'UninstallError', message: 'boom' });
  });

  it('is pure: decides from the status as found, changes nothing of it, and says what to change', () => {
    const found = draft({
      failedAttempts: { fingerprint: FP, count: 1 },
      conditions: [cond('Drifted', 'False', 'DriftIgnoreRefused', 'bad rule')],
    }).current;
    const before = structuredClone(found);
    const outcomes: Outcome[] = [
      helmFailed({ fingerprint: FP }),
      {
        kind: 'in-sync',
        revision: 3,
        deployment: { inventory, ready },
        drift: { kind: 'settled' },
        fields: { fights: undefined, declared: [], refused: 'bad rule' },
      },
      { kind: 'installed', deployment: { release, inventory, ready }, notes: '' },
    ];
    const decided = outcomes.map((o) => decide(Object.freeze(found), o, input));
    expect(found).toStrictEqual(before);
    expect(decided[0]?.status).toContainEqual({ failedAttempts: { fingerprint: FP, count: 2 } });
    // The refused annotation was said already (the condition as found): no second event.
    expect(decided[1]?.events).toStrictEqual([]);
    expect(decided[2]?.status).toContainEqual({ observedGeneration: 3 });
  });

  it('puts the events an outcome carries before its own', () => {
    const carried = { type: 'Warning' as const, reason: 'RollbackSuccessful', message: 'Rolled release web back to revision 1' };
    const s = decide(draft().current, { ...helmFailed(), events: [carried] }, input);
    expect(s.events).toStrictEqual([carried, { type: 'Warning', reason: 'UpgradeFailed', message: 'boom' }]);
  });
});
