import { describe, expect, it } from 'vitest';
import { shardsText } from '../../../src/cli/shards.js';
import { LEGACY_SHARD_HASH, SHARD_HASH } from '../../../src/runtime/shard-assignment.js';
import type { ShardGroupView } from '../../../src/runtime/shard-view.js';

const NOW = Date.parse('2026-12-02T08:00:00Z');
const at = (agoS: number): string => new Date(NOW - agoS * 1000).toISOString();

describe('helm-operator shards: the printed report', () => {
  it('lists replicas, their buckets as ranges, the handoffs and a namespace’s owner', () => {
    const view: ShardGroupView = {
      group: 'ops',
      buckets: 8,
      balancedBy: 'crs',
      peers: [
        {
          identity: 'pod-a_1',
          lease: 'ops-peer-1',
          state: 'live',
          hash: SHARD_HASH,
          renewed: at(1),
          holds: [0, 1, 2, 5],
          wants: [0, 1, 2],
          load: 40,
        },
        {
          identity: 'pod-b_2',
          lease: 'ops-peer-2',
          state: 'live',
          hash: SHARD_HASH,
          renewed: at(3),
          holds: [3, 4],
          wants: [3, 4, 5, 6, 7],
          load: 38,
        },
        { identity: 'pod-c_3', lease: 'ops-peer-3', state: 'expired', hash: SHARD_HASH, renewed: at(40), holds: [7], wants: [] },
        { identity: '', lease: 'ops-peer-4', state: 'released', hash: SHARD_HASH, renewed: at(90), holds: [], wants: [] },
      ],
      handoffs: [
        { bucket: 5, state: 'draining', holder: 'pod-a_1', epoch: 2, to: 'pod-b_2' },
        { bucket: 6, state: 'free', holder: '', epoch: 3, to: 'pod-b_2' },
        { bucket: 7, state: 'orphaned', holder: 'pod-c_3', epoch: 1, to: 'pod-b_2' },
      ],
      namespace: { namespace: 'tenant-x', bucket: 5, holder: 'pod-a_1', epoch: 2, owner: 'pod-b_2' },
    };
    expect(shardsText(view, NOW).split('\n')).toEqual([
      'shard group ops: 2 live replicas, 7 of 8 buckets held, 3 handoffs under way, shares balanced by CRs (docs/adr/0113)',
      'REPLICA  STATE  RENEWED  HOLDS  CRS  BUCKETS',
      'pod-a_1  live  1s ago  4  40  0-2,5',
      'pod-b_2  live  3s ago  2  38  3-4',
      'pod-c_3  expired  40s ago  1  -  7',
      '-  released  90s ago  0  -  -',
      'handoff: bucket 5 draining from pod-a_1 (epoch 2), to pod-b_2',
      'handoff: bucket 6 free, to pod-b_2',
      'handoff: bucket 7 orphaned from pod-c_3 (epoch 1), to pod-b_2',
      'namespace tenant-x: bucket 5, held by pod-a_1 (epoch 2), moving to pod-b_2',
    ]);
  });

  it('says a settled group in one line per replica, and a namespace held by its owner', () => {
    const view: ShardGroupView = {
      group: 'ops',
      buckets: 4,
      balancedBy: 'buckets',
      peers: [
        {
          identity: 'solo',
          lease: 'ops-peer-1',
          state: 'live',
          hash: SHARD_HASH,
          renewed: at(0),
          holds: [0, 1, 2, 3],
          wants: [0, 1, 2, 3],
        },
      ],
      handoffs: [],
      namespace: { namespace: 'n', bucket: 2, holder: 'solo', epoch: 1, owner: 'solo' },
    };
    expect(shardsText(view, NOW)).toBe(
      [
        'shard group ops: 1 live replica, 4 of 4 buckets held, 0 handoffs under way, shares balanced by bucket count',
        'REPLICA  STATE  RENEWED  HOLDS  CRS  BUCKETS',
        'solo  live  0s ago  4  -  0-3',
        'namespace n: bucket 2, held by solo (epoch 1)',
      ].join('\n'),
    );
  });

  it('says when a live replica runs another bucket function, and that the others wait for it', () => {
    const view: ShardGroupView = {
      group: 'ops',
      buckets: 4,
      balancedBy: 'buckets',
      peers: [
        { identity: 'new', lease: 'ops-peer-1', state: 'live', hash: SHARD_HASH, renewed: at(0), holds: [], wants: [0, 1] },
        {
          identity: 'old',
          lease: 'ops-peer-2',
          state: 'live',
          hash: LEGACY_SHARD_HASH,
          renewed: at(1),
          holds: [0, 1, 2, 3],
          wants: [2, 3],
        },
      ],
      handoffs: [],
    };
    expect(shardsText(view, NOW).split('\n')).toContain(
      `bucket functions differ: old runs ${LEGACY_SHARD_HASH}; replicas on ${SHARD_HASH} own nothing until they leave (docs/adr/0110)`,
    );
  });
});
