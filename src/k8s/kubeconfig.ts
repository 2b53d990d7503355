import { statSync } from 'node:fs';
import { KubeConfig, type RequestContext } from './client-node.js';

/** undici's Dispatcher, as client-node's RequestContext carries it (undici is its dependency, not ours). */
type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

/**
 * A KubeConfig whose API clients share one connection pool. client-node 2.0.1 builds a new undici
 * Agent for every request (`applySecurityAuthentication` → `createDispatcher`, uncached), so every
 * request opened its own TLS connection: profiled during a 100-CR converge, TLS handshakes and
 * secure contexts were the largest node-side CPU cost after spawning helm, and the idle
 * keep-alive sockets of all those agents added to the memory.
 *
 * The dispatcher is reused while what it was built from is unchanged: the cluster's server, CA,
 * TLS settings and proxy, and the user's client certificate and key (files by path and mtime, so a
 * rotated certificate gets a new pool). Users with an exec plugin or auth provider may get their
 * client certificate from it, so they keep client-node's behaviour. Tokens travel in headers,
 * which are still applied per request.
 */
export class PooledKubeConfig extends KubeConfig {
  #pool: { readonly key: string; readonly dispatcher: Dispatcher } | undefined;

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    const key = fresh === undefined ? undefined : this.#dispatcherKey();
    if (fresh === undefined || key === undefined) return;
    if (this.#pool?.key !== key) {
      const old = this.#pool?.dispatcher;
      this.#pool = { key, dispatcher: fresh };
      // Lets requests in flight on the old pool finish, then closes its sockets.
      void old?.close().catch(() => undefined);
      return;
    }
    context.setDispatcher(this.#pool.dispatcher);
    // Never connected: closing it frees nothing but its bookkeeping.
    void fresh.close().catch(() => undefined);
  }

  #dispatcherKey(): string | undefined {
    const cluster = this.getCurrentCluster();
    const user = this.getCurrentUser();
    if (user?.exec !== undefined || user?.authProvider !== undefined) return undefined;
    const c = cluster ?? { server: '', caData: '', caFile: '', skipTLSVerify: false, tlsServerName: '', proxyUrl: '' };
    const u = user ?? { certData: '', certFile: '', keyData: '', keyFile: '' };
    return JSON.stringify([
      c.server,
      c.caData,
      fileVersion(c.caFile),
      c.skipTLSVerify,
      c.tlsServerName,
      c.proxyUrl,
      u.certData,
      fileVersion(u.certFile),
      u.keyData,
      fileVersion(u.keyFile),
    ]);
  }
}

/** A file by path and modification time: a rewritten certificate is a new one. */
function fileVersion(file: string | undefined): string {
  return file === undefined || file === '' ? '' : `${file}@${statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? 0}`;
}

/** The kubeconfig cannot be used: a user fixes it (file, permissions, KUBECONFIG), so it prints as one line. */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOENT: 'no such file',
  EISDIR: 'it is a directory',
};

/** "permission denied (EACCES) to uid 1001" etc. for a file-system error, else the error's first line. */
function describe(err: unknown): { file?: string; reason: string } {
  const e = err as NodeJS.ErrnoException;
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (code !== undefined && /^E[A-Z]+$/.test(code)) {
    const who = code === 'EACCES' || code === 'EPERM' ? ` to uid ${process.getuid?.() ?? '?'}` : '';
    return { ...(typeof e.path === 'string' ? { file: e.path } : {}), reason: `${REASONS[code] ?? code} (${code})${who}` };
  }
  return { reason: (e instanceof Error ? e.message : String(err)).split('\n')[0] ?? '' };
}

/**
 * $KUBECONFIG, then ~/.kube/config, then the in-cluster service account. loadFromDefault() quietly
 * falls back to http://localhost:8080 when it finds nothing; that is reported instead. A file that
 * cannot be read or parsed is a KubeConfigError naming it (in a container, typically a mounted
 * kubeconfig the image's user may not read).
 */
export function loadKubeConfig(file?: string): KubeConfig {
  const kc = new PooledKubeConfig();
  try {
    if (file !== undefined && file !== '') kc.loadFromFile(file);
    else kc.loadFromDefault();
  } catch (err) {
    const { file: failed, reason } = describe(err);
    const source = failed ?? file ?? process.env.KUBECONFIG ?? '~/.kube/config';
    throw new KubeConfigError(`cannot load the kubeconfig ${source}: ${reason}`, { cause: err });
  }
  const server = kc.getCurrentCluster()?.server;
  if (server === undefined || server === 'http://localhost:8080') {
    throw new KubeConfigError('no Kubernetes configuration found: set KUBECONFIG, create ~/.kube/config, or run in a cluster');
  }
  return kc;
}
