/**
 * The admin's switch over a kind's rollout: a Lease `rollout.<kind>.<group>` in the operator's
 * own namespace whose annotation pauses it (docs/adr/0056). Tenants who may create CRs have no
 * rights there, so no CR can pause, resume or speed a rollout; the operator already holds the
 * Lease verbs in that namespace for leader election, so no new RBAC is needed. `helm-operator
 * rollout pause|resume` writes it, every replica reads it: a new leader sees the same switch.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { RolloutControlPort } from '../reconciler/index.js';
import { SwitchLease } from './switch-lease.js';

export const ROLLOUT_PAUSED_ANNOTATION = 'helm.sdk.operatorframework.io/rollout-paused';

export function rolloutLeaseName(kind: string, group: string): string {
  return group === '' ? `rollout.${kind.toLowerCase()}` : `rollout.${kind.toLowerCase()}.${group}`;
}

export class RolloutControl implements RolloutControlPort {
  readonly #lease: SwitchLease;

  constructor(kubeConfig: KubeConfig, namespace: string, kind: { kind: string; group: string }) {
    this.#lease = new SwitchLease(kubeConfig, namespace, rolloutLeaseName(kind.kind, kind.group));
  }

  async paused(): Promise<boolean> {
    return (await this.#lease.annotations())[ROLLOUT_PAUSED_ANNOTATION] === 'true';
  }

  /** Pauses or resumes (creates the Lease on first use). */
  async set(paused: boolean): Promise<void> {
    await this.#lease.write({ [ROLLOUT_PAUSED_ANNOTATION]: paused ? 'true' : 'false' }, await this.#lease.read());
  }
}
