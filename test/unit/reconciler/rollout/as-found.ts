import { viewOf, type ReadyView, type RolloutSeals } from '../../../../src/reconciler/rollout/rollout-seal.js';
import type { RolloutStatus } from '../../../../src/reconciler/status/status.js';

/** Believes every status as found: for tests of how the fields are read (rollout-seal.test.ts tests what is believed). */
export const AS_FOUND: Pick<RolloutSeals, 'believe'> = {
  believe: (_uid: string, rollout: RolloutStatus | undefined, ready: ReadyView | undefined) =>
    rollout === undefined ? undefined : viewOf(rollout, ready),
};
