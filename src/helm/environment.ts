/**
 * A helm process's whole environment (execa does not extend it with the operator's): what helm,
 * client-go and Go's runtime read, the private helm homes, and the mark of the operator process
 * that started it.
 */
import path from 'node:path';
import { connectionEnv, type Connection } from './connection.js';
import { goRuntimeEnv } from './go-runtime.js';
import { selfInstance } from './instance.js';

/** Set in every helm process's environment to the operator process start that runs it (see orphans.ts). */
export const INSTANCE_ENV = 'HELM_OPERATOR_INSTANCE';

/**
 * What of the operator's environment a helm process gets: what helm, client-go and Go's runtime
 * read (search path, home, proxies, CA files, in-cluster config, HELM_*, GO*, XDG_*), nothing else.
 * Tokens and credentials the operator's environment holds for other purposes stay out of helm
 * and of the plugins and post-renderers it starts.
 */
export function inheritedEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && (INHERITED.has(name) || /^(?:HELM_[A-Z0-9_]+|GO[A-Z0-9]+|XDG_[A-Z_]+)$/.test(name))) out[name] = value;
  }
  return out;
}

const INHERITED: ReadonlySet<string> = new Set([
  'PATH',
  'HOME',
  'USER',
  'TMPDIR',
  'LANG',
  'LC_ALL',
  'TZ',
  'KUBECONFIG',
  'KUBERNETES_SERVICE_HOST',
  'KUBERNETES_SERVICE_PORT',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
]);

/**
 * helm's client-side request throttle, unless the operator's environment sets it. client-go's
 * default (5 requests/s once helm's burst of 100 is spent) is sized for many controllers sharing
 * one process; one helm process serves one release operation, or one batched uninstall of up to 20
 * releases, which it left waiting on the throttle: such a batch took 2.8 s by default and 1.35 s
 * without the wait (docs/benchmarks.md). The API server's priority and fairness still applies.
 */
export function clientThrottleEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  if (env.HELM_QPS === undefined) out.HELM_QPS = '50';
  if (env.HELM_BURST_LIMIT === undefined) out.HELM_BURST_LIMIT = '200';
  return out;
}

/** The private helm homes under `tmpDir`: the operator's helm never reads or writes the user's. */
export function helmHomes(tmpDir: string): {
  readonly HELM_CACHE_HOME: string;
  readonly HELM_CONFIG_HOME: string;
  readonly HELM_DATA_HOME: string;
} {
  const home = path.join(tmpDir, 'helm');
  return {
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_DATA_HOME: path.join(home, 'data'),
  };
}

export interface HelmEnvOptions {
  /** Writable directory for the helm homes. */
  readonly tmpDir: string;
  /** The invoking user's helm homes instead of private ones (and no cluster connection): the scaffolding CLI. */
  readonly userHelmHome?: boolean;
  /** helm storage driver (`HELM_DRIVER`). Default `secret`. */
  readonly driver?: 'secret' | 'configmap' | 'memory';
  /** More environment; what this module owns (helm homes, `KUBECACHEDIR`, `HELM_DRIVER`, `KUBECONFIG`) overrides it. */
  readonly extraEnv?: Readonly<Record<string, string>>;
}

/** The environment of a helm process connected as `connection`, from the operator's `env`. */
export function helmEnv(
  o: HelmEnvOptions,
  connection: Connection,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Record<string, string> {
  const base = { ...inheritedEnv(env), ...clientThrottleEnv(env), ...goRuntimeEnv(env), ...o.extraEnv };
  if (o.userHelmHome === true) return { ...base, [INSTANCE_ENV]: selfInstance() };
  const homes = helmHomes(o.tmpDir);
  // The post-renderer plugin lives in the private data home's plugins (post-render.ts); a plugin path set for the operator comes after it.
  const plugins: Record<string, string> =
    env.HELM_PLUGINS === undefined
      ? {}
      : { HELM_PLUGINS: [path.join(homes.HELM_DATA_HOME, 'plugins'), env.HELM_PLUGINS].join(path.delimiter) };
  const owned = { ...homes, ...plugins, ...connectionEnv(connection, path.join(o.tmpDir, 'helm')), HELM_DRIVER: o.driver ?? 'secret' };
  return { ...base, ...owned, [INSTANCE_ENV]: selfInstance() };
}
