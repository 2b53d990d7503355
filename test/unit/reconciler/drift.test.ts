import { describe, expect, it } from 'vitest';
import { applyWouldChange, driftedPaths } from '../../../src/reconciler/drift.js';

const deployment = (image: string, replicas?: number) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: {
    ...(replicas === undefined ? {} : { replicas }),
    template: { spec: { containers: [{ name: 'nginx', image }] } },
  },
});

describe('driftedPaths', () => {
  it('finds nothing when the live object contains everything the chart set', () => {
    const live = {
      ...deployment('nginx:1'),
      metadata: { name: 'web', labels: { app: 'web', extra: 'x' }, resourceVersion: '9', uid: 'u' },
      spec: { replicas: 4, template: { spec: { containers: [{ name: 'nginx', image: 'nginx:1', imagePullPolicy: 'IfNotPresent' }] } } },
      status: { replicas: 4 },
    };
    expect(driftedPaths(deployment('nginx:1'), live)).toEqual([]);
  });

  it('suspects a list with more entries than the chart set (a sidecar, or a verb added to an atomic list), for the dry run to judge', () => {
    const withSidecar = { ...deployment('nginx:1'), spec: { template: { spec: { containers: [{ name: 'nginx', image: 'nginx:1' }, { name: 'sidecar', image: 's' }] } } } };
    expect(driftedPaths(deployment('nginx:1'), withSidecar)).toEqual(['.spec.template.spec.containers']);
    expect(driftedPaths({ rules: [{ verbs: ['get', 'list'] }] }, { rules: [{ verbs: ['get', 'list', 'delete'] }] })).toEqual(['.rules[0].verbs']);
  });

  it('names each field the chart sets that differs', () => {
    expect(driftedPaths(deployment('nginx:1', 2), deployment('nginx:evil', 5))).toEqual([
      '.spec.replicas',
      '.spec.template.spec.containers[0].image',
    ]);
  });

  it('treats a missing list item or a removed label as drift', () => {
    const live = { ...deployment('nginx:1'), metadata: { name: 'web', labels: {} }, spec: { template: { spec: { containers: [] } } } };
    expect(driftedPaths(deployment('nginx:1'), live)).toEqual(['.metadata.labels.app', '.spec.template.spec.containers']);
  });

  it('ignores status and server-managed metadata in the desired object', () => {
    const desired = { ...deployment('nginx:1'), metadata: { name: 'web', labels: { app: 'web' }, generation: 3 }, status: { x: 1 } };
    expect(driftedPaths(desired, deployment('nginx:1'))).toEqual([]);
  });

  it('treats a desired null as absent', () => {
    expect(driftedPaths({ a: null }, {})).toEqual([]);
    expect(driftedPaths({ a: null }, { a: 1 })).toEqual(['.a']);
  });
});

describe('applyWouldChange', () => {
  it('is false when only server-managed metadata and status differ', () => {
    const live = { ...deployment('nginx:1'), metadata: { name: 'web', labels: { app: 'web' }, resourceVersion: '1', managedFields: [1] }, status: { a: 1 } };
    const preview = { ...deployment('nginx:1'), metadata: { name: 'web', labels: { app: 'web' }, resourceVersion: '2', managedFields: [2] }, status: { a: 2 } };
    expect(applyWouldChange(preview, live)).toBe(false);
  });

  it('is true when the apply would change a field', () => {
    expect(applyWouldChange(deployment('nginx:1'), deployment('nginx:2'))).toBe(true);
  });
});
