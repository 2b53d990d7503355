/**
 * The plans this process holds CRs for, awaiting approval (docs/adr/0097): what the plan gate
 * looks again from. Not the CR's `status.plan`: tenants who may write their CR's status
 * subresource could put another digest there, which the gate would then ask the platform to
 * approve. Status is only where the held plan is shown. A process without the entry (started
 * since, a new leader) plans the upgrade again, as it plans any pending upgrade. An entry kept
 * over a leadership gap is kept: every apply is planned again first, so at worst the approval of
 * another leader's digest is refused as stale and the one shown is asked for instead.
 */
import type { PlanStatus } from './plan-status.js';

/** One CR instance: a CR deleted and created again under its name is another. */
export interface PlanHolder {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

export class HeldPlans {
  readonly #held = new Map<string, { readonly uid: string; readonly plan: PlanStatus }>();

  /** The plan the CR instance is held for; undefined when this process holds it for none. */
  held(cr: PlanHolder): PlanStatus | undefined {
    const e = this.#held.get(keyOf(cr));
    return e?.uid === cr.uid ? e.plan : undefined;
  }

  /** Remembers the plan the CR instance is now held for; undefined: it is held for none. */
  hold(cr: PlanHolder, plan: PlanStatus | undefined): void {
    if (plan === undefined) this.#held.delete(keyOf(cr));
    else this.#held.set(keyOf(cr), { uid: cr.uid, plan });
  }

  /** The CR is gone. */
  forget(namespace: string, name: string): void {
    this.#held.delete(keyOf({ namespace, name }));
  }

  get size(): number {
    return this.#held.size;
  }
}

const keyOf = (cr: Pick<PlanHolder, 'namespace' | 'name'>): string => `${cr.namespace}/${cr.name}`;
