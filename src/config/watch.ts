/** One entry of watches.yaml as the operator runs it: what the reconciler and the controllers read. */
import type { ChartInfo } from './chart.js';
import type { RolloutPolicy } from './rollout-policy.js';
import type { DriftIgnoreRule } from './drift-ignore-rules.js';
import type { LabelSelector } from './selector.js';
import type { HealthCheck } from './health-checks.js';
import type { ReleaseTest } from './release-test.js';

/** See `Watch.conflictPolicy`. */
export type ConflictPolicy = 'force' | 'fail';
export const CONFLICT_POLICIES: readonly ConflictPolicy[] = ['force', 'fail'];

/** See `Watch.crds`; Flux's names. */
export type CrdPolicy = 'Skip' | 'Create' | 'CreateReplace';
export const CRD_POLICIES: readonly CrdPolicy[] = ['Skip', 'Create', 'CreateReplace'];

/** See `Watch.approval` (docs/adr/0083). */
export type ApprovalMode = 'never' | 'risky' | 'always';
export const APPROVAL_MODES: readonly ApprovalMode[] = ['never', 'risky', 'always'];
/** See `Watch.approvedBy`. */
export type Approvers = 'cr' | 'platform';
export const APPROVERS: readonly Approvers[] = ['cr', 'platform'];

export interface Watch {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly chart: ChartInfo;
  /** Whether to watch the release's resources and repair drift; default true. */
  readonly watchDependentResources: boolean;
  /**
   * Ours, the migration switch from operator-sdk's Helm operator: a CR takes over the release of
   * its name and chart that this operator did not install. Left out (false) by default, when such
   * a release is reported `ReleaseNotOwned` and never upgraded nor uninstalled (ADR 0042).
   */
  readonly adoptReleases?: boolean;
  /** After `$VAR`/`${VAR}` expansion (unset variables expand to ""); `--set-string` semantics. */
  readonly overrideValues: Readonly<Record<string, string>>;
  readonly selector?: LabelSelector;
  /** `selector` in query form; '' selects everything. */
  readonly labelSelector: string;
  /** Undefined when absent or zero: both mean "use the operator-wide reconcile period". */
  readonly reconcilePeriodMs?: number;
  /** Integer >= 1; undefined means the operator-wide default. */
  readonly maxConcurrentReconciles?: number;
  /**
   * How the `confineToNamespace` pre-flight renders the release: 'client' (offline `helm
   * template`) or 'server' (helm's server-side dry run, as the release's identity, so `lookup()`
   * sees the cluster). '' / absent / 'none' all mean 'client'; 'server' is refused without
   * `confineToNamespace: true`, the only render there is.
   */
  readonly dryRunOption: 'client' | 'server';
  /**
   * Ours: helm and every write to the release's objects run as this ServiceAccount of the CR's
   * namespace (impersonation), so its RBAC, not the operator's, bounds what a CR can create.
   */
  readonly serviceAccountName?: string;
  /**
   * Ours: refuse, before helm runs, a release that renders an object into another namespace or
   * a cluster-scoped object whose kind is not in `allowClusterScoped`.
   */
  readonly confineToNamespace: boolean;
  /** `Kind` (core group) or `Kind.group`: cluster-scoped kinds a confined release may create. */
  readonly allowClusterScoped: readonly string[];
  /**
   * Ours: `Kind` (core group) or `Kind.group`: the only kinds helm may create, change or delete
   * for a CR of this watch, enforced by the helm gateway (docs/adr/0045); undefined: any kind.
   */
  readonly allowKinds?: readonly string[];
  /**
   * Ours: dotted value paths (`auth.password`, `tls`) whose values, whatever set them (spec,
   * overrideValues, values-from), never show in status, events or logs, error text included.
   */
  readonly sensitiveValues: readonly string[];
  /**
   * Ours: let helm fetch what the chart's (and subcharts') `values.schema.json` references outside
   * itself (`$ref` to http(s) or file URLs) at every install and upgrade; refused by default.
   */
  readonly allowSchemaRefs: boolean;
  /** Ours: how a change reaching every CR at once ships (docs/rollouts.md); undefined: DEFAULT_ROLLOUT. */
  readonly rollout?: RolloutPolicy;
  /**
   * Ours: fields of the release's objects that drift repair neither reports nor restores (RFC 6901
   * pointers, optionally scoped to a kind, name or label selector; docs/adr/0055). Absent: none.
   */
  readonly driftIgnore?: readonly DriftIgnoreRule[];
  /**
   * Ours: obey a CR's `drift-ignore` annotation (rules for its own release). Absent or false: the
   * annotation is refused with a condition and everything the chart sets is repaired.
   */
  readonly allowDriftIgnoreAnnotation?: boolean;
  /**
   * Ours: what an upgrade does with a field the chart sets that another field manager took
   * (docs/adr/0072). Absent: `force`, helm takes it back as drift repair would; `fail`: the upgrade
   * stops before helm makes a revision, with ReleaseFailed/ResourceConflict naming the field.
   */
  readonly conflictPolicy?: ConflictPolicy;
  /**
   * Ours: what becomes of the chart's `crds/` (docs/adr/0075). Absent: `Create`, helm's own
   * behaviour (created at install when missing, never changed after); `Skip`: never installed;
   * `CreateReplace`: before an upgrade, each CRD that changed is checked with OLM v1's upgrade-safety
   * rules against the live CRD and its stored versions, then applied, or the upgrade is refused.
   */
  readonly crds?: CrdPolicy;
  /**
   * Ours, after Flux's `healthCheckExprs`: CEL readiness rules for kinds the built-in rules do not
   * know, per apiVersion and kind (docs/adr/0082). Absent: the built-in rules only.
   */
  readonly healthChecks?: readonly HealthCheck[];
  /**
   * Flux's `test`: after each install or upgrade the chart's test hooks run (`helm test`); a
   * failure is Ready=False/TestFailed and, unless `ignoreFailures`, undone as a failed upgrade is
   * (docs/adr/0081). Absent (or `enable: false`): no tests run.
   */
  readonly test?: ReleaseTest;
  /**
   * Ours: which upgrades wait for an approval of their plan (docs/adr/0083). Absent: `never`, they
   * go ahead at once; `risky`: those that delete, recreate, meet a field conflict, change a CRD or a
   * volume template; `always`: every one. Drift repair is never held.
   */
  readonly approval?: ApprovalMode;
  /**
   * Ours: whose approval counts. Absent: `platform`, a record in the operator's namespace
   * (`helm-operator plan approve`); `cr`: the CR's own annotation, so whoever may edit the CR.
   */
  readonly approvedBy?: Approvers;
  /** Where the entry was defined; `index` is 0-based, `line` 1-based. */
  readonly source: { readonly file: string; readonly index: number; readonly line: number };
}
