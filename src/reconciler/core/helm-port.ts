/**
 * What the reconciler needs from helm, and nothing more. `src/helm`'s client implements it; the
 * reconciler never spawns a process itself.
 */
import type { GatewayPolicy } from '../../k8s/gateway/policy.js';
import type { ReleaseStatus } from '../decide/state.js';

export interface ReleaseInfo {
  readonly name: string;
  readonly namespace: string;
  readonly revision: number;
  readonly status: ReleaseStatus;
  readonly chart: { readonly name: string; readonly version: string; readonly appVersion?: string };
  readonly notes: string;
  readonly manifest: string;
  /** The digest of the values helm stored with the revision (util/canonical-json.ts jsonDigest); absent when not known. */
  readonly valuesDigest?: string;
}

/** Who helm acts as, and through what: undefined is the operator itself, straight to the API server. */
export interface Identity {
  /** A user to impersonate. */
  readonly impersonate?: string;
  /** Masks the values a failure's text must not show, on helm's raw text (see redaction.ts). */
  readonly redact?: (text: string) => string;
  /**
   * Through the helm gateway under this policy (for `uninstall`, its `also` releases are added to
   * the policy's): every request helm makes is checked (docs/adr/0045).
   */
  readonly gateway?: GatewayPolicy;
}

export interface ReleaseRequest extends Identity {
  readonly release: string;
  readonly namespace: string;
  readonly chart: string;
  readonly values: Record<string, unknown>;
  readonly labels: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
  readonly description?: string;
  /** Changes the rendered manifest before helm applies it (render-ownership.ts). */
  readonly postRender?: (manifest: string) => Promise<string>;
  /** Install only: leave the chart's `crds/` out (a watch's `crds: Skip`). */
  readonly skipCrds?: boolean;
  /** A server-side apply (helm 4) takes the fields it applies from any other field manager. */
  readonly forceConflicts?: boolean;
}

export interface HelmPort {
  major(): Promise<number>;
  install(request: ReleaseRequest): Promise<ReleaseInfo>;
  /** `force`: replace what cannot be patched (the CR's `upgrade-force`). */
  upgrade(request: ReleaseRequest & { readonly force: boolean }): Promise<ReleaseInfo>;
  /**
   * Resolves `found: false` when there was nothing to uninstall. With `also`, those releases of the
   * namespace go in the same helm process, after `release`; any failure rejects (some may be gone).
   */
  uninstall(
    request: Identity & {
      readonly release: string;
      readonly also?: readonly string[];
      readonly namespace: string;
      readonly signal?: AbortSignal;
      /** Called with each release as it is gone, while the others of `also` are still being uninstalled. */
      readonly onUninstalled?: (release: string) => void;
    },
  ): Promise<{ readonly found: boolean }>;
  rollback(
    request: Identity & {
      readonly release: string;
      readonly namespace: string;
      readonly revision: number;
      readonly force: boolean;
      readonly signal?: AbortSignal;
    },
  ): Promise<void>;
  /**
   * `helm test --logs` on the deployed revision: a failing test resolves `passed: false` with
   * helm's reason and the end of the test pods' logs, both redacted; only a cancelled call rejects.
   */
  test(
    request: Identity & {
      readonly release: string;
      readonly namespace: string;
      readonly timeoutMs?: number;
      readonly signal?: AbortSignal;
    },
  ): Promise<ReleaseTestResult>;
  /** undefined when the release does not exist. */
  status(release: string, namespace: string, identity?: Identity): Promise<ReleaseInfo | undefined>;
  /**
   * For redaction only: the scalars, as text, that revision `revision`'s stored values hold at
   * `paths` (key and index lists; the empty path is every value). None for no paths.
   */
  storedStrings(
    request: Identity & {
      readonly release: string;
      readonly namespace: string;
      readonly revision: number;
      readonly paths: readonly (readonly (string | number)[])[];
      readonly signal?: AbortSignal;
    },
  ): Promise<string[]>;
  /**
   * The manifest an install or upgrade of `request` would apply, hooks included, laid out as
   * `helm template` prints it. `dryRun` undefined or `'client'`: rendered offline (`helm
   * template`: no cluster contact, `lookup()` finds nothing, `impersonate` is not used).
   * `'server'`: helm's server-side dry run (`helm upgrade --install --dry-run=server`) as
   * `impersonate` with the real install's kubeconfig, so `lookup()` and `.Capabilities` see the
   * cluster and an existing release renders as its next revision; it changes nothing in the
   * cluster, and also fails where the real command would (a kind not served, an object owned
   * elsewhere, a locked release, Forbidden for the identity).
   */
  render(request: ReleaseRequest & { readonly dryRun?: 'client' | 'server' }): Promise<string>;
  /**
   * Whether a helm process that changes the release has not exited yet, a cancelled one of a
   * stopped controller included: its `pending-*` revision is live, not abandoned.
   */
  running(release: string, namespace: string): boolean;
  /** Whether this process may still change releases (its leader lease), asked before changing one without helm. */
  mayChangeReleases(): boolean;
}

/** What `helm test` said of the deployed revision. */
export type ReleaseTestResult = { readonly passed: true } | { readonly passed: false; readonly summary: string; readonly logs: string };

/** A helm failure as the reconciler sees it: a reason for conditions and whether a retry can help. */
export interface HelmFailure {
  readonly summary: string;
  readonly retryable: boolean;
  /**
   * The helm gateway refused a request of the release's: one outside the namespace it is confined
   * to (NamespaceConfinementViolation), or of a kind its watch's `allowKinds` does not list.
   */
  readonly refusedBy?: 'confinement' | 'allowKinds';
  /** An install refused because the release name has history already (someone's release, or a failed one). */
  readonly nameInUse?: true;
  /** A field of the release's objects that another field manager holds stopped the apply (upgrade-fields.ts). */
  readonly fieldConflict?: true;
}

/**
 * `helm` with every cluster-facing call made as `identity` (empty: the operator itself, straight to
 * the API server), and every failure's text passed through its `redact` before helm's text is
 * shortened.
 */
export function helmActingAs(helm: HelmPort, identity: Identity): HelmPort {
  if (identity.impersonate === undefined && identity.gateway === undefined && identity.redact === undefined) return helm;
  return {
    major: () => helm.major(),
    install: (r) => helm.install({ ...r, ...identity }),
    upgrade: (r) => helm.upgrade({ ...r, ...identity }),
    uninstall: (r) => helm.uninstall({ ...r, ...identity }),
    rollback: (r) => helm.rollback({ ...r, ...identity }),
    test: (r) => helm.test({ ...r, ...identity }),
    status: (release, namespace) => helm.status(release, namespace, identity),
    storedStrings: (r) => helm.storedStrings({ ...r, ...identity }),
    render: (r) => helm.render({ ...r, ...identity }),
    running: (release, namespace) => helm.running(release, namespace),
    mayChangeReleases: () => helm.mayChangeReleases(),
  };
}
