/**
 * The share as KEP-5866's shardSelector (docs/adr/0103, 0110), checked against a re-implementation of
 * the server's matching (k8s.io/apimachinery pkg/sharding: FNV-1a of the namespace, half-open hex
 * ranges, `HexLess`) and against the namespace buckets the coordinator assigns.
 */
import { describe, expect, it } from 'vitest';
import { bucketsOf, fnv1a64, namespaceBucket } from '../../../src/runtime/shard-assignment.js';
import { MAX_SHARD_RANGES, rangesAround, rangesInclude, shardSelectorOf, shareRanges } from '../../../src/runtime/shard-selector.js';
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
    expect(shardSelectorOf([{ start: 0n, end: 1n << 63n }])).toBe(
      "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')",
    );
    expect(shardSelectorOf([{ start: 1n << 63n, end: 1n << 64n }])).toBe(
      "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
    );
    expect(() => shardSelectorOf([{ start: 5n, end: 5n }])).toThrow(RangeError);
  });

  it('matches no namespace for an empty share (the server refuses an empty selector)', () => {
    const selector = shardSelectorOf([]);
    expect(namespaces.some((ns) => serverMatches(selector, ns))).toBe(false);
  });
});

describe('shareRanges', () => {
  const peers = ['replica-a', 'replica-b', 'replica-c'];
  const ownedBy = (peer: string): ((ns: string) => boolean) => {
    const mine = bucketsOf(peer, peers);
    return (ns) => mine.has(namespaceBucket(ns));
  };

  it('matches on the server exactly the namespaces of the replica the buckets give them to, when few enough', () => {
    const few = namespaces.slice(0, 40);
    const seen = new Map<string, string>();
    for (const peer of peers) {
      const owns = ownedBy(peer);
      const ranges = shareRanges(
        few.filter(owns),
        few.filter((ns) => !owns(ns)),
        64,
      );
      const selector = shardSelectorOf(ranges);
      for (const ns of few) {
        expect(serverMatches(selector, ns), `${peer} ${ns}`).toBe(owns(ns));
        expect(rangesInclude(ranges, ns)).toBe(owns(ns));
        if (owns(ns)) {
          expect(seen.get(ns)).toBeUndefined();
          seen.set(ns, peer);
        }
      }
    }
    expect(seen.size).toBe(few.length);
  });

  it('stays within the cap by letting in the fewest others, and never leaves an owned namespace out', () => {
    for (const peer of peers) {
      const owns = ownedBy(peer);
      const ranges = shareRanges(
        namespaces.filter(owns),
        namespaces.filter((ns) => !owns(ns)),
      );
      expect(ranges.length).toBeLessThanOrEqual(MAX_SHARD_RANGES);
      const selector = shardSelectorOf(ranges);
      expect(selector.split(' || ')).toHaveLength(ranges.length);
      for (const ns of namespaces.filter(owns)) expect(serverMatches(selector, ns)).toBe(true);
      // 400 namespaces, a third owned, 32 ranges: well under all of the others come along.
      const others = namespaces.filter((ns) => !owns(ns) && serverMatches(selector, ns)).length;
      expect(others).toBeLessThan(namespaces.filter((ns) => !owns(ns)).length / 2);
    }
  });

  it('merges owned namespaces next to each other in hash order into one range', () => {
    const sorted = [...namespaces].sort((a, b) => (fnv1a64(a) < fnv1a64(b) ? -1 : 1));
    const ranges = shareRanges(sorted.slice(10, 15), [...sorted.slice(0, 10), ...sorted.slice(15, 20)]);
    expect(ranges).toEqual([{ start: fnv1a64(sorted[10]!), end: fnv1a64(sorted[14]!) + 1n }]);
    expect(shareRanges([], namespaces)).toEqual([]);
  });

  it('asks for one namespace and for everything else (the probe)', () => {
    const { excluding, including } = rangesAround('operator-system');
    expect(serverMatches(shardSelectorOf(excluding), 'operator-system')).toBe(false);
    expect(serverMatches(shardSelectorOf(including), 'operator-system')).toBe(true);
    for (const ns of namespaces) expect(serverMatches(shardSelectorOf(excluding), ns)).toBe(true);
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
    expect(namespaces.filter((ns) => share.covers(ns)).every((ns) => namespaceBucket(ns) === b)).toBe(true);
    // Client mode: what the selector would name does not matter, so learning relists nothing.
    share.learn('tenant-1');
    share.set([b]);
    expect(changes).toBe(1);
  });

  it('server mode: names the owned namespaces it has learnt, from the next set on', () => {
    const share = new BucketShare({ bucketOf: (ns) => namespaceBucket(ns), mode: 'server' });
    let changes = 0;
    share.onChange(() => changes++);
    const mine = namespaceBucket('tenant-1');
    const theirs = namespaces.find((ns) => namespaceBucket(ns) !== mine)!;
    share.set([mine]);
    expect(changes).toBe(1);
    expect(serverMatches(share.selector(), 'tenant-1')).toBe(false);
    share.learn('tenant-1');
    share.learn(theirs);
    // Not yet named: the cache does not speak for it, readers ask the API server.
    expect(share.covers('tenant-1')).toBe(false);
    share.set([mine]);
    expect(changes).toBe(2);
    expect(serverMatches(share.selector(), 'tenant-1')).toBe(true);
    expect(serverMatches(share.selector(), theirs)).toBe(false);
    expect(share.covers('tenant-1')).toBe(true);
    expect(share.covers(theirs)).toBe(false);
    // Learning a namespace of another replica's, or one already named, changes nothing.
    share.learn(namespaces.filter((ns) => namespaceBucket(ns) !== mine)[1]!);
    share.learn('tenant-1');
    share.set([mine]);
    expect(changes).toBe(2);
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
