import { describe, expect, it } from 'vitest';
import {
  claimedFields,
  intersect,
  subtract,
  takeOver,
  union,
  type FieldSet,
  type ManagedFieldsEntry,
} from '../../../../src/reconciler/objects/field-takeover.js';

const claimant = { manager: 'helm', apiVersion: 'v1', time: '2026-11-23T00:00:00Z' };
const entry = (manager: string, fieldsV1: FieldSet, operation = 'Update', apiVersion = 'v1'): ManagedFieldsEntry => ({
  manager,
  operation,
  apiVersion,
  time: '2026-11-22T00:00:00Z',
  fieldsType: 'FieldsV1',
  fieldsV1,
});

describe('set operations on FieldsV1', () => {
  const a: FieldSet = { 'f:spec': { 'f:replicas': {}, 'f:template': { 'f:metadata': {} } } };
  const b: FieldSet = { 'f:spec': { 'f:replicas': {} }, 'f:metadata': { 'f:labels': {} } };

  it('unions, intersects and subtracts nested sets', () => {
    expect(union([a, b])).toEqual({ 'f:spec': { 'f:replicas': {}, 'f:template': { 'f:metadata': {} } }, 'f:metadata': { 'f:labels': {} } });
    expect(intersect(a, b)).toEqual({ 'f:spec': { 'f:replicas': {} } });
    expect(subtract(a, b)).toEqual({ 'f:spec': { 'f:template': { 'f:metadata': {} } } });
  });

  it('treats a leaf of the second set as covering everything below it', () => {
    const whole: FieldSet = { 'f:spec': {} };
    expect(intersect(a, whole)).toEqual(a);
    expect(subtract(a, whole)).toEqual({});
  });
});

describe('claimedFields', () => {
  it('claims the fields the manifest sets and nothing else', () => {
    const owned: FieldSet = { 'f:data': { 'f:greeting': {}, 'f:extra': {} }, 'f:metadata': { 'f:labels': { 'f:team': {} } } };
    expect(claimedFields({ data: { greeting: 'hello' } }, {}, owned)).toEqual({ 'f:data': { 'f:greeting': {} } });
  });

  it('claims an associative-list entry whose key was edited in place, not one added next to the chart entries', () => {
    const desired = { spec: { ports: [{ port: 8080, targetPort: 8080 }] } };
    const live = { spec: { ports: [{ port: 9999, protocol: 'TCP', targetPort: 8080 }] } };
    const edited = { '.': {}, 'f:port': {}, 'f:protocol': {}, 'f:targetPort': {} };
    const owned: FieldSet = { 'f:spec': { 'f:ports': { 'k:{"port":9999,"protocol":"TCP"}': edited } } };
    expect(claimedFields(desired, live, owned)).toEqual({ 'f:spec': { 'f:ports': { 'k:{"port":9999,"protocol":"TCP"}': edited } } });

    const withSidecar = {
      spec: {
        containers: [
          { name: 'app', image: 'a' },
          { name: 'proxy', image: 'p' },
        ],
      },
    };
    const ownedSidecar: FieldSet = {
      'f:spec': {
        'f:containers': { 'k:{"name":"app"}': { 'f:image': {} }, 'k:{"name":"proxy"}': { '.': {}, 'f:image': {}, 'f:name': {} } },
      },
    };
    expect(claimedFields({ spec: { containers: [{ name: 'app', image: 'a' }] } }, withSidecar, ownedSidecar)).toEqual({
      'f:spec': { 'f:containers': { 'k:{"name":"app"}': { 'f:image': {} } } },
    });
  });

  it('matches list-map keys the API server defaulted (a port without protocol)', () => {
    const owned: FieldSet = { 'f:ports': { 'k:{"port":8080,"protocol":"TCP"}': { 'f:targetPort': {} } } };
    expect(claimedFields({ ports: [{ port: 8080, targetPort: 'http' }] }, { ports: [{ port: 8080, protocol: 'TCP' }] }, owned)).toEqual(
      owned,
    );
  });

  it('claims set-list values and atomic lists as a whole', () => {
    const owned: FieldSet = { 'f:finalizers': { 'v:"a"': {}, 'v:"b"': {} }, 'f:args': {} };
    expect(claimedFields({ finalizers: ['a'], args: ['x'] }, {}, owned)).toEqual({ 'f:finalizers': { 'v:"a"': {} }, 'f:args': {} });
  });

  it('claims nothing for an empty map the chart writes', () => {
    expect(claimedFields({ metadata: { annotations: {} } }, {}, { 'f:metadata': { 'f:annotations': { 'f:x': {} } } })).toEqual({});
  });
});

describe('takeOver', () => {
  const desired = { apiVersion: 'v1', kind: 'ConfigMap', data: { greeting: 'hello' } };

  it('moves claimed fields from other managers into the claimant Apply entry, keeping the rest', () => {
    const entries = [
      entry('helm', { 'f:data': { 'f:mode': {} } }, 'Apply'),
      entry('kubectl-patch', { 'f:data': { 'f:greeting': {}, 'f:extra': {} } }),
      entry('helm-operator', { 'f:metadata': { 'f:labels': { 'f:chart': {} } } }),
    ];
    expect(takeOver(entries, desired, {}, claimant)).toEqual([
      entry('helm', { 'f:data': { 'f:mode': {}, 'f:greeting': {} } }, 'Apply'),
      entry('kubectl-patch', { 'f:data': { 'f:extra': {} } }),
      entry('helm-operator', { 'f:metadata': { 'f:labels': { 'f:chart': {} } } }),
    ]);
  });

  it('creates the Apply entry (helm v3 owns its fields with Update) and drops an emptied entry', () => {
    const entries = [entry('helm', { 'f:data': { 'f:greeting': {} } }), entry('kubectl-edit', { 'f:data': { 'f:greeting': {} } })];
    expect(takeOver(entries, desired, {}, claimant)).toEqual([
      entry('helm', { 'f:data': { 'f:greeting': {} } }),
      {
        manager: 'helm',
        operation: 'Apply',
        apiVersion: 'v1',
        time: claimant.time,
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:greeting': {} } },
      },
    ]);
  });

  it('needs no write when no other manager owns a claimed field, and ignores other API versions', () => {
    expect(takeOver([entry('helm', { 'f:data': { 'f:greeting': {} } }, 'Apply')], desired, {}, claimant)).toBeUndefined();
    expect(takeOver([entry('other', { 'f:data': { 'f:greeting': {} } }, 'Update', 'v2')], desired, {}, claimant)).toBeUndefined();
  });
});
