import { describe, expect, it } from 'vitest';
import type { V1ManagedFieldsEntry } from '@kubernetes/client-node';
import { EARLIER_VERSIONS_KEPT, VersionMemo } from '../../../src/k8s/version-memo.js';

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; managedFields?: V1ManagedFieldsEntry[] };
  spec?: Record<string, unknown>;
}

const obj = (name: string, resourceVersion: string | undefined, spec: Record<string, unknown> = {}): Obj => ({
  apiVersion: 'example.com/v1',
  kind: 'Nginx',
  metadata: { name, namespace: 'ns', ...(resourceVersion === undefined ? {} : { resourceVersion }) },
  spec,
});

describe('VersionMemo', () => {
  it('answers the version it kept, and nothing else it has not seen', () => {
    const memo = new VersionMemo<Obj>();
    memo.remember('ns/a', obj('a', '7', { replicaCount: 2 }));
    expect(memo.recall('ns/a', '7')).toEqual(obj('a', '7', { replicaCount: 2 }));
    // The cache holds a version this client never saw (someone else wrote, or one from before it
    // started): read it. Never a comparison of resourceVersions: '6' is not known to be older.
    expect(memo.recall('ns/a', '6')).toBeUndefined();
    expect(memo.recall('ns/a', '8')).toBeUndefined();
    // No version known: never a guess.
    expect(memo.recall('ns/a', undefined)).toBeUndefined();
    expect(memo.recall('ns/b', '7')).toBeUndefined();
  });

  it('answers its latest when the cache holds a version this client saw before it (our write not yet delivered)', () => {
    const memo = new VersionMemo<Obj>();
    memo.remember('ns/a', obj('a', '7'));
    memo.remember('ns/a', obj('a', '9', { replicaCount: 3 }));
    memo.remember('ns/a', obj('a', '12', { replicaCount: 4 }));
    for (const cached of ['7', '9', '12']) expect(memo.recall('ns/a', cached)?.spec, cached).toEqual({ replicaCount: 4 });
    expect(memo.recall('ns/a', '10')).toBeUndefined();
    expect(memo.size.objects).toBe(1);
  });

  it('knows a bounded number of earlier versions', () => {
    const memo = new VersionMemo<Obj>();
    const versions = Array.from({ length: EARLIER_VERSIONS_KEPT + 2 }, (_, i) => String(100 + i));
    for (const v of versions) memo.remember('ns/a', obj('a', v));
    const latest = versions.at(-1);
    // The oldest one has fallen out: a cache that far behind costs a GET.
    expect(memo.recall('ns/a', versions[0])).toBeUndefined();
    for (const v of versions.slice(1)) expect(memo.recall('ns/a', v)?.metadata.resourceVersion, v).toBe(latest);
    // Remembering the same version again (a no-op write) keeps what is known.
    memo.remember('ns/a', obj('a', latest));
    expect(memo.recall('ns/a', versions[1])?.metadata.resourceVersion).toBe(latest);
  });

  it('forgets the earlier versions with the object: a CR created again starts from nothing', () => {
    const memo = new VersionMemo<Obj>();
    memo.remember('ns/a', obj('a', '7'));
    memo.remember('ns/a', obj('a', '8'));
    memo.forget('ns/a');
    memo.remember('ns/a', obj('a', '20'));
    expect(memo.recall('ns/a', '7')).toBeUndefined();
    expect(memo.recall('ns/a', '20')).toBeDefined();
  });

  it('hands out copies: a caller that edits what it got cannot change what the next caller gets', () => {
    const memo = new VersionMemo<Obj>();
    memo.remember('ns/a', obj('a', '7', { replicaCount: 2 }));
    const first = memo.recall('ns/a', '7');
    if (first?.spec !== undefined) first.spec.replicaCount = 99;
    expect(memo.recall('ns/a', '7')?.spec).toEqual({ replicaCount: 2 });
  });

  it('leaves managedFields out, and keeps nothing of an object without a resourceVersion', () => {
    const memo = new VersionMemo<Obj>();
    const withFields = obj('a', '7');
    withFields.metadata.managedFields = [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': {} } }];
    memo.remember('ns/a', withFields);
    expect(memo.recall('ns/a', '7')?.metadata).toEqual({ name: 'a', namespace: 'ns', resourceVersion: '7' });
    memo.remember('ns/b', obj('b', undefined));
    expect(memo.size.objects).toBe(1);
  });

  it('does not keep an object too large, and forgets the version it had of it', () => {
    const memo = new VersionMemo<Obj>({ maxObjectLength: 200, maxTotalLength: 10_000 });
    memo.remember('ns/a', obj('a', '7'));
    memo.remember('ns/a', obj('a', '8', { blob: 'x'.repeat(500) }));
    expect(memo.recall('ns/a', '8')).toBeUndefined();
    // Nor the version before it: the latest is not kept, so nothing is known to be newer.
    expect(memo.recall('ns/a', '7')).toBeUndefined();
    expect(memo.size).toEqual({ objects: 0, length: 0 });
  });

  it('stays within its total, dropping the least recently used first', () => {
    // An entry counts its JSON and its version string.
    const one = JSON.stringify(obj('a', '1')).length + 1;
    const memo = new VersionMemo<Obj>({ maxObjectLength: 1000, maxTotalLength: 3 * one });
    memo.remember('ns/a', obj('a', '1'));
    memo.remember('ns/b', obj('b', '1'));
    memo.remember('ns/c', obj('c', '1'));
    // a is used, so b is now the coldest.
    expect(memo.recall('ns/a', '1')).toBeDefined();
    memo.remember('ns/d', obj('d', '1'));
    expect(memo.size.objects).toBe(3);
    expect(memo.size.length).toBeLessThanOrEqual(3 * one);
    expect(memo.recall('ns/b', '1')).toBeUndefined();
    for (const kept of ['a', 'c', 'd']) expect(memo.recall(`ns/${kept}`, '1'), kept).toBeDefined();
  });

  it('forgets an object', () => {
    const memo = new VersionMemo<Obj>();
    memo.remember('ns/a', obj('a', '7'));
    memo.forget('ns/a');
    memo.forget('ns/never');
    expect(memo.recall('ns/a', '7')).toBeUndefined();
    expect(memo.size).toEqual({ objects: 0, length: 0 });
  });
});
