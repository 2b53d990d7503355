import { describe, expect, it } from 'vitest';
import { applyWouldChange, changedPaths, driftedPaths } from '../../../../src/reconciler/drift/drift.js';

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
    const withSidecar = {
      ...deployment('nginx:1'),
      spec: {
        template: {
          spec: {
            containers: [
              { name: 'nginx', image: 'nginx:1' },
              { name: 'sidecar', image: 's' },
            ],
          },
        },
      },
    };
    expect(driftedPaths(deployment('nginx:1'), withSidecar)).toEqual(['.spec.template.spec.containers']);
    expect(driftedPaths({ rules: [{ verbs: ['get', 'list'] }] }, { rules: [{ verbs: ['get', 'list', 'delete'] }] })).toEqual([
      '.rules[0].verbs',
    ]);
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
    const live = {
      ...deployment('nginx:1'),
      metadata: { name: 'web', labels: { app: 'web' }, resourceVersion: '1', managedFields: [1] },
      status: { a: 1 },
    };
    const preview = {
      ...deployment('nginx:1'),
      metadata: { name: 'web', labels: { app: 'web' }, resourceVersion: '2', managedFields: [2] },
      status: { a: 2 },
    };
    expect(applyWouldChange(preview, live)).toBe(false);
  });

  it('is true when the apply would change a field', () => {
    expect(applyWouldChange(deployment('nginx:1'), deployment('nginx:2'))).toBe(true);
  });
});

describe('changedPaths', () => {
  const live = (image: string, extra: Record<string, unknown> = {}) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', labels: { app: 'web' }, resourceVersion: '7', generation: 3, managedFields: [{ manager: 'kubectl' }] },
    spec: { replicas: 2, template: { spec: { containers: [{ name: 'nginx', image, imagePullPolicy: 'IfNotPresent' }], ...extra } } },
    status: { replicas: 2 },
  });
  const after = (o: ReturnType<typeof live>) => ({
    ...o,
    metadata: { ...o.metadata, resourceVersion: '8', generation: 4, managedFields: [{ manager: 'helm' }] },
    status: { replicas: 1 },
  });

  it('names only what the apply changed, not what the chart sets and the server omits', () => {
    // The case: the chart sets hostNetwork: false, hostIPC: false and supplementalGroups: [];
    // driftedPaths flags them all (the server drops them), yet only the image changed.
    const desired = {
      ...deployment('nginx:1'),
      spec: {
        ...deployment('nginx:1').spec,
        template: {
          spec: {
            containers: [{ name: 'nginx', image: 'nginx:1' }],
            hostNetwork: false,
            hostIPC: false,
            securityContext: { supplementalGroups: [] },
          },
        },
      },
    };
    const before = live('nginx:evil');
    expect(driftedPaths(desired, before).length).toBeGreaterThan(1);
    expect(changedPaths(before, after(live('nginx:1')))).toEqual(['.spec.template.spec.containers[0].image']);
  });

  it.each([
    ['a changed scalar', live('a'), live('b'), ['.spec.template.spec.containers[0].image']],
    ['a removed field', live('a', { hostname: 'x' }), live('a'), ['.spec.template.spec.hostname']],
    ['an added field', live('a'), live('a', { hostname: 'x' }), ['.spec.template.spec.hostname']],
    [
      'a list of another length, as a whole',
      live('a', { tolerations: [{ key: 'a' }] }),
      live('a', { tolerations: [{ key: 'a' }, { key: 'b' }] }),
      ['.spec.template.spec.tolerations'],
    ],
    ['a scalar that became an object', live('a', { x: 1 }), live('a', { x: { y: 1 } }), ['.spec.template.spec.x']],
    ['nothing, when only server-managed metadata and status moved', live('a'), after(live('a')), []],
  ])('finds %s', (_what, before, later, expected) => {
    expect(changedPaths(before, later)).toEqual(expected);
  });

  it('agrees with applyWouldChange', () => {
    expect(applyWouldChange(after(live('a')), live('a'))).toBe(false);
    expect(applyWouldChange(live('b'), live('a'))).toBe(true);
  });
});
