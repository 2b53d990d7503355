import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseApiRequest } from '../../../src/k8s/gateway/api-request.js';
import { decide, type GatewayPolicy } from '../../../src/k8s/gateway/policy.js';
import { allowKinds } from '../../../src/scaffold/allow-kinds.js';
import { apiNames } from '../../../src/scaffold/names.js';
import { watchEntry } from '../../../src/scaffold/templates/api.js';

const o = (apiVersion: string, kind: string) => ({ apiVersion, kind });
const names = apiNames({ group: 'cache', version: 'v1alpha1', kind: 'Memcached' }, 'example.com');

describe('allowKinds (what create api writes into the watch)', () => {
  it('names each rendered kind once, as the helm gateway does: Kind for the core group, Kind.group otherwise', () => {
    const a = allowKinds(
      [
        o('apps/v1', 'Deployment'),
        o('v1', 'Service'),
        o('apps/v1', 'Deployment'),
        o('apiextensions.k8s.io/v1', 'CustomResourceDefinition'),
      ],
      [],
      false,
    );
    expect(a.kinds).toEqual(['CustomResourceDefinition.apiextensions.k8s.io', 'Deployment.apps', 'Service']);
    expect(a.optional).toEqual([]);
  });

  it('keeps the kinds only other values render apart, unless their RBAC is granted (--rbac=all-values)', () => {
    const optional = [{ when: 'ingress.enabled=true', objects: [o('networking.k8s.io/v1', 'Ingress'), o('v1', 'Service')] }];
    expect(allowKinds([o('v1', 'Service')], optional, false)).toEqual({
      kinds: ['Service'],
      optional: [{ when: 'ingress.enabled=true', kinds: ['Ingress.networking.k8s.io'] }],
    });
    expect(allowKinds([o('v1', 'Service')], optional, true)).toEqual({ kinds: ['Ingress.networking.k8s.io', 'Service'], optional: [] });
  });
});

describe('allowKinds and the helm gateway that enforces them', () => {
  it('agree: helm may create every kind create api listed, and no other', () => {
    const rendered = [
      { ...o('apps/v1', 'Deployment'), path: '/apis/apps/v1/namespaces/ns/deployments', namespaced: true },
      { ...o('v1', 'Service'), path: '/api/v1/namespaces/ns/services', namespaced: true },
      { ...o('rbac.authorization.k8s.io/v1', 'ClusterRole'), path: '/apis/rbac.authorization.k8s.io/v1/clusterroles', namespaced: false },
    ];
    const policy: GatewayPolicy = {
      namespace: 'ns',
      releases: ['web'],
      confineWrites: false,
      allowClusterScoped: [],
      readableLabel: { key: 'k', value: 'v' },
      allowKinds: allowKinds(rendered, [], false).kinds,
    };
    const create = (path: string, kind: string, namespaced: boolean) => decide(parseApiRequest('POST', path), policy, { kind, namespaced });
    for (const r of rendered) expect(create(r.path, r.kind, r.namespaced)).toEqual({ action: 'forward' });
    expect(create('/apis/networking.k8s.io/v1/namespaces/ns/ingresses', 'Ingress', true)).toMatchObject({ action: 'refuse' });
  });
});

describe('watchEntry', () => {
  it('writes allowKinds that watches.yaml loads, with the optional kinds as comments', () => {
    const text = watchEntry(names, 'memcached', {
      kinds: ['ConfigMap', 'Deployment.apps'],
      optional: [{ when: 'ingress.enabled=true', kinds: ['Ingress.networking.k8s.io'] }],
    });
    expect(parse(text)).toEqual([
      {
        group: 'cache.example.com',
        version: 'v1alpha1',
        kind: 'Memcached',
        chart: 'helm-charts/memcached',
        allowKinds: ['ConfigMap', 'Deployment.apps'],
      },
    ]);
    expect(text).toContain('  # with ingress.enabled=true the chart also renders:\n  # - Ingress.networking.k8s.io\n');
  });

  it('writes no allowKinds for a chart that renders nothing (an empty list would refuse every release)', () => {
    expect(parse(watchEntry(names, 'memcached', { kinds: [], optional: [] }))).toEqual([
      { group: 'cache.example.com', version: 'v1alpha1', kind: 'Memcached', chart: 'helm-charts/memcached' },
    ]);
  });
});
