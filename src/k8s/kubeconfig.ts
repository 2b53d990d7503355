import { KubeConfig } from '@kubernetes/client-node';

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
  const kc = new KubeConfig();
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
