/** What a CR's status says, as the per-CR series read it (telemetry/cr-metrics.ts). */
import { CR_CONDITION_TYPES, type CrSample } from '../../telemetry/cr-metrics.js';
import type { HelmStatus } from './status.js';

export function crSample(status: Readonly<HelmStatus>, succeeded: boolean): CrSample {
  const conditions: Partial<Record<(typeof CR_CONDITION_TYPES)[number], string>> = {};
  for (const type of CR_CONDITION_TYPES) {
    const c = status.conditions.find((x) => x.type === type);
    if (c !== undefined) conditions[type] = c.status;
  }
  const r = status.deployedRelease;
  return {
    conditions,
    succeeded,
    ...(r === undefined ? {} : { chart: r.chart, chartVersion: r.chartVersion, revision: r.revision }),
    ...(status.rollout?.fleetRevision === undefined ? {} : { fleetRevision: status.rollout.fleetRevision }),
  };
}
