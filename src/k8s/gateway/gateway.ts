/**
 * The helm gateway: a Kubernetes API proxy on 127.0.0.1 that helm processes of a confined or
 * impersonating watch talk to instead of the API server. Each helm run gets a grant (a private
 * kubeconfig whose server URL carries a random token naming its policy); every request is decided by `policy.ts` and
 * forwarded with the operator's own credentials, so the check sees exactly what helm applies and
 * reads, whatever the chart's templates, hooks, `crds/` or `lookup()` do (docs/adr/0045).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import type http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { silentLogger, type Logger } from '../../telemetry/logger.js';
// node:http's ES facade would load node's own undici (see client-node-slim/node-http.ts).
import nodeHttp from '../client-node-slim/node-http.js';
import type { KubeConfig } from '../client-node.js';
import { normalizedUrl, parseApiRequest, type ApiRequest, type ResourceRequest } from './api-request.js';
import {
  changeable,
  decide,
  isStorageRecord,
  readable,
  type Decision,
  type GatewayPolicy,
  type ObjectMeta,
  type ResourceScope,
} from './policy.js';

export type { GatewayPolicy } from './policy.js';

/** Discovery's answer for a resource (undefined: not served). */
export type ScopeLookup = (group: string, version: string, resource: string) => Promise<ResourceScope | undefined>;

export interface GatewayOptions {
  /** The operator's own connection: where requests go and with which credentials. */
  readonly kubeConfig: KubeConfig;
  readonly scopes: ScopeLookup;
  /** A private directory (created 0700) for the grants' kubeconfig files. */
  readonly dir: string;
  readonly log?: Logger;
}

export interface Grant {
  /** A kubeconfig for helm: the gateway's address and this grant's token. */
  readonly kubeconfig: string;
  /**
   * client-go's cache directory for this grant: its caches are keyed by the server URL, which
   * carries the token, so a shared one would grow by a directory per helm run.
   */
  readonly cacheDir: string;
  /** Revokes the token and removes the file. */
  close(): Promise<void>;
}

/** A Secret list larger than this is refused rather than buffered for filtering. */
const MAX_INSPECTED_BYTES = 32 * 1024 * 1024;
/** How long the upstream credentials (a rotated ServiceAccount token, an exec plugin's) are reused. */
const CREDENTIALS_TTL_MS = 30_000;
/** Request headers never passed upstream: ours (the grant's token) or hop-by-hop. */
const DROPPED_REQUEST_HEADERS = new Set([
  'authorization',
  'host',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'upgrade',
  'trailer',
  'transfer-encoding',
]);
const DROPPED_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding']);

interface Upstream {
  readonly agent: http.Agent;
  readonly headers: Readonly<Record<string, string>>;
  readonly tls: https.RequestOptions;
  readonly at: number;
}

interface UpstreamResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

export class HelmApiGateway {
  readonly #o: GatewayOptions;
  readonly #log: Logger;
  readonly #server: http.Server;
  readonly #grants = new Map<string, GatewayPolicy>();
  readonly #target: URL;
  #upstream: Promise<Upstream> | undefined;
  #port = 0;

  private constructor(o: GatewayOptions) {
    this.#o = o;
    this.#log = o.log ?? silentLogger();
    const server = o.kubeConfig.getCurrentCluster()?.server;
    if (server === undefined) throw new Error('the kubeconfig has no current cluster');
    this.#target = new URL(server);
    this.#server = nodeHttp.createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        this.#log.warn({ error: err instanceof Error ? err.message : String(err) }, 'helm gateway request failed');
        if (!res.headersSent) sendStatus(res, 502, 'InternalError', 'the helm gateway could not reach the API server');
        else res.destroy();
      });
    });
    // helm's watches (`--wait`) stay open for as long as the operation runs.
    this.#server.requestTimeout = 0;
  }

  static async start(o: GatewayOptions): Promise<HelmApiGateway> {
    const gateway = new HelmApiGateway(o);
    await mkdir(o.dir, { recursive: true, mode: 0o700 });
    await new Promise<void>((resolve, reject) => {
      gateway.#server.once('error', reject);
      gateway.#server.listen(0, '127.0.0.1', () => {
        resolve();
      });
    });
    gateway.#port = (gateway.#server.address() as AddressInfo).port;
    return gateway;
  }

  get port(): number {
    return this.#port;
  }

  /** A kubeconfig for one helm run under `policy`; close it when the run ends. */
  async grant(policy: GatewayPolicy): Promise<Grant> {
    const token = randomBytes(32).toString('base64url');
    const file = path.join(this.#o.dir, `grant-${token.slice(0, 16)}.kubeconfig`);
    const cacheDir = path.join(this.#o.dir, `grant-${token.slice(0, 16)}.cache`);
    await writeFile(file, kubeconfigFor(this.#port, token, policy.namespace), { mode: 0o600, flag: 'wx' });
    this.#grants.set(token, policy);
    return {
      kubeconfig: file,
      cacheDir,
      close: async () => {
        this.#grants.delete(token);
        await rm(file, { force: true });
        await rm(cacheDir, { recursive: true, force: true });
      },
    };
  }

  async close(): Promise<void> {
    this.#grants.clear();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) =>
      this.#server.close(() => {
        resolve();
      }),
    );
    const up = await this.#upstream?.catch(() => undefined);
    up?.agent.destroy();
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const granted = grantedPath(req.url ?? '/');
    const policy = granted === undefined ? undefined : this.#grants.get(granted.token);
    if (granted === undefined || policy === undefined) {
      req.resume();
      sendStatus(res, 401, 'Unauthorized', 'no grant of the helm gateway');
      return;
    }
    // Decided and forwarded on the same normalised path.
    const url = normalizedUrl(granted.rest);
    const request = parseApiRequest(req.method ?? 'GET', url);
    const decision = decide(request, policy, await this.#scope(request));
    if (decision.action === 'refuse') {
      this.#log.info(
        { namespace: policy.namespace, release: policy.releases[0], method: req.method, path: url.split('?')[0] },
        'helm gateway refused a request',
      );
    }
    await this.#carryOut(decision, { req, res, url, request, policy });
  }

  async #carryOut(
    decision: Decision,
    c: { req: http.IncomingMessage; res: http.ServerResponse; url: string; request: ApiRequest; policy: GatewayPolicy },
  ): Promise<void> {
    const { req, res, url, policy } = c;
    const checked = { request: c.request as ResourceRequest, policy };
    switch (decision.action) {
      case 'refuse':
        req.resume();
        sendStatus(res, 403, 'Forbidden', decision.message);
        return;
      case 'hide':
        req.resume();
        sendNotFound(res, c.request);
        return;
      case 'forward':
        await this.#pipe(req, res, url);
        return;
      case 'inspect':
        req.resume();
        await this.#inspect(req, res, url, checked);
        return;
      case 'check-target':
        await this.#checkTarget(req, res, url, checked);
        return;
      case 'check-storage-record':
        await this.#checkStorageRecord(req, res, url, policy);
        return;
    }
    assertNever(decision);
  }

  async #scope(request: ApiRequest): Promise<ResourceScope | undefined> {
    if (request.type !== 'resource') return undefined;
    return this.#o.scopes(request.group, request.version, request.resource);
  }

  #credentials(): Promise<Upstream> {
    const now = Date.now();
    const current = this.#upstream;
    this.#upstream = (async () => {
      const previous = await current?.catch(() => undefined);
      if (previous !== undefined && now - previous.at < CREDENTIALS_TTL_MS) return previous;
      const tls: https.RequestOptions = { headers: {} };
      await this.#o.kubeConfig.applyToHTTPSOptions(tls);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(tls.headers ?? {})) if (typeof v === 'string') headers[k] = v;
      const sameTls = previous !== undefined && sameTlsMaterial(previous.tls, tls);
      if (previous !== undefined && !sameTls) previous.agent.destroy();
      const agent = sameTls ? previous.agent : this.#agent(tls);
      return { agent, headers, tls, at: now };
    })();
    return this.#upstream;
  }

  #agent(tls: https.RequestOptions): http.Agent {
    if (this.#target.protocol !== 'https:') return new nodeHttp.Agent({ keepAlive: true });
    return new https.Agent({
      keepAlive: true,
      ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
      ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
      ...(tls.key !== undefined ? { key: tls.key } : {}),
      ...(tls.rejectUnauthorized !== undefined ? { rejectUnauthorized: tls.rejectUnauthorized } : {}),
      ...(tls.servername !== undefined ? { servername: tls.servername } : {}),
    });
  }

  async #request(method: string, url: string, headers: http.OutgoingHttpHeaders): Promise<http.ClientRequest> {
    const up = await this.#credentials();
    const base = this.#target.pathname.replace(/\/$/, '');
    const target = new URL(`${this.#target.origin}${base}${url}`);
    const mod = target.protocol === 'https:' ? https : nodeHttp;
    return mod.request(target, { method, agent: up.agent, headers: { ...headers, ...up.headers } });
  }

  async #pipe(req: http.IncomingMessage, res: http.ServerResponse, url: string): Promise<void> {
    const upstream = await this.#request(req.method ?? 'GET', url, forwardedHeaders(req.headers));
    await new Promise<void>((resolve, reject) => {
      let ended = false;
      upstream.on('response', (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, passedResponseHeaders(upRes.headers, true));
        upRes.pipe(res);
        upRes.on('end', () => {
          ended = true;
          resolve();
        });
        upRes.on('error', reject);
      });
      upstream.on('error', reject);
      // helm going away (a cancelled run) ends the upstream request too, a watch included.
      res.on('close', () => {
        if (!ended) upstream.destroy();
        resolve();
      });
      req.pipe(upstream);
    });
  }

  /** A JSON request upstream whose answer is read whole. */
  async #fetch(method: string, url: string, headers: http.OutgoingHttpHeaders, body?: Buffer): Promise<UpstreamResponse> {
    // A read of its own: helm's body (and its length and type) belong to the request it guards,
    // unless this request sends that body again (a dry run of it).
    const { 'accept-encoding': _encoding, 'content-length': _length, 'content-type': type, ...rest } = headers;
    const json: http.OutgoingHttpHeaders = {
      ...rest,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': type, 'content-length': body.length }),
    };
    const upstream = await this.#request(method, url, json);
    return new Promise<UpstreamResponse>((resolve, reject) => {
      upstream.on('response', (upRes) => {
        const chunks: Buffer[] = [];
        let size = 0;
        upRes.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_INSPECTED_BYTES) {
            upRes.destroy(new Error(`more than ${MAX_INSPECTED_BYTES} bytes to inspect`));
            return;
          }
          chunks.push(chunk);
        });
        upRes.on('end', () => {
          resolve({ status: upRes.statusCode ?? 502, headers: upRes.headers, body: Buffer.concat(chunks) });
        });
        upRes.on('error', reject);
      });
      upstream.on('error', reject);
      upstream.end(body);
    });
  }

  /** A read of Secrets: answered only with what the policy lets helm see. */
  async #inspect(req: http.IncomingMessage, res: http.ServerResponse, url: string, { request, policy }: Checked): Promise<void> {
    const answer = await this.#fetch('GET', url, forwardedHeaders(req.headers));
    if (answer.status < 200 || answer.status > 299) {
      passThrough(res, answer);
      return;
    }
    const body = JSON.parse(answer.body.toString('utf8')) as SecretLike & { items?: SecretLike[] };
    if (request.name !== undefined) {
      if (readable(body.metadata ?? {}, policy, body.type)) passThrough(res, answer);
      else sendNotFound(res, request);
      return;
    }
    const items = (body.items ?? []).filter((item) => readable(item.metadata ?? {}, policy, item.type));
    sendJson(res, answer.status, { ...body, items });
  }

  /** A Secret created under an `allowKinds` without Secret: only helm's own release record. */
  async #checkStorageRecord(req: http.IncomingMessage, res: http.ServerResponse, url: string, policy: GatewayPolicy): Promise<void> {
    const body = await readBody(req);
    const headers = forwardedHeaders(req.headers);
    // helm's typed client may send protobuf: the API server reads the body for us, in a dry run
    // of the very same create, and answers the object as JSON.
    const dry = await this.#fetch('POST', `${url}${url.includes('?') ? '&' : '?'}dryRun=All`, headers, body);
    if (dry.status < 200 || dry.status > 299) {
      passThrough(res, dry);
      return;
    }
    const meta = (JSON.parse(dry.body.toString('utf8')) as { metadata?: ObjectMeta }).metadata ?? {};
    if (!isStorageRecord(meta, policy)) {
      sendStatus(
        res,
        403,
        'Forbidden',
        `refused by the helm gateway: create Secret ${meta.name ?? ''}: Secret is not in this watch's allowKinds`,
      );
      return;
    }
    passThrough(res, await this.#fetch('POST', url, headers, body));
  }

  /** A change to a Secret: only to one helm may read (or one that does not exist yet). */
  async #checkTarget(req: http.IncomingMessage, res: http.ServerResponse, url: string, { request, policy }: Checked): Promise<void> {
    const current = await this.#fetch('GET', new URL(url, 'http://gateway.invalid').pathname, forwardedHeaders(req.headers));
    if (current.status >= 200 && current.status <= 299) {
      const body = JSON.parse(current.body.toString('utf8')) as SecretLike;
      if (!changeable(body.metadata ?? {}, policy, body.type)) {
        req.resume();
        sendStatus(
          res,
          403,
          'Forbidden',
          `refused by the helm gateway: Secret ${request.namespace ?? ''}/${request.name ?? ''} exists and is not release ${policy.releases.join(', ')}'s`,
        );
        return;
      }
    } else if (current.status !== 404) {
      req.resume();
      passThrough(res, current);
      return;
    }
    await this.#pipe(req, res, url);
  }
}

/** The request body, up to {@link MAX_INSPECTED_BYTES}. */
async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_INSPECTED_BYTES) throw new Error(`a request body of more than ${MAX_INSPECTED_BYTES} bytes to inspect`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** What the gateway reads of a Secret. */
interface SecretLike {
  readonly metadata?: ObjectMeta;
  readonly type?: string;
}

interface Checked {
  readonly request: ResourceRequest;
  readonly policy: GatewayPolicy;
}

function assertNever(x: never): never {
  throw new Error(`unexpected decision ${JSON.stringify(x)}`);
}

/**
 * The grant's token is the first segment of the server URL helm is given: client-go sends no
 * bearer token to a plain-HTTP server, and a loopback listener needs no TLS to keep it.
 */
function grantedPath(url: string): { token: string; rest: string } | undefined {
  const m = /^\/([A-Za-z0-9_-]{43})(\/.*)?$/.exec(url);
  if (m?.[1] === undefined) return undefined;
  return { token: m[1], rest: m[2] ?? '/' };
}

function forwardedHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !DROPPED_REQUEST_HEADERS.has(k)) out[k] = v;
  return out;
}

function passedResponseHeaders(headers: http.IncomingHttpHeaders, streamed: boolean): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    // A streamed body keeps its encoding and length; a re-sent one sets its own.
    if (!streamed && DROPPED_RESPONSE_HEADERS.has(k)) continue;
    if (streamed && (k === 'connection' || k === 'keep-alive' || k === 'transfer-encoding')) continue;
    out[k] = v;
  }
  return out;
}

function passThrough(res: http.ServerResponse, answer: UpstreamResponse): void {
  res.writeHead(answer.status, { ...passedResponseHeaders(answer.headers, false), 'content-length': answer.body.length });
  res.end(answer.body);
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = Buffer.from(JSON.stringify(body), 'utf8');
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': text.length });
  res.end(text);
}

function sendStatus(res: http.ServerResponse, code: number, reason: string, message: string): void {
  sendJson(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

/** The API server's own NotFound, so helm and `lookup()` read it as "no such object". */
function sendNotFound(res: http.ServerResponse, request: ApiRequest): void {
  const r = request.type === 'resource' ? request : undefined;
  const name = r?.name ?? '';
  const resource = r?.resource ?? '';
  sendJson(res, 404, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `${resource}${r !== undefined && r.group !== '' ? `.${r.group}` : ''} "${name}" not found`,
    reason: 'NotFound',
    details: { name, ...(r !== undefined && r.group !== '' ? { group: r.group } : {}), kind: resource },
    code: 404,
  });
}

function sameTlsMaterial(a: https.RequestOptions, b: https.RequestOptions): boolean {
  const same = (x: unknown, y: unknown): boolean => (Buffer.isBuffer(x) && Buffer.isBuffer(y) ? x.equals(y) : x === y);
  return same(a.ca, b.ca) && same(a.cert, b.cert) && same(a.key, b.key) && a.rejectUnauthorized === b.rejectUnauthorized;
}

function kubeconfigFor(port: number, token: string, namespace: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'helm-gateway', cluster: { server: `http://127.0.0.1:${port}/${token}` } }],
    users: [{ name: 'helm', user: {} }],
    contexts: [{ name: 'helm-gateway', context: { cluster: 'helm-gateway', user: 'helm', namespace } }],
    'current-context': 'helm-gateway',
  });
}
