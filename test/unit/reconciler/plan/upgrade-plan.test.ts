import { describe, expect, it } from 'vitest';
import {
  approvalRequired,
  approvalVerdict,
  approveHint,
  approveStepOf,
  beyondRolloutNote,
  stillHeld,
  planStatus,
} from '../../../../src/reconciler/plan/plan-approval.js';
import { planApplied, planHeld } from '../../../../src/reconciler/plan/plan-summary.js';
import { Redactor } from '../../../../src/reconciler/status/redaction.js';
import {
  classifyObject,
  deletedObjects,
  hookEvents,
  planRisks,
  SECRET_VALUE,
  sealPlan,
  upgradeHooks,
  type PlanBody,
  type PlanRef,
} from '../../../../src/reconciler/plan/upgrade-plan.js';

const same = <T>(v: T): T => v;
const deployment = (ref: PlanRef, spec: Record<string, unknown>) => ({
  apiVersion: ref.apiVersion,
  kind: ref.kind,
  metadata: { name: ref.name, namespace: ref.namespace, resourceVersion: '7', uid: 'u1', managedFields: [{ manager: 'helm' }] },
  spec,
  status: { replicas: 1 },
});
const DEPLOY: PlanRef = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'ns', name: 'web' };
const body = (objects: PlanBody['objects'], extra: Partial<PlanBody> = {}): PlanBody => ({
  release: 'r',
  namespace: 'ns',
  fromRevision: 1,
  chart: { name: 'c', version: '1.0.0' },
  objects,
  hooks: [],
  crds: [],
  ...extra,
});

describe('classifyObject', () => {
  it('lists exactly the changed fields, with before and after, and not server-managed metadata or status', () => {
    const live = deployment(DEPLOY, { replicas: 1, template: { spec: { containers: [{ name: 'a', image: 'x:1' }] } } });
    const after = {
      ...deployment(DEPLOY, { replicas: 3, template: { spec: { containers: [{ name: 'a', image: 'x:2' }] } } }),
      metadata: { ...live.metadata, resourceVersion: '8' },
      status: { replicas: 3 },
    };
    const planned = classifyObject(DEPLOY, live, { kind: 'applied', after, conflicts: [] }, same);
    expect(planned).toEqual({
      ...DEPLOY,
      action: 'change',
      fields: [
        { path: '.spec.replicas', before: 1, after: 3 },
        { path: '.spec.template.spec.containers[0].image', before: 'x:1', after: 'x:2' },
      ],
    });
  });

  it('is undefined when the apply changes nothing', () => {
    const live = deployment(DEPLOY, { replicas: 1 });
    expect(
      classifyObject(
        DEPLOY,
        live,
        { kind: 'applied', after: { ...live, metadata: { ...live.metadata, resourceVersion: '9' } }, conflicts: [] },
        same,
      ),
    ).toBeUndefined();
  });

  it('flags an immutable field as refused, to be recreated', () => {
    const message = 'Deployment.apps "web" is invalid: spec.selector: Invalid value: ...: field is immutable';
    expect(classifyObject(DEPLOY, deployment(DEPLOY, {}), { kind: 'refused', message, conflicts: [] }, same)).toEqual({
      ...DEPLOY,
      action: 'refuse',
      message,
      recreate: true,
    });
  });

  it('keeps the conflicts, and flags a volume template change', () => {
    const sts = { ...DEPLOY, kind: 'StatefulSet' };
    const live = deployment(sts, { volumeClaimTemplates: [{ spec: { resources: { requests: { storage: '1Gi' } } } }] });
    const after = deployment(sts, { volumeClaimTemplates: [{ spec: { resources: { requests: { storage: '2Gi' } } } }] });
    const planned = classifyObject(
      sts,
      live,
      { kind: 'applied', after, conflicts: [{ field: '.spec.replicas', manager: 'kubectl-scale' }] },
      same,
    );
    expect(planned).toMatchObject({
      action: 'change',
      volumeTemplates: true,
      conflicts: [{ field: '.spec.replicas', manager: 'kubectl-scale' }],
    });
  });

  it("never holds a Secret's data, and redacts sensitive values elsewhere", () => {
    const secret: PlanRef = { apiVersion: 'v1', kind: 'Secret', namespace: 'ns', name: 's' };
    const live = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { password: 'b2xk' } };
    const after = { ...live, data: { password: 'bmV3' } };
    expect(classifyObject(secret, live, { kind: 'applied', after, conflicts: [] }, same)).toEqual({
      ...secret,
      action: 'change',
      fields: [{ path: '.data.password', before: SECRET_VALUE, after: SECRET_VALUE }],
    });
    expect(classifyObject(secret, undefined, { kind: 'applied', after, conflicts: [] }, same)).toEqual({
      ...secret,
      action: 'create',
      object: SECRET_VALUE,
    });
    const redactor = new Redactor(['hunter2-secret']);
    const cm: PlanRef = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'c' };
    const planned = classifyObject(
      cm,
      { data: { a: 'old' } },
      { kind: 'applied', after: { data: { a: 'hunter2-secret' } }, conflicts: [] },
      (v) => redactor.deep(v),
    );
    expect(JSON.stringify(planned)).not.toContain('hunter2');
  });

  it('hides the value a field had when its new value is sensitive: the Secret it came from now holds the new one', () => {
    const redactor = new Redactor(['second-s3cret']);
    const cm: PlanRef = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'c' };
    const live = { data: { greeting: 'first-s3cret', url: 'db://u:first-s3cret@h', plain: 'one' } };
    const after = { data: { greeting: 'second-s3cret', url: 'db://u:second-s3cret@h', plain: 'two' } };
    expect(classifyObject(cm, live, { kind: 'applied', after, conflicts: [] }, (v) => redactor.deep(v))).toEqual({
      ...cm,
      action: 'change',
      fields: [
        { path: '.data.greeting', before: SECRET_VALUE, after: SECRET_VALUE },
        { path: '.data.url', before: SECRET_VALUE, after: SECRET_VALUE },
        { path: '.data.plain', before: 'one', after: 'two' },
      ],
    });
    // The other way round (a value no longer taken from a Secret), and a field that comes or goes.
    const back = classifyObject(cm, after, { kind: 'applied', after: { data: { greeting: 'spec' } }, conflicts: [] }, (v) =>
      redactor.deep(v),
    );
    expect(JSON.stringify(back)).not.toContain('s3cret');
  });
});

describe('deletedObjects', () => {
  it('lists what the next revision no longer renders, and marks what helm keeps', () => {
    const svc = { apiVersion: 'v1', kind: 'Service', namespace: 'ns', name: 'web', annotations: {} };
    const pvc = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      namespace: 'ns',
      name: 'data',
      annotations: { 'helm.sh/resource-policy': 'keep' },
    };
    const dep = { ...DEPLOY, annotations: {} };
    expect(deletedObjects([dep, svc, pvc], [DEPLOY])).toEqual([
      { apiVersion: 'v1', kind: 'Service', namespace: 'ns', name: 'web', action: 'delete' },
      { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'ns', name: 'data', action: 'delete', kept: true },
    ]);
  });

  it('matches an object across versions of its group', () => {
    expect(deletedObjects([{ ...DEPLOY, apiVersion: 'apps/v1beta2', annotations: {} }], [DEPLOY])).toEqual([]);
  });
});

describe('hooks', () => {
  it('reads the hook events, without test hooks, and keeps those an upgrade runs', () => {
    expect(hookEvents({ 'helm.sh/hook': 'pre-upgrade, post-install' })).toEqual(['pre-upgrade', 'post-install']);
    expect(hookEvents({})).toBeUndefined();
    const hooks = [
      { kind: 'Job', name: 'migrate', events: ['pre-upgrade'] },
      { kind: 'Job', name: 'seed', events: ['post-install'] },
      { kind: 'Pod', name: 't', events: [] },
    ];
    expect(upgradeHooks(hooks)).toEqual([{ kind: 'Job', name: 'migrate', events: ['pre-upgrade'] }]);
  });
});

describe('sealPlan', () => {
  const a = { ...DEPLOY, action: 'change' as const, fields: [{ path: '.spec.replicas', before: 1, after: 2 }] };
  const b = { apiVersion: 'v1', kind: 'Service', namespace: 'ns', name: 'web', action: 'delete' as const };

  it('gives equal plans one digest, whatever the order found, and another plan another', () => {
    const one = sealPlan(body([a, b]));
    expect(one.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(sealPlan(body([b, a])).digest).toBe(one.digest);
    expect(sealPlan(body([a])).digest).not.toBe(one.digest);
    expect(sealPlan(body([a, b], { fromRevision: 2 })).digest).not.toBe(one.digest);
  });

  it('names the risks risky approval holds for', () => {
    expect(planRisks(body([a]))).toEqual([]);
    expect(planRisks(body([a, b]))).toEqual(['delete']);
    expect(planRisks(body([{ ...b, kept: true }]))).toEqual([]);
    expect(
      planRisks(
        body([{ ...DEPLOY, action: 'refuse', message: 'field is immutable', recreate: true }], {
          crds: [{ name: 'x', change: 'replace' }],
        }),
      ),
    ).toEqual(['recreate', 'crd']);
  });
});

describe('approval', () => {
  const safe = sealPlan(body([{ ...DEPLOY, action: 'change', fields: [{ path: '.spec.replicas' }] }]));
  const risky = sealPlan(body([{ apiVersion: 'v1', kind: 'Service', namespace: 'ns', name: 'web', action: 'delete' }]));

  it('holds by mode: never nothing, risky only risky plans, always every plan', () => {
    expect(approvalRequired('never', risky)).toBe(false);
    expect(approvalRequired('risky', safe)).toBe(false);
    expect(approvalRequired('risky', risky)).toBe(true);
    expect(approvalRequired('always', safe)).toBe(true);
  });

  it('lets go only the digest approved, and refuses another as stale', () => {
    expect(approvalVerdict('risky', risky, undefined)).toEqual({ kind: 'hold' });
    expect(approvalVerdict('risky', risky, risky.digest)).toEqual({ kind: 'go', why: 'approved' });
    expect(approvalVerdict('risky', risky, safe.digest)).toEqual({ kind: 'hold', stale: safe.digest });
    expect(approvalVerdict('risky', safe, undefined)).toEqual({ kind: 'go', why: 'not-required' });
  });

  it("lets a later wave's plan go with the rollout's approval only when its risks are among the approved ones", () => {
    const rollout = { target: 'v2', risks: ['delete' as const], by: [{ key: 'ns/canary', digest: 'sha256:c' }] };
    expect(approvalVerdict('risky', risky, undefined, rollout)).toEqual({ kind: 'go', why: 'rollout' });
    expect(approvalVerdict('always', safe, undefined, rollout)).toEqual({ kind: 'go', why: 'rollout' });
    // Its own approval still counts first; a canary approved with no risk covers only plans without one.
    expect(approvalVerdict('risky', risky, risky.digest, rollout)).toEqual({ kind: 'go', why: 'approved' });
    expect(approvalVerdict('risky', risky, undefined, { ...rollout, risks: [] })).toEqual({ kind: 'hold' });
    expect(approvalVerdict('always', safe, undefined, { ...rollout, risks: [] })).toEqual({ kind: 'go', why: 'rollout' });
    const recreate = sealPlan(body([{ ...DEPLOY, action: 'refuse', message: 'field is immutable', recreate: true }]));
    expect(approvalVerdict('risky', recreate, 'sha256:old', rollout)).toEqual({ kind: 'hold', stale: 'sha256:old' });
    expect(beyondRolloutNote(['delete', 'recreate'], rollout)).toBe(
      "; fleet revision v2 (approved at ns/canary, plan sha256:c) covers risks delete, and this plan's recreate needs its own approval",
    );
    expect(beyondRolloutNote(['recreate'], undefined)).toBe('');
  });

  it('finds the approval step in a held condition, as rollout status prints it', () => {
    const cr = { kind: 'App', namespace: 'ns', name: 'web' };
    for (const by of ['platform', 'cr'] as const) {
      const step = approveHint(by, 'sha256:abc', cr);
      expect(approveStepOf(`plan sha256:abc (…: 1 to delete; risky: delete) waits for approval: ${step} (more)`)).toBe(step);
    }
    expect(approveStepOf('plan applied')).toBeUndefined();
  });

  it('looks again without a new plan only while the held plan is of this desired state and revision', () => {
    const held = planStatus(risky, { generation: 2, fingerprint: 'f1', configMap: 'plan.app.r' }, 'AwaitingApproval');
    expect(stillHeld(held, { fingerprint: 'f1', fromRevision: 1 })).toBe(held);
    expect(stillHeld(held, { fingerprint: 'f2', fromRevision: 1 })).toBeUndefined();
    expect(stillHeld(held, { fingerprint: 'f1', fromRevision: 2 })).toBeUndefined();
    expect(stillHeld({ ...held, state: 'Applied' }, { fingerprint: 'f1', fromRevision: 1 })).toBeUndefined();
  });

  it('says in status which digest waits and how to approve it, with one event for a new plan', () => {
    const held = planStatus(risky, { generation: 2, fingerprint: 'f1', configMap: 'plan.app.r' }, 'AwaitingApproval');
    const input = { name: 'r', generation: 2, deleting: false, periodMs: 60_000 };
    const s = planHeld({ kind: 'plan-held', plan: held, hint: 'approve it', isNew: true, retryAfterMs: 5_000 }, input);
    expect(s.status).toContainEqual({ plan: held });
    const approved = (edits: typeof s.status) => edits.flatMap((e) => ('set' in e && e.set.type === 'Approved' ? [e.set] : []));
    expect(approved(s.status)).toMatchObject([{ status: 'False', reason: 'PlanAwaitingApproval' }]);
    expect(approved(s.status)[0]?.message).toContain(risky.digest);
    expect(s.events.map((e) => e.reason)).toEqual(['PlanAwaitingApproval']);
    expect(s.result).toEqual({ requeueAfterMs: 5_000 });
    const stale = planHeld({ kind: 'plan-held', plan: held, hint: 'approve it', isNew: false, stale: 'sha256:old' }, input);
    expect(approved(stale.status)).toMatchObject([{ reason: 'PlanApprovalStale' }]);
    expect(stale.events.map((e) => e.reason)).toEqual(['PlanApprovalStale']);
    expect(approved(planApplied({ status: { ...held, state: 'Applied' }, why: 'approved' }))).toMatchObject([
      { status: 'True', reason: 'PlanApproved' },
    ]);
    const rollout = { target: 'v2', risks: ['delete' as const], by: [{ key: 'ns/canary', digest: 'sha256:c' }] };
    const byRollout = approved(planApplied({ status: { ...held, state: 'Applied' }, why: 'rollout', rollout }));
    expect(byRollout).toMatchObject([{ status: 'True', reason: 'PlanApprovedByRollout' }]);
    expect(byRollout[0]?.message).toContain('went with the approval of fleet revision v2 (approved at ns/canary, plan sha256:c)');
  });
});
