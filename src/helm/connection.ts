/**
 * How a helm process reaches the cluster and whom it acts as: the one place that turns the
 * operator's own connection and a call's identity (an impersonated user, a helm gateway grant) into
 * helm's flags and environment. Everything else passes the identity along as data.
 */
import path from 'node:path';

/** The cluster connection of a helm process. */
export interface Connection {
  /** Passed to helm as `KUBECONFIG`; otherwise helm's own lookup (env, in-cluster, ~/.kube/config). */
  readonly kubeconfig?: string;
  readonly kubeContext?: string;
  /** client-go's discovery and HTTP caches (`KUBECACHEDIR`); default a shared one under the helm homes. */
  readonly kubeCacheDir?: string;
  /** User to impersonate (`--kube-as-user`). */
  readonly impersonate?: string;
}

/** A helm gateway grant (docs/adr/0045): a kubeconfig that reaches the cluster through the gateway. */
export interface GatewayGrant {
  readonly kubeconfig: string;
  /** client-go's caches for it: they are keyed by the server URL, which names the grant. */
  readonly cacheDir: string;
}

/** Whom one call acts as, and through what; empty: the client's own connection. */
export interface CallIdentity {
  /** A user to impersonate (`--kube-as-user`); bounds helm's API requests and release storage by that user's RBAC. */
  readonly impersonate?: string;
  /** Through the helm gateway instead of the operator's own connection. */
  readonly grant?: GatewayGrant;
}

/**
 * The connection of one call: the client's own, with the call's user, and through its grant when it
 * has one (the grant's kubeconfig names its own context, so the client's `kubeContext` is dropped).
 */
export function connectionFor(own: Connection, call: CallIdentity = {}): Connection {
  const user = call.impersonate ?? own.impersonate;
  const as = user === undefined ? {} : { impersonate: user };
  if (call.grant === undefined) return { ...own, ...as };
  return { kubeconfig: call.grant.kubeconfig, kubeCacheDir: call.grant.cacheDir, ...as };
}

/** The call identity `opts` carries, without anything else of it. */
export function identityOf(opts: CallIdentity): CallIdentity {
  return {
    ...(opts.impersonate === undefined ? {} : { impersonate: opts.impersonate }),
    ...(opts.grant === undefined ? {} : { grant: opts.grant }),
  };
}

/** What of `c` goes into helm's environment; `helmHome` holds the default client-go cache. */
export function connectionEnv(c: Connection, helmHome: string): Record<string, string> {
  return {
    // client-go's discovery and HTTP (OpenAPI) caches, shared by every helm process: otherwise
    // they go to $HOME/.kube/cache, which the image's read-only root makes unwritable, and each
    // helm run rediscovers the API (~15 more requests and ~10 % more CPU per install, measured).
    KUBECACHEDIR: c.kubeCacheDir ?? path.join(helmHome, 'kube-cache'),
    ...(c.kubeconfig !== undefined ? { KUBECONFIG: c.kubeconfig } : {}),
  };
}
