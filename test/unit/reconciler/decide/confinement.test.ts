import { describe, expect, it } from 'vitest';
import { confinementViolations } from '../../../../src/reconciler/decide/confinement.js';

describe('confinementViolations', () => {
  const policy = { namespace: 'team-a', allowClusterScoped: ['Namespace', 'ClusterRole.rbac.authorization.k8s.io'] };

  it('accepts objects in the release namespace and allowed cluster-scoped kinds', () => {
    expect(
      confinementViolations(
        [
          { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'c' },
          { apiVersion: 'v1', kind: 'Namespace', namespace: '', name: 'n' },
          { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', namespace: '', name: 'r' },
        ],
        policy,
      ),
    ).toEqual([]);
  });

  it('names objects in other namespaces, other cluster-scoped kinds, and kinds it cannot check', () => {
    expect(
      confinementViolations(
        [
          { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-b', name: 'c' },
          { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', namespace: '', name: 'w' },
        ],
        policy,
        [{ apiVersion: 'example.com/v1', kind: 'Widget', namespace: '', name: 'x' }],
      ),
    ).toEqual([
      'ConfigMap team-b/c (namespace team-b)',
      'ValidatingWebhookConfiguration w (cluster-scoped)',
      'Widget x (kind example.com/v1 Widget is not served, its scope cannot be checked)',
    ]);
  });

  it('matches kinds as Kind.group: a kind of another group is not allowed by its bare name', () => {
    const bare = { namespace: 'team-a', allowClusterScoped: ['ClusterRole'] };
    expect(
      confinementViolations([{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', namespace: '', name: 'r' }], bare),
    ).toEqual(['ClusterRole r (cluster-scoped)']);
  });
});
