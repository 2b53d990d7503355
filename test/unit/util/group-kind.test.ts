import { describe, expect, it } from 'vitest';
import {
  apiVersionOf,
  groupOf,
  parseApiVersion,
  parseQualifiedKind,
  qualifiedKind,
  qualifiedKindOf,
  versionOf,
} from '../../../src/util/group-kind.js';

describe('apiVersion ↔ group and version', () => {
  it.each([
    ['v1', '', 'v1'],
    ['apps/v1', 'apps', 'v1'],
    ['rbac.authorization.k8s.io/v1', 'rbac.authorization.k8s.io', 'v1'],
    ['example.com/v1alpha1', 'example.com', 'v1alpha1'],
  ])('%s is group "%s", version %s, and back', (apiVersion, group, version) => {
    expect(parseApiVersion(apiVersion)).toEqual({ group, version });
    expect(groupOf(apiVersion)).toBe(group);
    expect(versionOf(apiVersion)).toBe(version);
    expect(apiVersionOf({ group, version })).toBe(apiVersion);
  });
});

describe('Kind.group', () => {
  it.each([
    ['v1', 'Secret', 'Secret', ''],
    ['apps/v1', 'Deployment', 'Deployment.apps', 'apps'],
    ['rbac.authorization.k8s.io/v1', 'ClusterRole', 'ClusterRole.rbac.authorization.k8s.io', 'rbac.authorization.k8s.io'],
  ])('%s %s is named %s, which parses back', (apiVersion, kind, qualified, group) => {
    expect(qualifiedKindOf(apiVersion, kind)).toBe(qualified);
    expect(qualifiedKind(kind, group)).toBe(qualified);
    expect(parseQualifiedKind(qualified)).toEqual({ kind, group });
  });
});
