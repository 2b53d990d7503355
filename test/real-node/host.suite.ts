/**
 * Last in the tier: `hack/cluster.sh down` leaves the host as the tier's global setup found it. Skipped
 * when the tier reused a cluster kept by an earlier run (KEEP_CLUSTER=1), which stays up.
 */
import { describe, inject, it } from 'vitest';
import { REAL_NODE_CLUSTER } from './global-setup.js';
import { hack } from './node.js';

describe.skipIf(inject('hostStateBefore') === '')('the host after the tier', () => {
  it('hack/cluster.sh down leaves the host as it found it (processes, mounts, netns, bridge, iptables, cgroups, sysctls, paths)', async () => {
    await hack('cluster.sh', 'down', '--name', REAL_NODE_CLUSTER);
    await hack('real-node.sh', 'check-host', inject('hostStateBefore'));
  });
});
