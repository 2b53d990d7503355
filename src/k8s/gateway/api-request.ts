/**
 * What an HTTP request to the Kubernetes API asks for, read from its method and URL alone, the way
 * the API server's request-info resolver reads it (k8s.io/apiserver `RequestInfoFactory`). Pure.
 */

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

export interface ResourceRequest {
  readonly type: 'resource';
  readonly verb: Verb;
  /** '' for the core group. */
  readonly group: string;
  readonly version: string;
  /** The plural, e.g. `secrets`. */
  readonly resource: string;
  readonly subresource?: string;
  /** Present when the path names a namespace (`/namespaces/NS/...`); absent for cluster-wide paths. */
  readonly namespace?: string;
  readonly name?: string;
  /** Terms of the `labelSelector` query, e.g. `owner=helm`. */
  readonly labelSelector: readonly string[];
}

export type ApiRequest =
  | ResourceRequest
  /** Discovery and version information: `/api`, `/apis/apps/v1`, `/openapi/v3/...`, `/version`. */
  | { readonly type: 'discovery' }
  /** Anything else (`/logs`, `/metrics`, a verb we do not map): the gateway refuses it. */
  | { readonly type: 'other'; readonly path: string };

const WRITE_VERBS: Readonly<Record<string, Verb>> = { POST: 'create', PUT: 'update', PATCH: 'patch' };

export const isWrite = (verb: Verb): boolean => verb !== 'get' && verb !== 'list' && verb !== 'watch';

/** `/api/v1/...` → core group; `/apis/G/V/...`; undefined for other roots. */
function splitRoot(segments: readonly string[]): { group: string; version: string; rest: readonly string[] } | 'discovery' | undefined {
  if (segments.length === 0) return undefined;
  if (segments[0] === 'api') {
    if (segments.length <= 2) return 'discovery';
    return { group: '', version: segments[1] ?? '', rest: segments.slice(2) };
  }
  if (segments[0] === 'apis') {
    if (segments.length <= 3) return 'discovery';
    return { group: segments[1] ?? '', version: segments[2] ?? '', rest: segments.slice(3) };
  }
  return undefined;
}

function verbOf(method: string, name: string | undefined, watch: boolean): Verb | undefined {
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (watch) return 'watch';
      return name === undefined ? 'list' : 'get';
    case 'DELETE':
      return name === undefined ? 'deletecollection' : 'delete';
    default:
      return WRITE_VERBS[method];
  }
}

/**
 * The path and query the gateway decides on and forwards: `url` with dot segments resolved, so the
 * API server is sent exactly the path that was checked.
 */
export function normalizedUrl(url: string): string {
  const parsed = new URL(url, 'http://gateway.invalid');
  return `${parsed.pathname}${parsed.search}`;
}

/** The path's segments, decoded; undefined when one could be read as another path by the API server. */
function segmentsOf(pathname: string): string[] | undefined {
  try {
    const segments = pathname
      .split('/')
      .filter((s) => s !== '')
      .map((s) => decodeURIComponent(s));
    return segments.some((s) => s === '.' || s === '..' || s.includes('/')) ? undefined : segments;
  } catch {
    return undefined;
  }
}

const isDiscoveryRoot = (segments: readonly string[]): boolean => segments[0] === 'version' || segments[0] === 'openapi';

/** Pure: the request `method url` (url as sent: path and query) as the API server would read it. */
export function parseApiRequest(method: string, url: string): ApiRequest {
  const parsed = new URL(normalizedUrl(url), 'http://gateway.invalid');
  const other = { type: 'other', path: parsed.pathname } as const;
  const segments = segmentsOf(parsed.pathname);
  if (segments === undefined) return other;
  const root = isDiscoveryRoot(segments) ? 'discovery' : splitRoot(segments);
  if (root === 'discovery') return method === 'GET' ? { type: 'discovery' } : other;
  if (root === undefined) return other;
  const target = targetOf(root.rest);
  if (target === undefined) return other;
  const watch = ['true', '1'].includes(parsed.searchParams.get('watch') ?? '');
  const verb = verbOf(method, target.name, watch);
  if (verb === undefined) return other;
  const selector = parsed.searchParams.get('labelSelector') ?? '';
  return {
    type: 'resource',
    verb,
    group: root.group,
    version: root.version,
    ...target,
    labelSelector: selector === '' ? [] : selector.split(',').map((t) => t.trim()),
  };
}

/** As the API server's request-info resolver: `/namespaces/NS/status` is the Namespace's own. */
const NAMESPACE_SUBRESOURCES: ReadonlySet<string> = new Set(['status', 'finalize']);

/**
 * `[namespaces, NS,] resource [, name [, subresource]]`. `/namespaces/NS/<resource>...` is
 * namespaced; `/namespaces` and `/namespaces/NS` (and its subresources such as `finalize`) are the
 * cluster-scoped Namespace object itself.
 */
function targetOf(rest: readonly string[]): Pick<ResourceRequest, 'resource' | 'name' | 'subresource' | 'namespace'> | undefined {
  const namespaced = rest[0] === 'namespaces' && rest.length >= 3 && !NAMESPACE_SUBRESOURCES.has(rest[2] ?? '');
  const [resource, name, subresource, ...extra] = namespaced ? rest.slice(2) : rest;
  if (resource === undefined || extra.length > 0) return undefined;
  return {
    resource,
    ...(namespaced && rest[1] !== undefined ? { namespace: rest[1] } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(subresource !== undefined ? { subresource } : {}),
  };
}
