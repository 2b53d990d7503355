/**
 * Authentication and authorization of each scrape, as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization` does it (`--metrics-require-rbac`, ADR 0079): the
 * bearer token is checked by a TokenReview, then its user by a SubjectAccessReview of the
 * non-resource URL (`get` on `/metrics`, which kubebuilder's `metrics-reader` ClusterRole grants).
 * No token or an unknown one: 401. Not allowed: 403. A review that fails (the API server away): 401
 * for authentication, 500 for authorization, as controller-runtime answers.
 *
 * Results are cached as client-go's delegating authenticator and authorizer cache them (a token
 * for a minute; an allowed decision for 5 minutes, a denied one for 30 s), so a scrape every 15 s
 * costs no API request most of the time. Each cache is bounded; the oldest entry goes first.
 * The review itself is a port: the Kubernetes calls are in src/k8s/scrape-review.ts.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from './logger.js';

export interface ScrapeUser {
  readonly username: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** The two reviews; each throws when the API server cannot answer. */
export interface ScrapeReviewer {
  /** TokenReview; undefined: the token is not valid. */
  authenticate(token: string): Promise<ScrapeUser | undefined>;
  /** SubjectAccessReview of a non-resource URL. */
  authorize(user: ScrapeUser, path: string, verb: string): Promise<boolean>;
}

export interface ScrapeAuthOptions {
  readonly reviewer: ScrapeReviewer;
  readonly log: Logger;
  readonly now?: () => number;
  /** Entries per cache; default {@link SCRAPE_CACHE_ENTRIES}. */
  readonly maxEntries?: number;
}

/** client-go's delegating authenticator `CacheTTL` (controller-runtime's setting). */
export const TOKEN_TTL_MS = 60_000;
/** A rejected token is asked again sooner. */
export const INVALID_TOKEN_TTL_MS = 10_000;
/** client-go's delegating authorizer `AllowCacheTTL` / `DenyCacheTTL`. */
export const ALLOW_TTL_MS = 5 * 60_000;
export const DENY_TTL_MS = 30_000;
/** A few scrapers (Prometheus replicas, an agent) are the norm; a flood of tokens evicts the oldest. */
export const SCRAPE_CACHE_ENTRIES = 256;

/** A bounded map whose entries expire. */
class TtlCache<V> {
  readonly #entries = new Map<string, { value: V; until: number }>();
  constructor(
    private readonly max: number,
    private readonly now: () => number,
  ) {}

  get(key: string): V | undefined {
    const e = this.#entries.get(key);
    if (e === undefined) return undefined;
    if (e.until <= this.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    this.#entries.delete(key);
    if (this.#entries.size >= this.max) this.#entries.delete(this.#entries.keys().next().value as string);
    this.#entries.set(key, { value, until: this.now() + ttlMs });
  }

  get size(): number {
    return this.#entries.size;
  }
}

/** The token of an `Authorization: Bearer <token>` header; undefined when there is none. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

export type Decision = { readonly status: 200 } | { readonly status: 401 | 403 | 500; readonly message: string };

/** Decides whether a request may be served, with the reviews cached. */
export class ScrapeAuthorizer {
  readonly #tokens: TtlCache<ScrapeUser | null>;
  readonly #decisions: TtlCache<boolean>;
  readonly #o: ScrapeAuthOptions;

  constructor(o: ScrapeAuthOptions) {
    this.#o = o;
    const now = o.now ?? Date.now;
    const max = o.maxEntries ?? SCRAPE_CACHE_ENTRIES;
    this.#tokens = new TtlCache(max, now);
    this.#decisions = new TtlCache(max, now);
  }

  /** Entries cached now (tests, and a check that the caches stay bounded). */
  get cached(): { readonly tokens: number; readonly decisions: number } {
    return { tokens: this.#tokens.size, decisions: this.#decisions.size };
  }

  async decide(authorization: string | undefined, path: string, method: string): Promise<Decision> {
    const token = bearerToken(authorization);
    if (token === undefined) return { status: 401, message: 'Unauthorized' };
    const user = await this.#authenticate(token);
    if (user === undefined) return { status: 401, message: 'Unauthorized' };
    const verb = method.toLowerCase();
    let allowed: boolean;
    try {
      allowed = await this.#authorize(user, path, verb);
    } catch (err) {
      this.#o.log.error({ error: err, user: user.username }, 'Authorizing a metrics scrape failed');
      return { status: 500, message: `Authorization for user ${user.username} failed` };
    }
    if (!allowed) return { status: 403, message: `Authorization denied for user ${user.username}` };
    return { status: 200 };
  }

  async #authenticate(token: string): Promise<ScrapeUser | undefined> {
    // The token itself is never kept: its hash is the key.
    const key = createHash('sha256').update(token).digest('base64');
    const cached = this.#tokens.get(key);
    if (cached !== undefined) return cached ?? undefined;
    try {
      const user = await this.#o.reviewer.authenticate(token);
      this.#tokens.set(key, user ?? null, user === undefined ? INVALID_TOKEN_TTL_MS : TOKEN_TTL_MS);
      return user;
    } catch (err) {
      this.#o.log.error({ error: err }, 'Authenticating a metrics scrape failed');
      return undefined;
    }
  }

  async #authorize(user: ScrapeUser, path: string, verb: string): Promise<boolean> {
    const key = JSON.stringify([user.username, user.uid ?? '', [...user.groups].sort(), user.extra ?? {}, path, verb]);
    const cached = this.#decisions.get(key);
    if (cached !== undefined) return cached;
    const allowed = await this.#o.reviewer.authorize(user, path, verb);
    this.#decisions.set(key, allowed, allowed ? ALLOW_TTL_MS : DENY_TTL_MS);
    return allowed;
  }
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** `handler` behind {@link ScrapeAuthorizer}: only an authorized request reaches it. */
export function withScrapeAuth(handler: Handler, authorizer: ScrapeAuthorizer, log: Logger): Handler {
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    authorizer.decide(req.headers.authorization, path, req.method ?? 'GET').then(
      (d) => {
        if (d.status === 200) handler(req, res);
        else
          res
            .writeHead(d.status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' })
            .end(`${d.message}\n`);
      },
      (err: unknown) => {
        log.error({ error: err }, 'Checking a metrics scrape failed');
        if (!res.headersSent) res.writeHead(500).end();
      },
    );
  };
}
