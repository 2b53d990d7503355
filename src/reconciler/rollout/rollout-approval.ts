/**
 * The rollout's approval of a chart change (issue 47, docs/adr/0093): under a watch with both a
 * rollout and `approval`, the canary's plan is approved as any CR's; that approval, recorded in
 * the canary's rollout attempt (`status.rollout.attempt.approvedPlan`), stands for the fleet
 * revision in the later waves. A later CR whose plan's risks are all among those of the approved
 * plans of the waves before it goes on without an approval of its own; one whose plan carries a
 * risk nobody approved for this fleet revision holds for its own. Pure: the members are read from
 * the controller's cache (rollout-members.ts), as the gate reads them.
 */
import type { RolloutPolicy } from '../../config/rollout-policy.js';
import { RISKS, type Risk } from '../plan/upgrade-plan.js';
import { waves, type Member } from './rollout-gate.js';

/** What the earlier waves approved for the fleet revision `target`. */
export interface RolloutApproval {
  readonly target: string;
  /** The risks of the approved plans together: what a later CR's plan may carry without its own approval. */
  readonly risks: readonly Risk[];
  /** Whose plans were approved (`namespace/name`), and their digests. */
  readonly by: readonly { readonly key: string; readonly digest: string }[];
}

/**
 * Pure: the approval the waves before `self`'s gave the fleet revision `target`; undefined for a CR
 * of the first wave (the canaries: theirs is the approval the rollout waits for), for one outside
 * the rollout, or when no earlier CR took `target` under an approved plan (a plan that needed no
 * approval approves nothing).
 */
export function rolloutApproval(
  members: readonly Member[],
  policy: RolloutPolicy,
  self: string,
  target: string,
): RolloutApproval | undefined {
  const all = waves(members, policy);
  const w = all.findIndex((wave) => wave.some((m) => m.key === self));
  if (w <= 0) return undefined;
  const by = all
    .slice(0, w)
    .flat()
    .flatMap((m) => {
      const a = m.attempt;
      return a?.fleetRevision === target && !a.failed && a.approvedPlan !== undefined ? [{ key: m.key, plan: a.approvedPlan }] : [];
    });
  if (by.length === 0) return undefined;
  const risks = new Set(by.flatMap((b) => b.plan.risks));
  return { target, risks: RISKS.filter((r) => risks.has(r)), by: by.map((b) => ({ key: b.key, digest: b.plan.digest })) };
}
