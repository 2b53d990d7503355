import { describe, expect, it } from 'vitest';
import type { KubernetesObject } from '@kubernetes/client-node';
import { conflictsMessage, heldFields, pointerOf, settleHeld } from '../../../../src/reconciler/objects/upgrade-fields.js';
import type { DriftFights } from '../../../../src/reconciler/status/status.js';

const OURS = ['helm', 'helm-operator'];
const CA = ['webhooks', '0', 'clientConfig', 'caBundle'];
const rendered = (): Record<string, unknown> => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'MutatingWebhookConfiguration',
  metadata: { name: 'cfg' },
  webhooks: [{ name: 'a.example.com', timeoutSeconds: 10, clientConfig: { caBundle: '', service: { name: 'svc', namespace: 'ns' } } }],
});
/** The live object: the chart's fields helm's (Apply), `caBundle` with `owner` (none: helm's too). */
function live(caBundle: string, owner?: string): KubernetesObject {
  const ca = { 'f:webhooks': { 'k:{"name":"a.example.com"}': { 'f:clientConfig': { 'f:caBundle': {} } } } };
  const helm = {
    'f:webhooks': { 'k:{"name":"a.example.com"}': { 'f:timeoutSeconds': {}, 'f:clientConfig': { 'f:service': { 'f:name': {} } } } },
  };
  return {
    ...rendered(),
    webhooks: [{ name: 'a.example.com', timeoutSeconds: 30, clientConfig: { caBundle, service: { name: 'svc', namespace: 'ns' } } }],
    metadata: {
      name: 'cfg',
      managedFields: [
        {
          manager: 'helm',
          operation: 'Apply',
          apiVersion: 'admissionregistration.k8s.io/v1',
          fieldsType: 'FieldsV1',
          fieldsV1:
            owner === undefined
              ? {
                  ...helm,
                  ...ca,
                  'f:webhooks': {
                    'k:{"name":"a.example.com"}': {
                      'f:timeoutSeconds': {},
                      'f:clientConfig': { 'f:caBundle': {}, 'f:service': { 'f:name': {} } },
                    },
                  },
                }
              : helm,
        },
        ...(owner === undefined
          ? []
          : [{ manager: owner, operation: 'Update', apiVersion: 'admissionregistration.k8s.io/v1', fieldsType: 'FieldsV1', fieldsV1: ca }]),
      ],
    },
  } as KubernetesObject;
}
const caOf = (o: Record<string, unknown>): unknown =>
  ((o.webhooks as { clientConfig: Record<string, unknown> }[])[0]?.clientConfig ?? {}).caBundle;
const hasCa = (o: Record<string, unknown>): boolean =>
  Object.hasOwn((o.webhooks as { clientConfig: Record<string, unknown> }[])[0]?.clientConfig ?? {}, 'caBundle');

describe('settleHeld', () => {
  it('server-side: leaves out a held field another manager owns, so helm neither conflicts with it nor resets it; the rest as rendered', () => {
    const out = settleHeld(rendered(), live('injected', 'vault-injector'), [CA], { serverSide: true, ours: OURS });
    expect(hasCa(out)).toBe(false);
    expect((out.webhooks as { timeoutSeconds: number }[])[0]?.timeoutSeconds).toBe(10);
    expect((out.webhooks as { clientConfig: { service: unknown } }[])[0]?.clientConfig.service).toEqual({ name: 'svc', namespace: 'ns' });
  });

  it('server-side: gives a held field nobody else owns its live value (leaving out a field helm alone owns would delete it)', () => {
    const out = settleHeld(rendered(), live('by-hand-before', undefined), [CA], { serverSide: true, ours: OURS });
    expect(caOf(out)).toBe('by-hand-before');
  });

  it('server-side: a field a subresource’s writer owns (kubectl scale’s replicas) is someone else’s too', () => {
    const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 1, paused: false } };
    const scaled = {
      ...deployment,
      spec: { replicas: 3, paused: false },
      metadata: {
        name: 'web',
        managedFields: [
          { manager: 'helm', operation: 'Apply', apiVersion: 'apps/v1', fieldsV1: { 'f:spec': { 'f:paused': {} } } },
          {
            manager: 'kubectl-scale',
            operation: 'Update',
            apiVersion: 'apps/v1',
            subresource: 'scale',
            fieldsV1: { 'f:spec': { 'f:replicas': {} } },
          },
        ],
      },
    } as KubernetesObject;
    expect(settleHeld(deployment, scaled, [['spec', 'replicas']], { serverSide: true, ours: OURS }).spec).toStrictEqual({ paused: false });
  });

  it('client-side (helm 3, a forced replace): always the live value, never left out (a three-way merge would delete it)', () => {
    const out = settleHeld(rendered(), live('injected', 'vault-injector'), [CA], { serverSide: false, ours: OURS });
    expect(caOf(out)).toBe('injected');
  });

  it('applies an object that does not exist (created by this upgrade, or deleted) whole, and changes nothing without held fields', () => {
    const r = rendered();
    expect(settleHeld(r, undefined, [CA], { serverSide: true, ours: OURS })).toBe(r);
    expect(settleHeld(r, live('x', 'vault-injector'), [], { serverSide: true, ours: OURS })).toBe(r);
  });

  it('does not change what it is given', () => {
    const r = rendered();
    settleHeld(r, live('injected', 'vault-injector'), [CA], { serverSide: true, ours: OURS });
    expect(r).toEqual(rendered());
  });
});

describe('heldFields', () => {
  const object = { kind: 'MutatingWebhookConfiguration', namespace: '', name: 'cfg', labels: {} };
  const fights: DriftFights = {
    revision: 2,
    rules: 'r',
    fields: [
      {
        kind: 'MutatingWebhookConfiguration',
        name: 'cfg',
        path: '/webhooks/0/clientConfig/caBundle',
        manager: 'vault-injector',
        restores: 3,
        since: '2026-01-01T00:00:00Z',
        conflict: true,
      },
      // Counted, not (yet) a fight: an upgrade takes it as any other field.
      {
        kind: 'MutatingWebhookConfiguration',
        name: 'cfg',
        path: '/webhooks/0/timeoutSeconds',
        manager: 'kubectl-edit',
        restores: 1,
        since: '2026-01-01T00:00:00Z',
      },
    ],
  };
  it('the rules that target the object and the fights found on it', () => {
    expect(heldFields([{ paths: ['/spec/replicas'], target: { kind: 'Deployment' } }], fights, object)).toEqual([CA]);
    expect(heldFields([{ paths: ['/metadata/labels/a'] }], undefined, object)).toEqual([['metadata', 'labels', 'a']]);
    expect(heldFields([], fights, { ...object, name: 'other' })).toEqual([]);
  });
});

describe('pointerOf', () => {
  const body = {
    spec: { replicas: 2, template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 80, protocol: 'TCP' }] }] } } },
    webhooks: [{ name: 'b' }, { name: 'a' }],
    finalizers: ['x', 'y'],
  };
  it('resolves the API server’s field paths against the applied object', () => {
    expect(pointerOf('.spec.replicas', body)).toBe('/spec/replicas');
    expect(pointerOf('.webhooks[name="a"]', body)).toBe('/webhooks/1');
    expect(pointerOf('.spec.template.spec.containers[name="app"].ports[containerPort=80,protocol="TCP"]', body)).toBe(
      '/spec/template/spec/containers/0/ports/0',
    );
    expect(pointerOf('.finalizers[="y"]', body)).toBe('/finalizers/1');
  });
  it('is undefined for what it cannot resolve', () => {
    expect(pointerOf('.webhooks[name="c"].clientConfig', body)).toBeUndefined();
    expect(pointerOf('.spec.replicas.x', body)).toBeUndefined();
    expect(pointerOf('', body)).toBeUndefined();
  });
});

describe('conflictsMessage', () => {
  it('names object, field, manager, and the policy and the rule that settle it', () => {
    const message = conflictsMessage([
      {
        object: { kind: 'Deployment', namespace: 'ns', name: 'web' },
        field: '.spec.replicas',
        manager: 'kubectl',
        pointer: '/spec/replicas',
      },
    ]);
    expect(message).toBe(
      'upgrade stopped before helm changed anything: 1 field conflict under conflictPolicy: fail: Deployment ns/web: field /spec/replicas is owned by field manager "kubectl"; ' +
        'to take it back set conflictPolicy: force on the watch, to leave it to "kubectl" add the rule {paths: [/spec/replicas], target: {kind: Deployment, name: web}} to the watch\'s driftIgnore',
    );
  });
  it('shows three and counts the rest', () => {
    const c = { object: { kind: 'Deployment', namespace: 'ns', name: 'web' }, field: '.spec.x', manager: 'm' };
    const message = conflictsMessage([c, c, c, c, c]);
    expect(message).toContain('5 field conflicts');
    expect(message).toContain('…and 2 more');
    expect(message).toContain('field .spec.x is owned by field manager "m"');
    expect(message).toContain('add a driftIgnore rule naming that field');
  });
});
