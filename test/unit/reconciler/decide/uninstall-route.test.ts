import { describe, expect, it } from 'vitest';
import type { DesiredObject } from '../../../../src/reconciler/objects/release-object-types.js';
import type { ReleaseRecord } from '../../../../src/reconciler/decide/state.js';
import { uninstallRoute, type RouteInput } from '../../../../src/reconciler/decide/uninstall-route.js';

const object = (kind: string, name: string, namespace: string, annotations: Record<string, string> = {}): DesiredObject => ({
  entry: { apiVersion: 'v1', kind, namespace, name },
  rendered: { apiVersion: 'v1', kind, name, ...(namespace === '' ? {} : { namespace }), annotations, json: '{}' },
});

const rec = (revision: number, status: ReleaseRecord['status']): ReleaseRecord => ({ revision, status, labels: {} });

const OBJECTS = [
  object('ConfigMap', 'a', 'ns'),
  object('ClusterRole', 'r', ''),
  object('Secret', 'kept', 'ns', { 'helm.sh/resource-policy': 'keep' }),
];

const input = (o: Partial<RouteInput> = {}): RouteInput => ({
  impersonates: false,
  helmRunning: false,
  records: [rec(1, 'superseded'), rec(2, 'deployed')],
  kept: { revision: 2, deleteHooks: false, objects: OBJECTS },
  ...o,
});

describe('uninstallRoute', () => {
  it('has the operator delete what helm would: every object but the kept ones, wherever they live, and every stored revision', () => {
    const route = uninstallRoute(input());
    expect(route).toStrictEqual({ by: 'operator', objects: [OBJECTS[0], OBJECTS[1]], revisions: [1, 2] });
    // A failed latest revision is what helm's uninstall deletes too.
    expect(uninstallRoute(input({ records: [rec(1, 'deployed'), rec(2, 'failed')] })).by).toBe('operator');
  });

  it.each<[string, Partial<RouteInput>, RegExp]>([
    ['a watch acting as its own ServiceAccount', { impersonates: true }, /ServiceAccount/],
    ['a helm process still on it', { helmRunning: true }, /helm process/],
    ['nothing read by this process', { kept: undefined }, /not read/],
    ['no stored revision', { records: [] }, /no stored revision/],
    ['a newer revision than the one read', { records: [rec(2, 'deployed'), rec(3, 'failed')] }, /revision 3 is newer/],
    ['an operation in flight', { records: [rec(1, 'superseded'), rec(2, 'pending-upgrade')] }, /pending-upgrade/],
    ['delete hooks', { kept: { revision: 2, deleteHooks: true, objects: [] } }, /has delete hooks/],
    ['hooks not known', { kept: { revision: 2, deleteHooks: undefined, objects: [] } }, /not known/],
  ])('sends the release to helm for %s', (_, o, because) => {
    const route = uninstallRoute(input(o));
    expect(route.by).toBe('helm');
    expect(route.by === 'helm' ? route.because : '').toMatch(because);
  });
});
