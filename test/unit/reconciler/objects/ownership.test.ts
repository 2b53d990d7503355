import { describe, expect, it } from 'vitest';
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  CHART_LABEL,
  createdOwnershipPatch,
  ownersOf,
  ownershipPatch,
  PRIMARY_RESOURCE,
  PRIMARY_RESOURCE_TYPE,
  type Owner,
} from '../../../../src/reconciler/objects/ownership.js';

const owner: Owner = {
  apiVersion: 'example.com/v1alpha1',
  kind: 'Nginx',
  group: 'example.com',
  namespace: 'demo',
  name: 'web',
  uid: 'uid-1',
};
const cm = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'demo', name: 'web-nginx' };
const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', namespace: '', name: 'reader' };
const live = (metadata: KubernetesObject['metadata']): KubernetesObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata });

describe('ownershipPatch', () => {
  it('adds a controller owner reference and the chart label in the owner namespace', () => {
    expect(ownershipPatch({ entry: cm, owner, chartName: 'nginx', live: live({ name: 'web-nginx' }) })).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'web-nginx',
        namespace: 'demo',
        labels: { [CHART_LABEL]: 'nginx' },
        ownerReferences: [
          { apiVersion: 'example.com/v1alpha1', kind: 'Nginx', name: 'web', uid: 'uid-1', controller: true, blockOwnerDeletion: true },
        ],
      },
    });
  });

  it('does not claim the controller role another owner holds', () => {
    const other = { apiVersion: 'apps/v1', kind: 'X', name: 'x', uid: 'uid-2', controller: true };
    const patch = ownershipPatch({ entry: cm, owner, chartName: 'nginx', live: live({ name: 'web-nginx', ownerReferences: [other] }) });
    // The whole list is sent (merge patch), the other owner first and untouched.
    expect(patch?.metadata?.ownerReferences).toEqual([other, expect.objectContaining({ uid: 'uid-1', controller: false })]);
  });

  it('uses owner annotations for cluster-scoped objects and for helm.sh/resource-policy: keep', () => {
    const annotations = { [PRIMARY_RESOURCE]: 'demo/web', [PRIMARY_RESOURCE_TYPE]: 'Nginx.example.com' };
    expect(ownershipPatch({ entry: role, owner, chartName: 'nginx', live: undefined })?.metadata?.annotations).toEqual(annotations);
    const kept = ownershipPatch({
      entry: cm,
      owner,
      chartName: 'nginx',
      live: undefined,
      renderedAnnotations: { 'helm.sh/resource-policy': 'keep' },
    });
    expect(kept?.metadata?.ownerReferences).toBeUndefined();
    expect(kept?.metadata?.annotations).toEqual(annotations);
  });

  it('returns nothing when the object already carries the ownership', () => {
    const owned = live({
      name: 'web-nginx',
      labels: { [CHART_LABEL]: 'nginx' },
      ownerReferences: [{ apiVersion: 'example.com/v1alpha1', kind: 'Nginx', name: 'web', uid: 'uid-1' }],
    });
    expect(ownershipPatch({ entry: cm, owner, chartName: 'nginx', live: owned })).toBeUndefined();
  });
});

describe('createdOwnershipPatch', () => {
  it('adds the chart label and the owner reference, only where the object has no owner references', () => {
    expect(createdOwnershipPatch({ entry: cm, owner, chartName: 'nginx' })).toEqual([
      { op: 'add', path: '/metadata/labels/helm.sdk.operatorframework.io~1chart', value: 'nginx' },
      { op: 'test', path: '/metadata/ownerReferences', value: null },
      {
        op: 'add',
        path: '/metadata/ownerReferences',
        value: [
          { apiVersion: 'example.com/v1alpha1', kind: 'Nginx', name: 'web', uid: 'uid-1', controller: true, blockOwnerDeletion: true },
        ],
      },
    ]);
  });

  it('adds owner annotations, and no reference, where ownershipPatch would', () => {
    const kept = { entry: cm, owner, chartName: 'nginx', renderedAnnotations: { 'helm.sh/resource-policy': 'keep' } };
    for (const input of [{ entry: role, owner, chartName: 'nginx' }, kept]) {
      const ops = createdOwnershipPatch(input);
      expect(ops).toEqual([
        { op: 'add', path: '/metadata/labels/helm.sdk.operatorframework.io~1chart', value: 'nginx' },
        { op: 'add', path: '/metadata/annotations/operator-sdk~1primary-resource', value: 'demo/web' },
        { op: 'add', path: '/metadata/annotations/operator-sdk~1primary-resource-type', value: 'Nginx.example.com' },
      ]);
      expect(ownershipPatch({ ...input, live: undefined })?.metadata?.annotations).toEqual({
        [PRIMARY_RESOURCE]: 'demo/web',
        [PRIMARY_RESOURCE_TYPE]: 'Nginx.example.com',
      });
    }
  });
});

describe('ownersOf', () => {
  it('reads owner references and owner annotations', () => {
    const obj = live({
      name: 'x',
      namespace: 'demo',
      ownerReferences: [{ apiVersion: 'example.com/v1alpha1', kind: 'Nginx', name: 'web', uid: 'u' }],
      annotations: { [PRIMARY_RESOURCE]: 'other/app', [PRIMARY_RESOURCE_TYPE]: 'Reader.test.example.com' },
    });
    expect(ownersOf(obj)).toEqual([
      { type: 'Nginx', apiVersion: 'example.com/v1alpha1', namespace: 'demo', name: 'web' },
      { type: 'Reader.test.example.com', namespace: 'other', name: 'app' },
    ]);
  });
});
