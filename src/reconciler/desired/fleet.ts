/**
 * The desired state of a release split in two (docs/adr/0056): the fleet part, which every CR of a
 * watch shares (chart contents, `overrideValues`, helm major, render protocol), and the CR's own
 * part (its spec and the values it takes from Secrets and ConfigMaps). Both are release labels,
 * so the release record says which change an upgrade would ship: only a fleet change is rolled
 * out in waves.
 */
import { createHash } from 'node:crypto';
import { jsonDigest } from '../../util/canonical-json.js';
import { keyedFingerprint, RENDER_PROTOCOL, type Values } from './values.js';

export interface FleetInput {
  readonly chartDigest: string;
  readonly overrideValues: Readonly<Record<string, string>>;
  readonly helmMajor: number;
}

/** Hex digits of the fleet revision: short enough to read in `kubectl get`, long enough never to collide across a kind's charts. */
const FLEET_REVISION_LENGTH = 12;

/**
 * The fleet revision status and `rollout status` show: keyed like the fingerprint (ADR 0044),
 * since `overrideValues` may carry operator secrets a tenant reading status must not test guesses
 * against. The order of overrides counts (a later path may overwrite part of an earlier one).
 */
export function fleetRevision(key: Uint8Array, f: FleetInput): string {
  const plain = createHash('sha256')
    .update(
      `protocol=${RENDER_PROTOCOL}\nhelm=${f.helmMajor}\nchart=${f.chartDigest}\noverrides=${JSON.stringify(Object.entries(f.overrideValues))}`,
    )
    .digest('hex');
  return keyedFingerprint(key, plain).slice(0, FLEET_REVISION_LENGTH);
}

/** The CR's own values (spec over values-from, before overrides), for the release label only. */
export function ownValuesDigest(values: Values): string {
  return jsonDigest(values);
}
