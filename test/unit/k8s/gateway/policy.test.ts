import { describe, expect, it } from 'vitest';
import { normalizedUrl, parseApiRequest } from '../../../../src/k8s/gateway/api-request.js';
import {
  changeable,
  decide,
  isStorageRecord,
  readable,
  REFUSAL_PREFIX,
  type GatewayPolicy,
  type ResourceScope,
} from '../../../../src/k8s/gateway/policy.js';

const LABEL = { key: 'helm.sdk.operatorframework.io/values-source', value: 'true' };
const confined: GatewayPolicy = {
  namespace: 'tenant-a',
  releases: ['web'],
  confineWrites: true,
  allowClusterScoped: [],
  readableLabel: LABEL,
};
const impersonating: GatewayPolicy = { ...confined, confineWrites: false };

const SCOPES: Readonly<Record<string, ResourceScope>> = {
  'rbac.authorization.k8s.io/v1/clusterrolebindings': { kind: 'ClusterRoleBinding', namespaced: false },
  'rbac.authorization.k8s.io/v1/rolebindings': { kind: 'RoleBinding', namespaced: true },
  'apiextensions.k8s.io/v1/customresourcedefinitions': { kind: 'CustomResourceDefinition', namespaced: false },
  '/v1/secrets': { kind: 'Secret', namespaced: true },
  '/v1/configmaps': { kind: 'ConfigMap', namespaced: true },
  '/v1/namespaces': { kind: 'Namespace', namespaced: false },
  'apps/v1/deployments': { kind: 'Deployment', namespaced: true },
  '/v1/serviceaccounts': { kind: 'ServiceAccount', namespaced: true },
};

function decision(method: string, url: string, policy: GatewayPolicy = confined) {
  const req = parseApiRequest(method, url);
  const scope = req.type === 'resource' ? SCOPES[`${req.group}/${req.version}/${req.resource}`] : undefined;
  return decide(req, policy, scope);
}

describe('parseApiRequest', () => {
  it('reads namespaced, cluster-scoped and Namespace paths as the API server does', () => {
    expect(parseApiRequest('GET', '/api/v1/namespaces/a/secrets/s?x=1')).toMatchObject({
      type: 'resource',
      verb: 'get',
      group: '',
      resource: 'secrets',
      namespace: 'a',
      name: 's',
    });
    expect(parseApiRequest('GET', '/api/v1/namespaces/a')).toMatchObject({
      type: 'resource',
      verb: 'get',
      resource: 'namespaces',
      name: 'a',
    });
    expect(parseApiRequest('GET', '/api/v1/namespaces/a')).not.toHaveProperty('namespace');
    expect(parseApiRequest('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings')).toMatchObject({
      verb: 'create',
      group: 'rbac.authorization.k8s.io',
      resource: 'clusterrolebindings',
    });
    expect(parseApiRequest('GET', '/api/v1/secrets?watch=true&labelSelector=owner%3Dhelm%2Cname%3Dweb')).toMatchObject({
      verb: 'watch',
      labelSelector: ['owner=helm', 'name=web'],
    });
    expect(parseApiRequest('DELETE', '/api/v1/namespaces/a/configmaps')).toMatchObject({ verb: 'deletecollection' });
    expect(parseApiRequest('POST', '/api/v1/namespaces/a/serviceaccounts/x/token')).toMatchObject({ verb: 'create', subresource: 'token' });
    expect(parseApiRequest('PUT', '/api/v1/namespaces/a/finalize')).toMatchObject({
      resource: 'namespaces',
      name: 'a',
      subresource: 'finalize',
    });
    expect(parseApiRequest('PUT', '/api/v1/namespaces/a/finalize')).not.toHaveProperty('namespace');
    expect(parseApiRequest('GET', '/openapi/v3/apis/apps/v1')).toEqual({ type: 'discovery' });
    expect(parseApiRequest('GET', '/apis/apps/v1')).toEqual({ type: 'discovery' });
  });

  it('never reads an encoded or dotted path as another one', () => {
    expect(normalizedUrl('/api/v1/namespaces/tenant-a/../../../apis/rbac.authorization.k8s.io/v1/clusterrolebindings?x=1')).toBe(
      '/api/apis/rbac.authorization.k8s.io/v1/clusterrolebindings?x=1',
    );
    expect(normalizedUrl('/api/v1/namespaces/tenant-a/%2e%2e/x')).toBe('/api/v1/namespaces/x');
    expect(parseApiRequest('POST', '/api/v1/namespaces/tenant-a%2F..%2F..%2Fx/secrets').type).toBe('other');
    expect(parseApiRequest('GET', '/api/v1/namespaces/a/secrets/%ZZ').type).toBe('other');
    expect(parseApiRequest('GET', '/logs/kube-apiserver.log')).toEqual({ type: 'other', path: '/logs/kube-apiserver.log' });
    expect(parseApiRequest('GET', '/api/v1/namespaces/a/pods/p/log/extra').type).toBe('other');
  });
});

describe('decide under confineToNamespace', () => {
  it('refuses cluster-scoped writes the watch does not allow, crds/ and RBAC included', () => {
    const crb = decision('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings');
    expect(crb).toMatchObject({ action: 'refuse' });
    expect(crb.action === 'refuse' && crb.message).toContain(REFUSAL_PREFIX);
    expect(crb.action === 'refuse' && crb.message).toContain('ClusterRoleBinding.rbac.authorization.k8s.io');
    expect(decision('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions')).toMatchObject({ action: 'refuse' });
    expect(decision('POST', '/api/v1/namespaces')).toMatchObject({ action: 'refuse' });
    expect(decision('PATCH', '/api/v1/namespaces/tenant-a')).toMatchObject({ action: 'refuse' });
    const allowed = { ...confined, allowClusterScoped: ['ClusterRoleBinding.rbac.authorization.k8s.io'] };
    expect(decision('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', allowed)).toEqual({ action: 'forward' });
  });

  it('refuses writes to other namespaces and hides their objects from reads', () => {
    expect(decision('POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings')).toMatchObject({ action: 'refuse' });
    expect(decision('PATCH', '/apis/apps/v1/namespaces/tenant-b/deployments/x')).toMatchObject({ action: 'refuse' });
    expect(decision('GET', '/api/v1/namespaces/tenant-b/secrets/db')).toEqual({ action: 'hide' });
    expect(decision('GET', '/apis/apps/v1/namespaces/tenant-b/deployments')).toEqual({ action: 'hide' });
    expect(decision('GET', '/api/v1/secrets')).toEqual({ action: 'hide' });
    expect(decision('POST', '/apis/apps/v1/deployments')).toMatchObject({ action: 'refuse' });
  });

  it('refuses a write whose kind is not served (its scope cannot be checked)', () => {
    expect(decision('POST', '/apis/evil.example.com/v1/things')).toMatchObject({ action: 'refuse' });
    expect(decision('GET', '/apis/evil.example.com/v1/things')).toEqual({ action: 'forward' });
  });

  it('lets helm work in its namespace and read discovery and cluster-scoped objects', () => {
    expect(decision('POST', '/apis/apps/v1/namespaces/tenant-a/deployments')).toEqual({ action: 'forward' });
    expect(decision('GET', '/apis/apps/v1/namespaces/tenant-a/deployments?watch=true')).toEqual({ action: 'forward' });
    expect(decision('GET', '/api/v1/namespaces/kube-system')).toEqual({ action: 'forward' });
    expect(decision('GET', '/apis')).toEqual({ action: 'forward' });
  });

  it('refuses what helm never does: subresource writes, deleting collections, other paths', () => {
    expect(decision('POST', '/api/v1/namespaces/tenant-a/serviceaccounts/default/token')).toMatchObject({ action: 'refuse' });
    expect(decision('DELETE', '/api/v1/namespaces/tenant-a/configmaps')).toMatchObject({ action: 'refuse' });
    expect(decision('GET', '/metrics')).toMatchObject({ action: 'refuse' });
    expect(decision('GET', '/apis/apps/v1/namespaces/tenant-a/deployments/x/status')).toEqual({ action: 'forward' });
  });
});

describe('decide for Secrets (confined or impersonating)', () => {
  for (const policy of [confined, impersonating]) {
    it(`inspects reads and changes ${policy.confineWrites ? 'when confined' : 'when impersonating'}`, () => {
      expect(decision('GET', '/api/v1/namespaces/tenant-a/secrets/db', policy)).toEqual({ action: 'inspect' });
      expect(decision('GET', '/api/v1/namespaces/tenant-a/secrets', policy)).toEqual({ action: 'inspect' });
      // ConfigMaps are charts' markers and settings: read as any other kind of the namespace.
      expect(decision('GET', '/api/v1/namespaces/tenant-a/configmaps/marker', policy)).toEqual({ action: 'forward' });
      expect(decision('GET', '/api/v1/namespaces/tenant-a/secrets?labelSelector=name%3Dweb%2Cowner%3Dhelm', policy)).toEqual({
        action: 'forward',
      });
      expect(decision('GET', '/api/v1/namespaces/tenant-a/secrets?labelSelector=name%3Dother%2Cowner%3Dhelm', policy)).toEqual({
        action: 'inspect',
      });
      expect(decision('GET', '/api/v1/namespaces/tenant-a/secrets?watch=1', policy)).toMatchObject({ action: 'refuse' });
      expect(decision('POST', '/api/v1/namespaces/tenant-a/secrets', policy)).toEqual({ action: 'forward' });
      expect(decision('PATCH', '/api/v1/namespaces/tenant-a/secrets/db', policy)).toEqual({ action: 'check-target' });
      expect(decision('DELETE', '/api/v1/namespaces/tenant-a/secrets/c', policy)).toEqual({ action: 'check-target' });
    });
  }
  it('inspects Secret reads of other namespaces when only impersonating', () => {
    expect(decision('GET', '/api/v1/namespaces/tenant-b/secrets/db', impersonating)).toEqual({ action: 'inspect' });
    expect(decision('GET', '/api/v1/secrets', impersonating)).toEqual({ action: 'inspect' });
  });
});

describe('readable', () => {
  const own = { namespace: 'tenant-a', annotations: { 'meta.helm.sh/release-name': 'web', 'meta.helm.sh/release-namespace': 'tenant-a' } };
  it('lets helm read its storage, its objects and opted-in objects of the namespace only', () => {
    expect(readable({ name: 'sh.helm.release.v1.web.v3', namespace: 'tenant-a', labels: { owner: 'helm', name: 'web' } }, confined)).toBe(
      true,
    );
    expect(readable(own, confined)).toBe(true);
    expect(readable({ namespace: 'tenant-a', labels: { [LABEL.key]: 'true' } }, confined)).toBe(true);
  });
  it('hides a ServiceAccount token Secret the release made: the cluster, not the chart, writes its data (red team v8)', () => {
    expect(readable(own, confined, 'kubernetes.io/service-account-token')).toBe(false);
    expect(changeable(own, confined, 'kubernetes.io/service-account-token')).toBe(false);
    expect(readable(own, confined, 'Opaque')).toBe(true);
  });

  it('hides other releases, unlabelled objects and anything of another namespace', () => {
    expect(
      readable({ name: 'sh.helm.release.v1.other.v1', namespace: 'tenant-a', labels: { owner: 'helm', name: 'other' } }, confined),
    ).toBe(false);
    expect(readable({ name: 'db', namespace: 'tenant-a', labels: { owner: 'helm', name: 'web' } }, confined)).toBe(false);
    expect(readable({ name: 'db', namespace: 'tenant-a' }, confined)).toBe(false);
    expect(readable({ ...own, namespace: 'tenant-b' }, confined)).toBe(false);
    expect(
      readable(
        { namespace: 'tenant-a', annotations: { 'meta.helm.sh/release-name': 'web', 'meta.helm.sh/release-namespace': 'tenant-b' } },
        confined,
      ),
    ).toBe(false);
    expect(readable({ namespace: 'tenant-b', labels: { [LABEL.key]: 'true' } }, confined)).toBe(false);
    expect(readable({ namespace: 'tenant-a', labels: { [LABEL.key]: 'yes' } }, confined)).toBe(false);
  });
});

describe('changeable', () => {
  it("lets helm delete its hooks, which carry no owner, in the namespace only, and nobody else's objects", () => {
    const hook = {
      namespace: 'tenant-a',
      annotations: { 'helm.sh/hook': 'pre-install', 'helm.sh/hook-delete-policy': 'before-hook-creation' },
    };
    expect(changeable(hook, confined)).toBe(true);
    expect(readable(hook, confined)).toBe(false);
    expect(changeable({ ...hook, namespace: 'tenant-b' }, confined)).toBe(false);
    expect(changeable({ namespace: 'tenant-a', name: 'db' }, confined)).toBe(false);
  });
});

describe('decide under allowKinds', () => {
  const listed: GatewayPolicy = { ...impersonating, allowKinds: ['Deployment.apps', 'ConfigMap'] };
  it('lets helm write the listed kinds and refuses any other, even in its own namespace', () => {
    expect(decision('PATCH', '/apis/apps/v1/namespaces/tenant-a/deployments/web', listed)).toEqual({ action: 'forward' });
    expect(decision('POST', '/api/v1/namespaces/tenant-a/configmaps', listed)).toEqual({ action: 'forward' });
    const sa = decision('POST', '/api/v1/namespaces/tenant-a/serviceaccounts', listed);
    expect(sa).toMatchObject({ action: 'refuse' });
    expect(sa.action === 'refuse' && sa.message).toContain("ServiceAccount is not in this watch's allowKinds");
    expect(decision('POST', '/apis/evil.example.com/v1/namespaces/tenant-a/things', listed)).toMatchObject({ action: 'refuse' });
    expect(decision('GET', '/api/v1/namespaces/tenant-a/serviceaccounts/x', listed)).toEqual({ action: 'forward' });
  });
  it('always lets helm keep its own release records, and only those, when Secret is not listed', () => {
    expect(decision('PUT', '/api/v1/namespaces/tenant-a/secrets/sh.helm.release.v1.web.v2', listed)).toEqual({ action: 'check-target' });
    expect(decision('DELETE', '/api/v1/namespaces/tenant-a/secrets/sh.helm.release.v1.web.v1', listed)).toEqual({ action: 'check-target' });
    expect(decision('POST', '/api/v1/namespaces/tenant-a/secrets', listed)).toEqual({ action: 'check-storage-record' });
    expect(decision('PATCH', '/api/v1/namespaces/tenant-a/secrets/web-password', listed)).toMatchObject({ action: 'refuse' });
    expect(decision('PUT', '/api/v1/namespaces/tenant-a/secrets/sh.helm.release.v1.other.v1', listed)).toMatchObject({ action: 'refuse' });
    expect(
      isStorageRecord({ name: 'sh.helm.release.v1.web.v3', namespace: 'tenant-a', labels: { owner: 'helm', name: 'web' } }, listed),
    ).toBe(true);
    expect(isStorageRecord({ name: 'web-password', namespace: 'tenant-a', labels: { owner: 'helm', name: 'web' } }, listed)).toBe(false);
    expect(isStorageRecord({ name: 'sh.helm.release.v1.web.v3', namespace: 'tenant-a' }, listed)).toBe(false);
  });
});
