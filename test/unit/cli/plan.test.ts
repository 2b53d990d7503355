import { describe, expect, it } from 'vitest';
import { planText } from '../../../src/cli/plan.js';
import { diffText } from '../../../src/cli/plan-diff.js';
import { planStatus } from '../../../src/reconciler/plan/plan-approval.js';
import { sealPlan } from '../../../src/reconciler/plan/upgrade-plan.js';

describe('plan show', () => {
  it('prints each object as a diff line, its fields before and after, conflicts, hooks and CRDs', () => {
    const plan = sealPlan({
      release: 'web',
      namespace: 'team',
      fromRevision: 3,
      chart: { name: 'app', version: '2.0.0' },
      objects: [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          namespace: 'team',
          name: 'web-settings',
          action: 'change',
          fields: [{ path: '.data.greeting', before: 'one', after: 'two' }],
          conflicts: [{ field: '.data.greeting', manager: 'kubectl-edit' }],
        },
        { apiVersion: 'v1', kind: 'Service', namespace: 'team', name: 'web-svc', action: 'delete' },
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          namespace: 'team',
          name: 'web-app',
          action: 'refuse',
          message: 'spec.selector: field is immutable',
          recreate: true,
        },
        { apiVersion: 'v1', kind: 'Secret', namespace: 'team', name: 'web-token', action: 'create', object: '(secret value)' },
      ],
      hooks: [{ kind: 'Job', name: 'web-migrate', events: ['pre-upgrade'] }],
      crds: [{ name: 'things.example.com', change: 'unsafe', findings: ['.spec.size: type changed (Type)'] }],
    });
    const status = planStatus(plan, { generation: 4, fingerprint: 'f', configMap: 'plan.app.web' }, 'AwaitingApproval');
    expect(planText(plan, status, { kind: 'App', namespace: 'team', name: 'web' }).split('\n')).toStrictEqual([
      `plan ${plan.digest} of App team/web (waits for approval)`,
      'upgrade of release web from revision 3 to chart app 2.0.0: 1 to create, 1 to change, 1 to delete, 1 refused by the API server, 1 field conflicts, 1 hooks, 1 CRD changes; risky: delete, recreate, conflict, crd',
      '',
      '~ ConfigMap team/web-settings',
      '    .data.greeting: "one" -> "two"',
      '    conflict: .data.greeting is owned by field manager "kubectl-edit"',
      '+ Secret team/web-token',
      '- Service team/web-svc',
      '! Deployment team/web-app: refused by the API server, would have to be deleted and recreated: spec.selector: field is immutable',
      'hook Job web-migrate runs (pre-upgrade)',
      'CRD things.example.com: unsafe: .spec.size: type changed (Type)',
    ]);
  });

  it('plan diff prints the plan of a manifest not applied; from revision 0 it is an install', () => {
    const plan = sealPlan({
      release: 'web',
      namespace: 'team',
      fromRevision: 0,
      chart: { name: 'app', version: '2.0.0' },
      objects: [{ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team', name: 'web-settings', action: 'create' }],
      hooks: [{ kind: 'Job', name: 'web-init', events: ['post-install'] }],
      crds: [],
    });
    expect(diffText(plan, { kind: 'App', namespace: 'team', name: 'web', file: 'web.yaml' }).split('\n')).toStrictEqual([
      `plan ${plan.digest} of App team/web from web.yaml (not applied)`,
      'install of release web with chart app 2.0.0: 1 to create, 1 hooks',
      '',
      '+ ConfigMap team/web-settings',
      'hook Job web-init runs (post-install)',
    ]);
  });
});
