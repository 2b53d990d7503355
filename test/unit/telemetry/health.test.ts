import { afterEach, describe, expect, it } from 'vitest';
import {
  BindAddressError,
  healthHandler,
  listenHttp,
  parseBindAddress,
  ping,
  type Checker,
  type HttpListener,
} from '../../../src/telemetry/health.js';
import { silentLogger } from '../../../src/telemetry/logger.js';

describe('parseBindAddress', () => {
  it.each([
    [':8080', { host: undefined, port: 8080 }],
    ['127.0.0.1:8081', { host: '127.0.0.1', port: 8081 }],
    ['localhost:0', { host: 'localhost', port: 0 }],
    ['[::1]:9090', { host: '::1', port: 9090 }],
    ['0.0.0.0:80', { host: '0.0.0.0', port: 80 }],
  ])('parses %s', (raw, want) => {
    expect(parseBindAddress('--metrics-bind-address', raw)).toEqual(want);
  });

  it('treats 0 and empty as disabled', () => {
    expect(parseBindAddress('--x', '0')).toBeUndefined();
    expect(parseBindAddress('--x', '')).toBeUndefined();
  });

  it.each(['8080', 'host', ':', ':99999', 'a:b', '::1:80'])('rejects %s naming the flag', (raw) => {
    expect(() => parseBindAddress('--health-probe-bind-address', raw)).toThrow(BindAddressError);
    expect(() => parseBindAddress('--health-probe-bind-address', raw)).toThrow(/--health-probe-bind-address/);
  });
});

describe('health endpoints', () => {
  let server: HttpListener | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function serve(
    readyz: Record<string, Checker>,
  ): Promise<(path: string) => Promise<{ status: number; body: string; type: string | null }>> {
    server = await listenHttp(
      { host: '127.0.0.1', port: 0 },
      healthHandler({ healthz: new Map([['ping', ping]]), readyz: new Map(Object.entries(readyz)) }, silentLogger()),
    );
    const base = `http://${server.address}`;
    return async (path) => {
      const res = await fetch(base + path);
      return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
    };
  }

  const failing: Checker = () => {
    throw new Error('caches not synced: secret detail');
  };

  it('answers 200 "ok" in plain text when every check passes', async () => {
    const get = await serve({ ping, informers: () => undefined });
    expect(await get('/healthz')).toEqual({ status: 200, body: 'ok', type: 'text/plain; charset=utf-8' });
    expect(await get('/readyz')).toMatchObject({ status: 200, body: 'ok' });
    expect(await get('/readyz/')).toMatchObject({ status: 200, body: 'ok' });
  });

  it('lists the checks with ?verbose', async () => {
    const get = await serve({ ping, informers: () => undefined });
    expect((await get('/readyz?verbose')).body).toBe('[+]informers ok\n[+]ping ok\nhealthz check passed\n');
  });

  it('answers 500 listing failing checks, without their reasons', async () => {
    const get = await serve({ ping, informers: failing });
    const res = await get('/readyz');
    expect(res.status).toBe(500);
    expect(res.body).toBe('[-]informers failed: reason withheld\n[+]ping ok\nhealthz check failed\n');
    expect(res.body).not.toContain('secret detail');
  });

  it('supports async checks', async () => {
    const get = await serve({
      slow: () =>
        new Promise<void>((_r, reject) =>
          setTimeout(() => {
            reject(new Error('no'));
          }, 5),
        ),
    });
    expect((await get('/readyz')).status).toBe(500);
  });

  it('skips excluded checks and warns about unknown exclusions', async () => {
    const get = await serve({ ping, informers: failing });
    expect(await get('/readyz?exclude=informers')).toMatchObject({ status: 200, body: 'ok' });
    const res = await get('/readyz?exclude=informers&exclude=nope&verbose');
    expect(res.status).toBe(200);
    expect(res.body).toBe(
      '[+]informers excluded: ok\n[+]ping ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nhealthz check passed\n',
    );
  });

  it('runs one check at /readyz/<name>', async () => {
    const get = await serve({ ping, informers: failing });
    expect(await get('/readyz/ping')).toMatchObject({ status: 200, body: 'ok' });
    expect(await get('/readyz/informers')).toMatchObject({ status: 500, body: 'internal server error: informers check failed\n' });
    expect((await get('/readyz/missing')).status).toBe(404);
  });

  it('answers 404 for other paths', async () => {
    const get = await serve({ ping });
    expect((await get('/')).status).toBe(404);
    expect((await get('/metrics')).status).toBe(404);
    expect((await get('/readyz/ping/extra')).status).toBe(404);
  });

  it('reports a check that starts failing', async () => {
    let synced = false;
    const get = await serve({
      informers: () => {
        if (!synced) throw new Error('not yet');
      },
    });
    expect((await get('/readyz')).status).toBe(500);
    synced = true;
    expect((await get('/readyz')).status).toBe(200);
  });
});

describe('listenHttp', () => {
  it('reports the bound port and fails clearly when the port is taken', async () => {
    const a = await listenHttp({ host: '127.0.0.1', port: 0 }, (_req, res) => res.end());
    try {
      expect(a.port).toBeGreaterThan(0);
      expect(a.address).toBe(`127.0.0.1:${a.port}`);
      await expect(listenHttp({ host: '127.0.0.1', port: a.port }, (_req, res) => res.end())).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await a.close();
    }
  });
});
