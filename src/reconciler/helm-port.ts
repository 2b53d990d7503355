/**
 * What the reconciler needs from helm, and nothing more. `src/helm`'s client implements it; the
 * reconciler never spawns a process itself.
 */
import type { ReleaseStatus } from './state.js';

export interface ReleaseInfo {
  readonly name: string;
  readonly namespace: string;
  readonly revision: number;
  readonly status: ReleaseStatus;
  readonly chart: { readonly name: string; readonly version: string; readonly appVersion?: string };
  readonly notes: string;
  readonly manifest: string;
}

/** Who helm acts as: undefined is the operator itself, else a user to impersonate. */
export interface Identity {
  readonly impersonate?: string;
  /** Masks the values a failure's text must not show, on helm's raw text (see redaction.ts). */
  readonly redact?: (text: string) => string;
}

export interface ReleaseRequest extends Identity {
  readonly release: string;
  readonly namespace: string;
  readonly chart: string;
  readonly values: Record<string, unknown>;
  readonly labels: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
  readonly description?: string;
}

export interface HelmPort {
  major(): Promise<number>;
  install(request: ReleaseRequest): Promise<ReleaseInfo>;
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
  rollback(request: Identity & {
    readonly release: string;
    readonly namespace: string;
    readonly revision: number;
    readonly force: boolean;
    readonly signal?: AbortSignal;
  }): Promise<void>;
  /** undefined when the release does not exist. */
  status(release: string, namespace: string, identity?: Identity): Promise<ReleaseInfo | undefined>;
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
}

/** A helm failure as the reconciler sees it: a reason for conditions and whether a retry can help. */
export interface HelmFailure {
  readonly summary: string;
  readonly retryable: boolean;
}

/**
 * `helm` with every cluster-facing call made as `impersonate` (undefined: the operator itself), and
 * every failure's text passed through `redact` before helm's text is shortened.
 */
export function helmActingAs(helm: HelmPort, impersonate: string | undefined, redact?: (text: string) => string): HelmPort {
  if (impersonate === undefined && redact === undefined) return helm;
  const scope: Identity = { ...(impersonate === undefined ? {} : { impersonate }), ...(redact === undefined ? {} : { redact }) };
  return {
    major: () => helm.major(),
    install: (r) => helm.install({ ...r, ...scope }),
    upgrade: (r) => helm.upgrade({ ...r, ...scope }),
    uninstall: (r) => helm.uninstall({ ...r, ...scope }),
    rollback: (r) => helm.rollback({ ...r, ...scope }),
    status: (release, namespace) => helm.status(release, namespace, scope),
    render: (r) => helm.render({ ...r, ...scope }),
    running: (release, namespace) => helm.running(release, namespace),
  };
}
