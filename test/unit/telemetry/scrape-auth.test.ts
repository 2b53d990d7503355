import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/telemetry/logger.js';
import {
  ALLOW_TTL_MS,
  bearerToken,
  DENY_TTL_MS,
  ScrapeAuthorizer,
  TOKEN_TTL_MS,
  type ScrapeReviewer,
  type ScrapeUser,
} from '../../../src/telemetry/scrape-auth.js';

/** A reviewer that knows two tokens, allows only `reader`, and counts the reviews it was asked for. */
function reviewer(fail: { authn?: boolean; authz?: boolean } = {}): ScrapeReviewer & { calls: { authn: number; authz: number } } {
  const users: Record<string, ScrapeUser> = {
    't-reader': { username: 'system:serviceaccount:mon:prometheus', groups: ['system:serviceaccounts'] },
    't-other': { username: 'system:serviceaccount:x:other', groups: [] },
  };
  const calls = { authn: 0, authz: 0 };
  return {
    calls,
    authenticate: (token) => {
      calls.authn++;
      return fail.authn === true ? Promise.reject(new Error('apiserver away')) : Promise.resolve(users[token]);
    },
    authorize: (user, path, verb) => {
      calls.authz++;
      if (fail.authz === true) return Promise.reject(new Error('apiserver away'));
      return Promise.resolve(user.username.endsWith(':prometheus') && path === '/metrics' && verb === 'get');
    },
  };
}

describe('ScrapeAuthorizer (controller-runtime WithAuthenticationAndAuthorization)', () => {
  it('401 without a token or with an unknown one, 403 without the right, 200 with it', async () => {
    const auth = new ScrapeAuthorizer({ reviewer: reviewer(), log: silentLogger() });
    expect(await auth.decide(undefined, '/metrics', 'GET')).toEqual({ status: 401, message: 'Unauthorized' });
    expect(await auth.decide('Basic abc', '/metrics', 'GET')).toEqual({ status: 401, message: 'Unauthorized' });
    expect(await auth.decide('Bearer nope', '/metrics', 'GET')).toEqual({ status: 401, message: 'Unauthorized' });
    expect(await auth.decide('Bearer t-other', '/metrics', 'GET')).toEqual({
      status: 403,
      message: 'Authorization denied for user system:serviceaccount:x:other',
    });
    expect(await auth.decide('bearer  t-reader ', '/metrics', 'GET')).toEqual({ status: 200 });
    expect(await auth.decide('Bearer t-reader', '/metrics', 'POST')).toMatchObject({ status: 403 });
  });

  it('caches as client-go does: tokens a minute, allowed 5 minutes, denied 30 s', async () => {
    let now = 0;
    const r = reviewer();
    const auth = new ScrapeAuthorizer({ reviewer: r, log: silentLogger(), now: () => now });
    // A scrape every 15 s for 5 minutes: one TokenReview a minute, one SubjectAccessReview in all.
    for (let t = 0; t < ALLOW_TTL_MS; t += 15_000) {
      now = t;
      expect(await auth.decide('Bearer t-reader', '/metrics', 'GET')).toEqual({ status: 200 });
    }
    expect(r.calls).toEqual({ authn: ALLOW_TTL_MS / TOKEN_TTL_MS, authz: 1 });
    now = ALLOW_TTL_MS;
    await auth.decide('Bearer t-reader', '/metrics', 'GET');
    expect(r.calls.authz).toBe(2);
    // A denial is asked again after 30 s (a new RoleBinding takes effect that soon).
    await auth.decide('Bearer t-other', '/metrics', 'GET');
    now += DENY_TTL_MS - 1;
    await auth.decide('Bearer t-other', '/metrics', 'GET');
    expect(r.calls.authz).toBe(3);
    now += 1;
    await auth.decide('Bearer t-other', '/metrics', 'GET');
    expect(r.calls.authz).toBe(4);
  });

  it('keeps each cache bounded, whatever the number of tokens', async () => {
    const auth = new ScrapeAuthorizer({ reviewer: reviewer(), log: silentLogger(), maxEntries: 8 });
    for (let i = 0; i < 50; i++) await auth.decide(`Bearer junk-${i}`, '/metrics', 'GET');
    expect(auth.cached.tokens).toBe(8);
  });

  it('a review that fails: 401 for the token, 500 for the decision; never cached', async () => {
    const authn = reviewer({ authn: true });
    const a = new ScrapeAuthorizer({ reviewer: authn, log: silentLogger() });
    expect(await a.decide('Bearer t-reader', '/metrics', 'GET')).toMatchObject({ status: 401 });
    await a.decide('Bearer t-reader', '/metrics', 'GET');
    expect(authn.calls.authn).toBe(2);
    const b = new ScrapeAuthorizer({ reviewer: reviewer({ authz: true }), log: silentLogger() });
    expect(await b.decide('Bearer t-reader', '/metrics', 'GET')).toEqual({
      status: 500,
      message: 'Authorization for user system:serviceaccount:mon:prometheus failed',
    });
  });

  it('reads a bearer token', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken(undefined)).toBeUndefined();
    expect(bearerToken('Bearer')).toBeUndefined();
  });
});
