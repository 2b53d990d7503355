/**
 * What a controller needs of sharding (shard-coordinator.ts provides it): whether a namespace is
 * this replica's and whether it may reconcile there now, a signal that ends a reconcile when the namespace is handed off, and a count of
 * reconciles in flight the handoff waits for. Without one, a controller owns every namespace.
 */
export interface NamespaceShard {
  /**
   * Whether `namespace` is this replica's share (taken, not handed off): its events are queued here
   * and kept (no side effect).
   */
  assigned(namespace: string): boolean;
  /**
   * Whether this replica reconciles `namespace` now: {@link assigned}, and its membership proven by
   * the clock this moment (no side effect). Assigned but not proven, a key waits: a renewal in
   * flight may prove it again, and a loss ends the process (docs/adr/0114).
   */
  owns(namespace: string): boolean;
  /** Aborted when `namespace` stops being this replica's. */
  signal(namespace: string): AbortSignal;
  /** Counts a reconcile of `namespace` in flight until the returned function is called. */
  enter(namespace: string): () => void;
}
