/**
 * The release states helm records (`helm status`'s `info.status`, `helm history`'s `status`),
 * in helm's own spelling.
 */
export const RELEASE_STATUSES = [
  'unknown',
  'deployed',
  'uninstalled',
  'superseded',
  'failed',
  'uninstalling',
  'pending-install',
  'pending-upgrade',
  'pending-rollback',
] as const;

export type ReleaseStatus = (typeof RELEASE_STATUSES)[number];

/** The chart a release revision was made from (`Chart.yaml` `name`, `version`, `appVersion`). */
export interface ReleaseChart {
  readonly name: string;
  readonly version: string;
  readonly appVersion?: string;
}

/**
 * One revision of a release, as helm reports it. The release's values (helm's `config`) are
 * deliberately absent: they never leave `src/helm/`.
 */
export interface Release {
  readonly name: string;
  readonly namespace: string;
  /** helm's `version`: the revision number, 1 for a first install. */
  readonly revision: number;
  readonly status: ReleaseStatus;
  readonly chart: ReleaseChart;
  /** Rendered NOTES.txt; empty when the chart has none. */
  readonly notes: string;
  /** The rendered manifest (hooks excluded); empty when the chart renders nothing. */
  readonly manifest: string;
  /**
   * Whether a hook of the revision runs when it is uninstalled (`pre-delete`, `post-delete`), from
   * helm's JSON output (install, upgrade, status); absent when not known.
   */
  readonly deleteHooks?: boolean;
  /**
   * The digest (util/canonical-json.ts jsonDigest) of the values the revision was made with, as
   * helm stored them (`config`: user-supplied, before the chart's defaults); absent when not known.
   */
  readonly valuesDigest?: string;
  /** helm's description of the revision ("Install complete", "Upgrade complete", or ours). */
  readonly description: string;
  /** RFC 3339 timestamps as helm prints them. */
  readonly firstDeployed?: string;
  readonly lastDeployed?: string;
  /**
   * User release labels (`--labels`), without helm's own storage labels. Only `status()` on helm 4
   * reports them (from `helm get metadata`); helm 3 never prints labels (`json:"-"` on the release,
   * none in its `get metadata`), and install/upgrade output lacks them in both versions.
   */
  readonly labels?: Readonly<Record<string, string>>;
}

/** One revision of a release as helm's storage labels describe it (no payload, no values). */
export interface ReleaseRecord {
  readonly revision: number;
  readonly status: ReleaseStatus;
  /** The release's own labels (helm's storage labels removed). */
  readonly labels: Readonly<Record<string, string>>;
  /** The UIDs its storage Secret's ownerReferences name (operator-sdk makes its CR the owner); absent when none. */
  readonly ownerUids?: readonly string[];
}

/** One row of `helm history -o json`. */
export interface HistoryEntry {
  readonly revision: number;
  readonly status: ReleaseStatus;
  /** `<chart name>-<chart version>`, as helm prints it (not reliably splittable). */
  readonly chart: string;
  readonly appVersion: string;
  readonly description: string;
  /** RFC 3339 timestamp of the revision's last deployment. */
  readonly updated: string;
}

export interface HelmVersion {
  readonly major: 3 | 4;
  /** Without the leading `v` and build metadata, e.g. `4.1.4`. */
  readonly semver: string;
}
