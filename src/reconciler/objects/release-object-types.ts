/**
 * What the reconciler and the release objects' port say to each other about a release's objects
 * (a module of its own so that the port and its implementation import it, not each other).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { FieldConflict } from '../../k8s/errors.js';
import type { Logger } from '../../telemetry/logger.js';
import type { FieldPath } from '../drift/drift.js';
import type { InventoryEntry, ManifestObject } from './inventory.js';
import type { CrEvent } from '../core/outcome.js';
import type { Owner } from './ownership.js';
import type { ReleaseRecord } from '../decide/state.js';

export interface Subject {
  readonly owner: Owner;
  readonly log: Logger;
  /** The user every write acts as (per-CR identity); undefined: the operator itself. */
  readonly identity?: string | undefined;
  /** Hides sensitive values in what goes to events and logs (API server errors quote values). */
  readonly redact?: (text: string) => string;
  /**
   * Awaited before any write to the release's objects. It throws {@link ReleaseChangedError} when
   * the revision being repaired towards is no longer the release's deployed one (ADR 0069).
   */
  readonly beforeWrite?: () => Promise<void>;
}

/**
 * The release changed under a reconcile that went on from the records it remembered (ADR 0069):
 * nothing was written, and the reconcile decides again from the records as stored.
 */
export class ReleaseChangedError extends Error {
  override readonly name = 'ReleaseChangedError';

  constructor(
    message: string,
    /** The records as just read, for the reconcile to decide from. */
    readonly records: readonly ReleaseRecord[],
  ) {
    super(message);
  }
}

/** Live objects of a release by their inventory entry, as a step just read or wrote them. */
export type SeenObjects = Map<InventoryEntry, KubernetesObject>;

/** One object of the release: where it lives and what the chart rendered for it. */
export interface DesiredObject {
  readonly entry: InventoryEntry;
  readonly rendered: ManifestObject;
}

/** What one pass of drift repair did. */
export interface DriftReport {
  readonly repaired: number;
  /** Objects the API server would not let us restore, with its message. */
  readonly failures: { readonly object: string; readonly message: string }[];
  /** One per object restored or not: the reconciler records them with the outcome. */
  readonly events: readonly CrEvent[];
}

/** A field about to be restored, and the other field manager that wrote the value it replaces. */
export interface FieldRewrite {
  readonly path: FieldPath;
  readonly manager: string;
}

/**
 * How one drift repair pass treats single fields (drift-policy.ts builds it from the ignore rules
 * and the fight records); without one, every field the chart sets is restored.
 */
export interface RepairPolicy {
  /** Fields of `d` left as they are live, neither drift nor restored. */
  ignored(d: DesiredObject): readonly FieldPath[];
  /**
   * Of the fields about to be restored on `entry`, those to leave as they are (fights), and how
   * many of those are new. Each other rewrite counts as a restore unless `notRestored` is called:
   * the repair's write did not go through or changed nothing.
   */
  judge(
    entry: InventoryEntry,
    rewrites: readonly FieldRewrite[],
  ): { readonly hold: readonly FieldPath[]; readonly found: number; readonly notRestored: () => void };
}

/**
 * A dry-run server-side apply's answer as helm's field manager (the upgrade plan, upgrade-plan.ts):
 * the object it would leave, or the API server's refusal; `conflicts`: the fields it would take
 * from other managers (helm's and ours left out).
 */
export type DryRunApply =
  | { readonly kind: 'applied'; readonly after: unknown; readonly conflicts: readonly FieldConflict[] }
  | { readonly kind: 'refused'; readonly message: string; readonly conflicts: readonly FieldConflict[] };
