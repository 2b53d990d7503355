import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { DesiredObject } from '../../../src/reconciler/release-object-types.js';
import type { ReleaseRecord } from '../../../src/reconciler/state.js';
import { liveOwnershipProblem, uninstallRoute, type RouteInput } from '../../../src/reconciler/uninstall-route.js';

const OWN = ['helm.sdk.operatorframework.io/uninstall-release'];

const object = (kind: string, name: string, namespace: string, annotations: Record<string, string> = {}): DesiredObject => ({
  entry: { apiVersion: 'v1', kind, namespace, name },
  rendered: { apiVersion: 'v1', kind, name, ...(namespace === '' ? {} : { namespace }), annotations, json: '{}' },
});

const rec = (revision: number, status: ReleaseRecord['status']): ReleaseRecord => ({ revision, status, labels: {} });

const input = (o: Partial<RouteInput> = {}): RouteInput => ({
  cr: { namespace: 'ns', finalizers: OWN },
  ownFinalizers: OWN,
  uninstallWait: false,
  impersonates: false,
  records: [rec(1, 'superseded'), rec(2, 'deployed')],
  kept: { revision: 2, deleteHooks: false, objects: [object('ConfigMap', 'a', 'ns'), object('Service', 'b', 'ns')] },
  ...o,
});

describe('uninstallRoute', () => {
  it('sends a release whose every object the CR owns to the collector, with every stored revision', () => {
    expect(uninstallRoute(input())).toStrictEqual({ by: 'collector', revisions: [1, 2] });
    // foregroundDeletion only orders the collector's work; a failed latest revision was rendered owned too.
    expect(uninstallRoute(input({ cr: { namespace: 'ns', finalizers: [...OWN, 'foregroundDeletion'] }, records: [rec(1, 'deployed'), rec(2, 'failed')] })).by).toBe('collector');
  });

  it('leaves an object helm keeps (resource-policy keep) out of the question, wherever it lives', () => {
    const kept = { revision: 2, deleteHooks: false, objects: [object('ConfigMap', 'a', 'ns'), object('Namespace', 'x', '', { 'helm.sh/resource-policy': 'keep' })] };
    expect(uninstallRoute(input({ kept })).by).toBe('collector');
  });

  it.each<[string, Partial<RouteInput>, RegExp]>([
    ['uninstall-wait', { uninstallWait: true }, /uninstall-wait/],
    ['a watch acting as its own ServiceAccount', { impersonates: true }, /ServiceAccount/],
    ['--cascade=orphan', { cr: { namespace: 'ns', finalizers: [...OWN, 'orphan'] } }, /another finalizer \(orphan\)/],
    ["another controller's finalizer", { cr: { namespace: 'ns', finalizers: [...OWN, 'example.com/cleanup'] } }, /example\.com\/cleanup/],
    ['nothing read by this process', { kept: undefined }, /not read/],
    ['no stored revision', { records: [] }, /no stored revision/],
    ['a newer revision than the one read', { records: [rec(2, 'deployed'), rec(3, 'failed')] }, /revision 3 is newer/],
    ['an operation in flight', { records: [rec(1, 'superseded'), rec(2, 'pending-upgrade')] }, /pending-upgrade/],
    ['delete hooks', { kept: { revision: 2, deleteHooks: true, objects: [] } }, /has delete hooks/],
    ['hooks not known', { kept: { revision: 2, deleteHooks: undefined, objects: [] } }, /not known/],
    ['a cluster-scoped object', { kept: { revision: 2, deleteHooks: false, objects: [object('ClusterRole', 'r', '')] } }, /ClusterRole\/r is outside/],
    ['an object in another namespace', { kept: { revision: 2, deleteHooks: false, objects: [object('ConfigMap', 'c', 'other')] } }, /ConfigMap\/c is outside/],
  ])('sends the release to helm for %s', (_, o, because) => {
    const route = uninstallRoute(input(o));
    expect(route.by).toBe('helm');
    expect(route.by === 'helm' ? route.because : '').toMatch(because);
  });
});

describe('liveOwnershipProblem', () => {
  const UID = 'uid-cr';
  const live = (...uids: string[]): KubernetesObject => ({ metadata: { ownerReferences: uids.map((uid) => ({ apiVersion: 'example.com/v1', kind: 'Nginx', name: 'cr', uid })) } });
  const objects = [object('ConfigMap', 'a', 'ns'), object('ConfigMap', 'kept', 'ns', { 'helm.sh/resource-policy': 'keep' })];

  it('accepts objects only the CR owns, a kept one it does not, and objects already gone', () => {
    expect(liveOwnershipProblem(objects, [live(UID), live()], UID)).toBeUndefined();
    expect(liveOwnershipProblem(objects, [undefined, undefined], UID)).toBeUndefined();
  });

  it('refuses an object another owner keeps alive, one the CR does not own, and a kept one it does', () => {
    expect(liveOwnershipProblem(objects, [live(UID, 'uid-other'), live()], UID)).toMatch(/ConfigMap\/a has another owner/);
    expect(liveOwnershipProblem(objects, [live('uid-earlier-instance'), live()], UID)).toMatch(/ConfigMap\/a is not owned/);
    expect(liveOwnershipProblem(objects, [live(UID), live(UID)], UID)).toMatch(/ConfigMap\/kept is kept by helm but owned/);
  });
});
