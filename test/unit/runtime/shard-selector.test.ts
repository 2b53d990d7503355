/**
 * The share as KEP-5866's shardSelector (docs/adr/0103), checked against a re-implementation of
 * the server's matching (k8s.io/apimachinery pkg/sharding: FNV-1a of the namespace, half-open hex
 * ranges, `HexLess`) and against the namespace buckets the coordinator assigns.
 */
import { describe, expect, it } from 'vitest';
import { bucketsOf, fnv1a64, namespaceBucket } from '../../../src/runtime/shard-assignment.js';
import { shardSelectorOf } from '../../../src/runtime/shard-selector.js';
import { probeShardFilter } from '../../../src/runtime/shard-probe.js';
import { BucketShare } from '../../../src/runtime/watch-share.js';

/** What kube-apiserver v1.36 does with a selector: parse `shardRange(field, 'start', 'end') || …` and match the hash. */
function serverMatches(selector: string, namespace: string): boolean {
  const re = /shardRange\(object\.metadata\.namespace, '(0x[0-9a-f]{16,17})', '(0x[0-9a-f]{16,17})'\)/g;
  const ranges = [...selector.matchAll(re)].map((m) => [m[1]!, m[2]!] as const);
  expect(selector.split(' || ')).toHaveLength(ranges.length);
  const hexLess = (a: string, b: string): boolean => (a.length === b.length ? a < b : a.length < b.length);
  const hash = `0x${fnv1a64(namespace).toString(16).padStart(16, '0')}`;
  return ranges.some(([start, end]) => !hexLess(hash, start) && hexLess(hash, end));
}

const namespaces = Array.from({ length: 400 }, (_, i) => `tenant-${i}`);

describe('shardSelectorOf', () => {
  it("uses the server's bounds: 16 hex digits, 0x10000000000000000 for the end of the space", () => {
    expect(shardSelectorOf([0], 2)).toBe("shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')");
    expect(shardSelectorOf([1], 2)).toBe("shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')");
  });

  it('merges adjacent buckets into one range, and is undefined for the whole space', () => {
    expect(shardSelectorOf([3, 1, 2], 64)).toBe("shardRange(object.metadata.namespace, '0x0400000000000000', '0x1000000000000000')");
    expect(shardSelectorOf([0, 2], 4)).toBe(
      "shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000') || " +
        "shardRange(object.metadata.namespace, '0x8000000000000000', '0xc000000000000000')",
    );
    expect(shardSelectorOf(Array.from({ length: 64 }, (_, b) => b))).toBeUndefined();
  });

  it('matches on the server exactly the namespaces of the replica the rendezvous gives them to', () => {
    const peers = ['replica-a', 'replica-b', 'replica-c'];
    const seen = new Map<string, string>();
    for (const peer of peers) {
      const mine = bucketsOf(peer, peers);
      const selector = shardSelectorOf(mine)!;
      for (const ns of namespaces) {
        expect(serverMatches(selector, ns)).toBe(mine.has(namespaceBucket(ns)));
        if (serverMatches(selector, ns)) {
          expect(seen.get(ns)).toBeUndefined();
          seen.set(ns, peer);
        }
      }
    }
    expect(seen.size).toBe(namespaces.length);
  });

  it('matches no namespace for an empty share (the server refuses an empty selector)', () => {
    const selector = shardSelectorOf([])!;
    expect(namespaces.some((ns) => serverMatches(selector, ns))).toBe(false);
  });

  it('refuses a bucket outside the space', () => {
    expect(() => shardSelectorOf([64])).toThrow(RangeError);
  });
});

describe('BucketShare', () => {
  it('covers the namespaces of its buckets and tells listeners only of changes', () => {
    const share = new BucketShare({ bucketOf: (ns) => namespaceBucket(ns) });
    let changes = 0;
    share.onChange(() => changes++);
    expect(share.mode()).toBe('client');
    const b = namespaceBucket('tenant-1');
    share.set([b]);
    share.set([b]);
    expect(changes).toBe(1);
    expect(share.covers('tenant-1')).toBe(true);
    expect(share.selector()).toBe(shardSelectorOf([b]));
    expect(namespaces.filter((ns) => share.covers(ns)).every((ns) => namespaceBucket(ns) === b)).toBe(true);
  });
});

describe('probeShardFilter', () => {
  const ns = 'operator-system';
  /** A server holding `count` Leases of `ns`; filtering or not. */
  const server =
    (filters: boolean, count = 3) =>
    (selector: string): Promise<number> =>
      Promise.resolve(!filters || serverMatches(selector, ns) ? count : 0);

  it('says server when the excluding list is empty and the including one is not', async () => {
    expect((await probeShardFilter(server(true), ns)).mode).toBe('server');
  });

  it('says client when the server ignores the selector', async () => {
    const verdict = await probeShardFilter(server(false), ns);
    expect(verdict).toMatchObject({ mode: 'client' });
    expect(verdict.reason).toContain('still listed 3');
  });

  it('says client when there is nothing to tell by, or the list fails', async () => {
    expect((await probeShardFilter(server(true, 0), ns)).mode).toBe('client');
    const failing = await probeShardFilter(() => Promise.reject(new Error('400 Bad Request')), ns);
    expect(failing).toEqual({ mode: 'client', reason: 'a sharded list failed: 400 Bad Request' });
  });
});
