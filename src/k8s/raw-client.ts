/**
 * JSON requests to any API path, with exactly the server, TLS dispatcher, credentials (exec/OIDC
 * refresh included) and middleware of client-node's generated clients (it is built by
 * `KubeConfig.makeApiClient`), but none of their typed (de)serialisation: bodies go and come as
 * the API server's JSON. The typed models drop fields they do not know (a newer API's fields,
 * `x-kubernetes-*` in a CRD), rename others and turn timestamps into Dates, which is wrong for
 * objects a chart rendered and for comparing what the server returns with what a watch delivers.
 */
import { ApiException, HttpMethod, type Configuration, type RequestContext } from './client-node.js';

/** Where a resource is served. `group: ''` is the core group (`/api/v1`). */
export interface ResourceRef {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  /** Only this namespace; undefined or '' for all namespaces or a cluster-scoped resource. */
  readonly namespace?: string;
}

/** `/api/v1/secrets`, `/apis/apps/v1/namespaces/ns/deployments`, … */
export function resourcePath(ref: ResourceRef): string {
  const root = ref.group === '' ? `/api/${ref.version}` : `/apis/${ref.group}/${ref.version}`;
  const ns = ref.namespace === undefined || ref.namespace === '' ? '' : `/namespaces/${encodeURIComponent(ref.namespace)}`;
  return `${root}${ns}/${ref.plural}`;
}

export interface RawRequest {
  readonly query?: Readonly<Record<string, string | undefined>>;
  /** Sent as JSON with `contentType` (a patch type for PATCH). */
  readonly body?: unknown;
  readonly contentType?: string;
  /** A user to act as (`Impersonate-User`); the API server then authorizes the request as that user. */
  readonly impersonate?: string;
  /** Default `application/json`; e.g. the PartialObjectMetadata form for metadata only. */
  readonly accept?: string;
}

/** The status and latency of each answered request, for the concurrency tuner (one observer per process). */
export type ApiRequestObserver = (status: number, durationMs: number) => void;
let observer: ApiRequestObserver | undefined;

/** Sets (undefined: clears) the process's observer of every RawClient request. */
export function observeApiRequests(fn: ApiRequestObserver | undefined): void {
  observer = fn;
}

export class RawClient {
  constructor(private readonly config: Configuration) {}

  /**
   * Resolves with the parsed JSON body of a 2xx answer; rejects with an `ApiException` whose `body`
   * is the raw v1.Status text otherwise, the same shape as the generated clients' errors.
   */
  async request(method: HttpMethod, path: string, req: RawRequest = {}): Promise<unknown> {
    const ctx = this.config.baseServer.makeRequestContext(path, method);
    for (const [name, value] of Object.entries(req.query ?? {})) if (value !== undefined) ctx.setQueryParam(name, value);
    ctx.setHeaderParam('Accept', req.accept ?? 'application/json');
    if (req.impersonate !== undefined) ctx.setHeaderParam('Impersonate-User', req.impersonate);
    if (req.body !== undefined) {
      ctx.setHeaderParam('Content-Type', req.contentType ?? 'application/json');
      ctx.setBody(JSON.stringify(req.body));
    }
    const { status, text, headers } = await this.#send(ctx);
    if (status < 200 || status > 299)
      throw new ApiException(status, `HTTP-Code: ${status}\nMessage: ${method} ${path} failed`, text, headers);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new ApiException(status, `${method} ${path}: the response is not JSON`, text, headers);
    }
  }

  async #send(request: RequestContext): Promise<{ status: number; text: string; headers: Record<string, string> }> {
    let ctx = request;
    await this.config.authMethods.default?.applySecurityAuthentication(ctx);
    for (const m of this.config.middleware) ctx = await m.pre(ctx).toPromise();
    const started = performance.now();
    let response = await this.config.httpApi.send(ctx).toPromise();
    observer?.(response.httpStatusCode, performance.now() - started);
    for (const m of this.config.middleware) response = await m.post(response).toPromise();
    return { status: response.httpStatusCode, text: await response.body.text(), headers: response.headers };
  }
}
