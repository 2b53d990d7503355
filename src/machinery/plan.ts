/**
 * A scaffold plan: what a generator wants on disk, as data. Generators are pure functions from their
 * inputs to a {@link Plan}; only {@link applyPlan} touches the file system. The shape follows
 * kubebuilder's `pkg/machinery`: a template has a path, a body and an if-exists action; an inserter
 * adds a fragment at a `+kubebuilder:scaffold:<marker>` comment.
 */

/** What to do when a `create` finds the file already there with other content. */
export type IfExists =
  /** Keep the file on disk (the user owns it after the first write). */
  | 'skip'
  /** Stop before writing anything; `--force` overwrites. */
  | 'error'
  /** Regenerate it, unless the user edited it since it was generated (then only with `--force`). */
  | 'overwrite';

export interface CreateOp {
  readonly op: 'create';
  /** Relative to the project root, `/`-separated. */
  readonly path: string;
  readonly body: string | Uint8Array;
  readonly ifExists: IfExists;
  /** File mode for a new file (e.g. 0o755 for scripts). Default 0o644. */
  readonly mode?: number;
}

export interface InsertOp {
  readonly op: 'insert';
  readonly path: string;
  /** `rules` for `+kubebuilder:scaffold:rules`. */
  readonly marker: string;
  /**
   * Text inserted before the marker line, once: a fragment already present in the file is not
   * inserted again. Each line gets the marker line's indentation.
   */
  readonly fragment: string;
  /**
   * The fragment's first and last lines frame a section that a later run regenerates: when both
   * are found (in that order), what lies between them is replaced instead of a second copy being
   * inserted (e.g. a chart's RBAC rules after `create api --force` with another chart version).
   */
  readonly framed?: boolean;
}

export type FileOp = CreateOp | InsertOp;
export type Plan = readonly FileOp[];

export const create = (path: string, body: string | Uint8Array, ifExists: IfExists = 'overwrite', mode?: number): CreateOp => ({
  op: 'create',
  path,
  body,
  ifExists,
  ...(mode === undefined ? {} : { mode }),
});

export const insert = (path: string, marker: string, fragment: string, framed = false): InsertOp => ({
  op: 'insert',
  path,
  marker,
  fragment,
  ...(framed ? { framed } : {}),
});

/** The comment text generators put where inserts go. */
export const markerText = (marker: string): string => `+kubebuilder:scaffold:${marker}`;
