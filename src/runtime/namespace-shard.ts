/**
 * What a controller needs of sharding (shard-coordinator.ts provides it): whether this replica owns
 * a namespace now, a signal that ends a reconcile when the namespace is handed off, and a count of
 * reconciles in flight the handoff waits for. Without one, a controller owns every namespace.
 */
export interface NamespaceShard {
  /** Whether this replica reconciles `namespace` now (no side effect). */
  owns(namespace: string): boolean;
  /** Aborted when `namespace` stops being this replica's. */
  signal(namespace: string): AbortSignal;
  /** Counts a reconcile of `namespace` in flight until the returned function is called. */
  enter(namespace: string): () => void;
}
