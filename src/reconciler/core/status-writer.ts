/**
 * How one reconcile's status reaches its CR: the draft is written once, on the way out (not at all
 * after leadership was lost); a long helm action is shown while it runs (Reconciling); and a CR
 * whose release is gone gets its last status before its finalizers go, or none when nobody is left
 * to read it.
 */
import type { CustomResource } from '../../k8s/custom-resources.js';
import { describeError } from '../../k8s/errors.js';
import { lostLeadership } from '../../runtime/reconcile.js';
import { FINALIZERS } from './finalizers.js';
import type { ActionContext } from './action-context.js';
import { ConditionType, Reason } from '../status/conditions.js';
import type { CrEvent } from './outcome.js';
import type { CustomResourcesPort } from './ports.js';
import { redactedError, type Redactor } from '../status/redaction.js';
import type { StatusDraft } from '../status/status.js';

export interface StatusWriterOptions {
  readonly crs: Pick<CustomResourcesPort, 'patchStatus' | 'removeFinalizers'>;
  /** The CR as read: its finalizers, for `release`. */
  readonly cr: CustomResource;
  readonly ctx: Pick<ActionContext, 'namespace' | 'name' | 'signal' | 'log' | 'redact'>;
  readonly draft: StatusDraft;
  readonly redactor: Redactor;
  /** The reconcile's one event writer. */
  readonly record: (event: CrEvent) => void;
  /** How long a helm action runs before it is shown (`during`); default {@link PROGRESS_DELAY_MS}. */
  readonly progressDelayMs?: number;
  /** Called before each write: the rollout's seal over what is written (docs/adr/0101). */
  readonly beforeWrite?: (draft: StatusDraft) => void;
}

/**
 * A helm action that ends sooner is never shown as Reconciling: its outcome's write is the only one
 * (ADR 0068). Most installs and upgrades of a bulk converge end within it; a chart with hooks or a
 * slow API server shows its action after this long.
 */
export const PROGRESS_DELAY_MS = 2_000;

export class StatusWriter {
  readonly draft: StatusDraft;
  readonly redactor: Redactor;
  readonly #o: StatusWriterOptions;

  constructor(o: StatusWriterOptions) {
    this.#o = o;
    this.draft = o.draft;
    this.redactor = o.redactor;
  }

  /**
   * Runs a helm action, shown as Reconciling once it has run for the progress delay (at once when
   * that is 0), as Flux marks Reconciling for each action; the outcome's write clears it
   * (summarize). It resolves after that write too, so the outcome's write comes after it.
   */
  async during<T>(message: string, action: () => Promise<T>): Promise<T> {
    const delayMs = this.#o.progressDelayMs ?? PROGRESS_DELAY_MS;
    if (delayMs <= 0) {
      await this.#progress(message);
      return action();
    }
    let shown: Promise<void> | undefined;
    const timer = setTimeout(() => {
      // A cancelled reconcile (shutdown, lost leadership) is past showing anything: its helm is being stopped.
      if (!this.#o.ctx.signal.aborted) shown = this.#progress(message);
    }, delayMs);
    try {
      return await action();
    } finally {
      clearTimeout(timer);
      await shown;
    }
  }

  /**
   * Shows a helm action before it starts. Best effort: a status that cannot be written must not
   * keep helm from running.
   */
  async #progress(message: string): Promise<void> {
    this.draft.setCondition({ type: ConditionType.Reconciling, status: 'True', reason: Reason.Progressing, message });
    await this.#write().catch((err: unknown) => {
      this.#o.ctx.log.info({ error: this.#o.ctx.redact(describeError(err)) }, 'Could not mark the CR Reconciling');
    });
  }

  /**
   * The draft, on the way out. A reconcile cancelled because leadership was lost writes nothing:
   * another replica may already be reconciling this CR, and this draft would overwrite its status.
   * (Shutting down, the replica still leads: what its cancelled reconcile did is reported.)
   * Resolves with what became of the draft: written, nothing to write, or left to the new leader.
   */
  async finish(): Promise<'written' | 'unchanged' | 'left'> {
    if (lostLeadership(this.#o.ctx.signal)) {
      this.#o.ctx.log.debug('Reconcile cancelled by lost leadership: status left to the new leader');
      return 'left';
    }
    return this.#write()
      .then((wrote) => (wrote ? 'written' : 'unchanged'))
      .catch((err: unknown) => {
        this.#writeFailed(err);
        throw redactedError(err, this.redactor);
      });
  }

  /**
   * The release is gone: the status goes first (once the finalizer is off, the CR may vanish at any
   * moment), then our finalizers. When no other finalizer holds the CR it is gone as soon as ours
   * is off, and its status with it: nothing is written. The write is best effort: a status that
   * cannot be written must not keep the CR from being deleted.
   */
  async release(): Promise<void> {
    if ((this.#o.cr.metadata.finalizers ?? []).every((f) => FINALIZERS.includes(f))) this.draft.discard();
    else {
      await this.#write().catch((err: unknown) => {
        this.#writeFailed(err);
      });
    }
    await this.#o.crs.removeFinalizers(this.#o.cr, FINALIZERS);
  }

  /** Status is where users look; when it cannot be written, an event must say why. */
  #writeFailed(err: unknown): void {
    this.#o.record({ type: 'Warning', reason: 'StatusWriteFailed', message: describeError(err) });
  }

  /** false: the draft changed nothing. */
  async #write(): Promise<boolean> {
    this.#o.beforeWrite?.(this.draft);
    const patch = this.draft.patch();
    if (Object.keys(patch).length === 0) return false;
    await this.#o.crs.patchStatus(this.#o.ctx.namespace, this.#o.ctx.name, this.redactor.deep(patch));
    this.draft.markWritten();
    return true;
  }
}
