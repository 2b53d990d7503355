/**
 * Liveness and readiness endpoints shaped like controller-runtime's `healthz` package, plus the small
 * HTTP listener shared with the metrics endpoint.
 *
 * `GET /healthz` and `GET /readyz` run every check of their set: `200 ok` when all pass, otherwise
 * `500` with one `[+]name ok` / `[-]name failed: reason withheld` line per check (the reason stays in
 * the logs, since the endpoint is unauthenticated). `?verbose` lists the checks on success too,
 * `?exclude=name` skips one, and `/readyz/<name>` runs a single check.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { Logger } from './logger.js';

// Through require: an ES module import of node:http loads node's bundled undici (~8 MiB), which
// the operator never uses (docs/adr/0020, k8s/client-node-slim/node-http.ts).
const { createServer } = createRequire(import.meta.url)('node:http') as typeof import('node:http');

/** Throws (or rejects) when unhealthy; the message is logged, never served. */
export type Checker = () => void | Promise<void>;

/** controller-runtime's `healthz.Ping`. */
export const ping: Checker = () => undefined;

export interface HealthEndpoints {
  readonly healthz: ReadonlyMap<string, Checker>;
  readonly readyz: ReadonlyMap<string, Checker>;
}

interface CheckStatus {
  readonly name: string;
  readonly healthy: boolean;
  readonly excluded: boolean;
}

function write(res: ServerResponse, code: number, body: string): void {
  res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
  res.end(body);
}

async function runCheck(name: string, check: Checker, log: Logger): Promise<boolean> {
  try {
    await check();
    return true;
  } catch (err) {
    log.debug({ checker: name, error: err }, 'healthz check failed');
    return false;
  }
}

async function serveAggregated(url: URL, checks: ReadonlyMap<string, Checker>, res: ServerResponse, log: Logger): Promise<void> {
  const excluded = new Set(url.searchParams.getAll('exclude'));
  const parts: CheckStatus[] = [];
  for (const [name, check] of checks) {
    if (excluded.delete(name)) {
      parts.push({ name, healthy: true, excluded: true });
      continue;
    }
    parts.push({ name, healthy: await runCheck(name, check, log), excluded: false });
  }
  if (checks.size === 0) parts.push({ name: 'ping', healthy: true, excluded: false });
  parts.sort((a, b) => a.name.localeCompare(b.name));
  const failed = parts.some((p) => !p.healthy);
  if (!failed && !url.searchParams.has('verbose')) {
    write(res, 200, 'ok');
    return;
  }
  const lines = parts.map((p) =>
    p.excluded ? `[+]${p.name} excluded: ok` : p.healthy ? `[+]${p.name} ok` : `[-]${p.name} failed: reason withheld`,
  );
  if (excluded.size > 0)
    lines.push(`warn: some health checks cannot be excluded: no matches for ${[...excluded].map((e) => `"${e}"`).join(',')}`);
  if (failed) log.info({ statuses: parts }, 'healthz check failed');
  lines.push(failed ? 'healthz check failed' : 'healthz check passed');
  write(res, failed ? 500 : 200, `${lines.join('\n')}\n`);
}

async function serveSingle(name: string, checks: ReadonlyMap<string, Checker>, res: ServerResponse, log: Logger): Promise<void> {
  const check = checks.get(name);
  if (check === undefined) {
    write(res, 404, '404 page not found\n');
    return;
  }
  try {
    await check();
    write(res, 200, 'ok');
  } catch (err) {
    log.debug({ checker: name, error: err }, 'healthz check failed');
    write(res, 500, `internal server error: ${name} check failed\n`);
  }
}

/** The request handler of the health probe server. */
export function healthHandler(endpoints: HealthEndpoints, log: Logger): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const [, root, name, ...rest] = url.pathname.split('/');
    const checks = root === 'healthz' ? endpoints.healthz : root === 'readyz' ? endpoints.readyz : undefined;
    if (checks === undefined || rest.length > 0) {
      write(res, 404, '404 page not found\n');
      return;
    }
    const done = name === undefined || name === '' ? serveAggregated(url, checks, res, log) : serveSingle(name, checks, res, log);
    done.catch((err: unknown) => {
      log.error({ error: err }, 'health endpoint failed');
      if (!res.headersSent) write(res, 500, 'internal server error\n');
    });
  };
}

// ---- listener ---------------------------------------------------------------------------------

export class BindAddressError extends Error {
  override readonly name = 'BindAddressError';
}

/**
 * Parses a Go-style listen address: `:8080` (every interface), `127.0.0.1:8080`, `[::1]:8080`,
 * `localhost:0` (a free port). `0` (or empty) means "disabled" and yields undefined.
 */
export function parseBindAddress(flag: string, raw: string): { host: string | undefined; port: number } | undefined {
  const value = raw.trim();
  if (value === '0' || value === '') return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(value);
  const port = Number(m?.[3]);
  if (m === null || port > 65_535) {
    throw new BindAddressError(`${flag} must be host:port, :port or 0 (disabled), got "${raw}"`);
  }
  const host = m[1] ?? m[2];
  return { host: host === '' ? undefined : host, port };
}

export interface HttpListener {
  /** The address actually bound, `host:port` (IPv6 in brackets). */
  readonly address: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Starts an HTTP server on `bind` (see {@link parseBindAddress}); rejects when the port is taken. */
export async function listenHttp(
  bind: { host: string | undefined; port: number },
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<HttpListener> {
  const server: Server = createServer(handler);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: bind.host, port: bind.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const info = server.address() as AddressInfo;
  const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
  return {
    address: `${host}:${info.port}`,
    port: info.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
