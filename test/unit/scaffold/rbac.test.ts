import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  RELEASE_OBJECT_VERBS,
  builtinResourceInfo,
  mergeRules,
  rulesForObjects,
  type PolicyRule,
  type RenderedObject,
} from '../../../src/scaffold/rbac.js';

const verbs = [...RELEASE_OBJECT_VERBS];
const obj = (apiVersion: string, kind: string, extra: Partial<RenderedObject> = {}): RenderedObject => ({ apiVersion, kind, ...extra });

describe('builtinResourceInfo', () => {
  it('knows the kinds charts render, for any version of the group', () => {
    expect(builtinResourceInfo('apps/v1', 'Deployment')).toEqual({ group: 'apps', resource: 'deployments', namespaced: true });
    expect(builtinResourceInfo('v1', 'ConfigMap')).toEqual({ group: '', resource: 'configmaps', namespaced: true });
    expect(builtinResourceInfo('autoscaling/v1', 'HorizontalPodAutoscaler')).toEqual(
      builtinResourceInfo('autoscaling/v2', 'HorizontalPodAutoscaler'),
    );
    expect(builtinResourceInfo('networking.k8s.io/v1', 'Ingress')?.resource).toBe('ingresses');
    expect(builtinResourceInfo('policy/v1', 'PodDisruptionBudget')?.resource).toBe('poddisruptionbudgets');
    expect(builtinResourceInfo('rbac.authorization.k8s.io/v1', 'ClusterRole')).toEqual({
      group: 'rbac.authorization.k8s.io',
      resource: 'clusterroles',
      namespaced: false,
    });
    expect(builtinResourceInfo('scheduling.k8s.io/v1', 'PriorityClass')?.namespaced).toBe(false);
    expect(builtinResourceInfo('storage.k8s.io/v1', 'StorageClass')?.namespaced).toBe(false);
    expect(builtinResourceInfo('apiextensions.k8s.io/v1', 'CustomResourceDefinition')?.resource).toBe('customresourcedefinitions');
    expect(builtinResourceInfo('admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration')?.namespaced).toBe(false);
    expect(builtinResourceInfo('coordination.k8s.io/v1', 'Lease')?.resource).toBe('leases');
    expect(builtinResourceInfo('batch/v1', 'CronJob')?.resource).toBe('cronjobs');
  });

  it('does not guess: CRD kinds, wrong groups and prototype names are unknown', () => {
    expect(builtinResourceInfo('cert-manager.io/v1', 'Certificate')).toBeUndefined();
    expect(builtinResourceInfo('monitoring.coreos.com/v1', 'ServiceMonitor')).toBeUndefined();
    expect(builtinResourceInfo('v1', 'Deployment')).toBeUndefined();
    expect(builtinResourceInfo('v1', 'constructor')).toBeUndefined();
    expect(builtinResourceInfo('toString/v1', 'Pod')).toBeUndefined();
  });
});

describe('rulesForObjects', () => {
  it('matches the chart rules of config/rbac/role.yaml for the sample chart (with any values)', () => {
    const rendered = [
      obj('v1', 'ServiceAccount'),
      obj('v1', 'ConfigMap'),
      obj('v1', 'Service'),
      obj('apps/v1', 'Deployment'),
      obj('networking.k8s.io/v1', 'Ingress'),
      obj('autoscaling/v2', 'HorizontalPodAutoscaler'),
      obj('v1', 'Service'),
    ];
    const role = parse(readFileSync(new URL('../../../config/rbac/role.yaml', import.meta.url), 'utf8')) as { rules: PolicyRule[] };
    const chartPart = role.rules.filter((r) => !r.resources.some((res) => /nginxes|secrets|events/.test(res)));
    const result = rulesForObjects(rendered, builtinResourceInfo);
    expect(result.rules).toEqual(chartPart.sort((a, b) => (a.apiGroups[0] ?? '').localeCompare(b.apiGroups[0] ?? '')));
    expect(result.unresolved).toEqual([]);
    expect(result.notes).toEqual([]);
  });

  it('never grants "*" and sorts deterministically whatever the input order', () => {
    const objects = [
      obj('batch/v1', 'Job'),
      obj('v1', 'Secret'),
      obj('apps/v1', 'StatefulSet'),
      obj('v1', 'PersistentVolumeClaim'),
      obj('apps/v1', 'DaemonSet'),
      obj('policy/v1', 'PodDisruptionBudget'),
    ];
    const a = rulesForObjects(objects, builtinResourceInfo);
    const b = rulesForObjects([...objects].reverse(), builtinResourceInfo);
    expect(a).toEqual(b);
    expect(a.rules).toEqual([
      { apiGroups: [''], resources: ['persistentvolumeclaims', 'secrets'], verbs },
      { apiGroups: ['apps'], resources: ['daemonsets', 'statefulsets'], verbs },
      { apiGroups: ['batch'], resources: ['jobs'], verbs },
      { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs },
    ]);
    expect(JSON.stringify(a)).not.toContain('*');
  });

  it('reports kinds the resolver does not know, once each, and still uses the resolver for the rest', () => {
    const crds = (apiVersion: string, kind: string) =>
      kind === 'Certificate'
        ? { group: 'cert-manager.io', resource: 'certificates', namespaced: true }
        : builtinResourceInfo(apiVersion, kind);
    const result = rulesForObjects(
      [
        obj('monitoring.coreos.com/v1', 'ServiceMonitor'),
        obj('monitoring.coreos.com/v1', 'ServiceMonitor'),
        obj('cert-manager.io/v1', 'Certificate'),
        obj('gateway.networking.k8s.io/v1', 'HTTPRoute'),
      ],
      crds,
    );
    expect(result.unresolved).toEqual(['gateway.networking.k8s.io/v1 HTTPRoute', 'monitoring.coreos.com/v1 ServiceMonitor']);
    expect(result.rules).toEqual([{ apiGroups: ['cert-manager.io'], resources: ['certificates'], verbs }]);
  });

  it('gives an empty result for a chart that renders nothing', () => {
    expect(rulesForObjects([], builtinResourceInfo)).toEqual({ rules: [], unresolved: [], notes: [] });
  });

  it("holds the permissions the chart's roles grant instead of escalate, without their resourceNames", () => {
    const result = rulesForObjects(
      [
        obj('rbac.authorization.k8s.io/v1', 'Role', {
          name: 'release-name-demo',
          rules: [
            { apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get', 'list'] },
            { apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: ['release-name-lock'] },
            { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'] },
          ],
        }),
        obj('rbac.authorization.k8s.io/v1', 'RoleBinding', {
          name: 'release-name-demo',
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'release-name-demo' },
        }),
      ],
      builtinResourceInfo,
    );
    expect(result.rules).toEqual([
      { apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get', 'list'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'] },
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['rolebindings', 'roles'], verbs },
    ]);
    expect(JSON.stringify(result.rules)).not.toMatch(/escalate|bind"|\*/);
    expect(result.notes).toEqual([expect.stringMatching(/resourceNames: the operator holds it for every name/)]);
  });

  it('grants bind by name only on roles the chart binds but does not create', () => {
    const result = rulesForObjects(
      [
        obj('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', {
          name: 'release-name-auth',
          roleRef: { kind: 'ClusterRole', name: 'system:auth-delegator' },
        }),
        obj('rbac.authorization.k8s.io/v1', 'RoleBinding', { name: 'viewers', roleRef: { kind: 'ClusterRole', name: 'view' } }),
      ],
      builtinResourceInfo,
    );
    expect(result.rules).toEqual([
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterrolebindings', 'rolebindings'], verbs },
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['bind'], resourceNames: ['system:auth-delegator'] },
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['bind'], resourceNames: ['view'] },
    ]);
    expect(result.notes.join('\n')).toMatch(/binds ClusterRole view, which the chart does not create/);
    expect(result.notes.join('\n')).toMatch(/cluster-scoped objects \(ClusterRoleBinding\)/);
  });

  it('refuses to copy "*" from a chart role, and explains roles passed without their rules', () => {
    const result = rulesForObjects(
      [
        obj('rbac.authorization.k8s.io/v1', 'ClusterRole', {
          name: 'admin-ish',
          rules: [
            { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
            { nonResourceURLs: ['/metrics'], verbs: ['get'] },
          ],
        }),
        obj('rbac.authorization.k8s.io/v1', 'Role', { name: 'no-rules-given' }),
        obj('rbac.authorization.k8s.io/v1', 'ClusterRole', {
          name: 'aggregated',
          aggregationRule: { clusterRoleSelectors: [] },
          rules: [],
        }),
      ],
      builtinResourceInfo,
    );
    expect(JSON.stringify(result.rules)).not.toContain('*');
    const notes = result.notes.join('\n');
    expect(notes).toMatch(/ClusterRole admin-ish grants "\*"/);
    expect(notes).toMatch(/non-resource URLs \(\/metrics\)/);
    expect(notes).toMatch(/creates a Role: the operator may only create it if it holds every permission/);
    expect(notes).toMatch(/ClusterRole aggregated has an aggregationRule: Kubernetes requires escalate/);
    expect(JSON.stringify(result.rules)).not.toContain('escalate');
  });
});

describe('mergeRules', () => {
  it("merges the operator's own rules with a chart's, keeping named rules apart", () => {
    const merged = mergeRules([
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['bind'], resourceNames: ['view'] },
      ...rulesForObjects([obj('v1', 'ConfigMap'), obj('v1', 'Secret')], builtinResourceInfo).rules,
    ]);
    expect(merged).toEqual([
      { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['bind'], resourceNames: ['view'] },
    ]);
  });
});
