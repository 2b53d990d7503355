/**
 * What the reconciler asks of the uninstaller (actions/uninstall.ts implements it): a port of its
 * own so that the core names it without importing the action that implements it.
 */
import type { ActionContext } from './action-context.js';
import type { Outcome } from './outcome.js';

/** Runs `helm`, the part of an action a helm process does, and resolves with its result. */
export type AroundHelm = <T>(helm: () => Promise<T>) => Promise<T>;

/** Uninstalls deleted CRs' releases, batching a namespace's. */
export interface UninstallPort {
  /** Whether a batched uninstall running now holds the release of `namespace/name`. */
  isHeld(namespace: string, name: string): boolean;
  /** `aroundHelm`: runs the helm process's part (not an uninstall without one), e.g. to show it while it lasts. */
  run(ctx: ActionContext, aroundHelm?: AroundHelm): Promise<Outcome>;
}
