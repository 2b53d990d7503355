import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../telemetry/logger.js';

/** The key of one object: what the work queue holds and what a reconcile is asked to converge. */
export interface Request {
  /** Empty for cluster-scoped objects. */
  readonly namespace: string;
  readonly name: string;
}

/**
 * What a reconcile asks of the queue when it returns normally. With no `requeueAfterMs` the key is
 * forgotten (its backoff reset) and comes back only on the next watch event.
 * A thrown error means "retry with per-key exponential backoff", unless it is a {@link TerminalError}.
 */
export interface Result {
  readonly requeueAfterMs?: number;
}

/**
 * The abort reason of a reconcile's signal when its controller lost leadership: another replica may
 * already be reconciling the same keys, so the reconcile must not act on what it started (no
 * cleanup, no rollback, no status). Any other abort is a shutdown of a replica that still leads.
 */
export class LeadershipLostCancellation extends Error {
  override readonly name: string = 'LeadershipLostCancellation';
}

/** Whether `signal` was aborted because leadership was lost (see {@link LeadershipLostCancellation}). */
export const lostLeadership = (signal: AbortSignal): boolean => signal.aborted && signal.reason instanceof LeadershipLostCancellation;

/**
 * Reads the controller's cache of the kind (objects as the controller's transform keeps them).
 * Objects are shared: `structuredClone` before mutating. A reconciler is handed this read-only view
 * when it is built (as kube-rs hands a reconciler the controller's `store()`), never the controller.
 */
export interface CacheReader<T extends KubernetesObject = KubernetesObject> {
  /** `namespace` is '' for cluster-scoped objects. */
  get(namespace: string, name: string): T | undefined;
  /** Undefined or '': every namespace. */
  list(namespace?: string): readonly T[];
}

export interface ReconcileContext {
  /** Aborted when the controller shuts down or loses leadership ({@link lostLeadership} tells which). */
  readonly signal: AbortSignal;
  /** Unique per reconcile call; also bound on `log`. */
  readonly reconcileID: string;
  /** Carries controller, namespace, name and reconcileID. */
  readonly log: Logger;
  /**
   * The requested object as the controller's cache holds it when the reconcile starts; undefined:
   * not there (deleted). It comes with the request, as the reconciler must not call back for it.
   */
  readonly cached: KubernetesObject | undefined;
}

export interface Reconciler {
  reconcile(request: Request, context: ReconcileContext): Promise<Result>;
  /**
   * A full resync is about to queue every key once more (after a leadership takeover): whatever
   * the reconciler remembers of the cluster beyond the controller's cache is dropped, so each key
   * is reconciled from what the API server holds.
   */
  resync?(): void;
  /**
   * Sharded (docs/adr/0096): a cached object of a namespace this replica does not reconcile
   * changed. Never queued here, it may still decide something that spans the kind (a rollout's
   * next wave), which the reconciler reads from it; acting stays with the namespace's owner.
   */
  observe?(obj: KubernetesObject): void;
}

/**
 * An error that retrying cannot fix (bad input that only a user edit changes). The key is not
 * requeued with backoff; a later watch event brings it back.
 */
export class TerminalError extends Error {
  override readonly name = 'TerminalError';
}

export const requestKey = (r: Request): string => (r.namespace === '' ? r.name : `${r.namespace}/${r.name}`);

export function parseRequestKey(key: string): Request {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
