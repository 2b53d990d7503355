/**
 * The gateway's HTTP behaviour against a small fake API server on 127.0.0.1 (the decisions
 * themselves are policy.test.ts's; the real API server and helm are the integration test's).
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfig } from '../../../../src/k8s/client-node.js';
import { HelmApiGateway, type GatewayPolicy } from '../../../../src/k8s/gateway/gateway.js';

const LABEL = { key: 'helm.sdk.operatorframework.io/values-source', value: 'true' };
const policy: GatewayPolicy = {
  namespace: 'tenant-a',
  releases: ['web'],
  confineWrites: true,
  allowClusterScoped: [],
  readableLabel: LABEL,
};

const secret = (name: string, extra: Record<string, unknown> = {}) => ({
  kind: 'Secret',
  metadata: { name, namespace: 'tenant-a', ...extra },
  data: { v: 'c2VjcmV0' },
});
const OBJECTS: Record<string, unknown> = {
  '/api/v1/namespaces/tenant-a/secrets/mine': secret('mine', {
    annotations: { 'meta.helm.sh/release-name': 'web', 'meta.helm.sh/release-namespace': 'tenant-a' },
  }),
  '/api/v1/namespaces/tenant-a/secrets/internal': secret('internal'),
  '/api/v1/namespaces/tenant-a/secrets': {
    kind: 'SecretList',
    metadata: {},
    items: [secret('internal'), secret('shared', { labels: { [LABEL.key]: 'true' } })],
  },
};

/** The first chunk of a streamed answer, as text. */
async function readFirstChunk(res: Response): Promise<string> {
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) return Buffer.from(chunk).toString('utf8');
  return '';
}

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  impersonate: string | undefined;
}

describe('HelmApiGateway', () => {
  const seen: Seen[] = [];
  let upstream: http.Server;
  let gateway: HelmApiGateway;
  let dir: string;

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        authorization: req.headers.authorization,
        impersonate: req.headers['impersonate-user'] as string | undefined,
      });
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/apis/apps/v1/namespaces/tenant-a/deployments' && url.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"type":"ADDED","object":{"kind":"ConfigMap"}}\n');
        return; // a watch stays open
      }
      const body = OBJECTS[url.pathname];
      if (req.method === 'GET' && body !== undefined) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
        return;
      }
      if (req.method === 'GET' && url.pathname.startsWith('/api/v1/namespaces/tenant-a/secrets/')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"kind":"Status","code":404,"reason":"NotFound"}');
        return;
      }
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"kind":"APIVersions"}');
        return;
      }
      res.writeHead(201, { 'content-type': 'application/json' });
      req.pipe(res);
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, skipTLSVerify: true }],
      users: [{ name: 'operator', token: 'operator-token' }],
      contexts: [{ name: 'c', cluster: 'c', user: 'operator' }],
      currentContext: 'c',
    });
    dir = await mkdtemp(path.join(tmpdir(), 'gateway-test-'));
    const scopes = (group: string, _version: string, resource: string) =>
      Promise.resolve(
        group === 'rbac.authorization.k8s.io' && resource === 'clusterrolebindings'
          ? { kind: 'ClusterRoleBinding', namespaced: false }
          : { kind: resource === 'secrets' ? 'Secret' : 'X', namespaced: true },
      );
    gateway = await HelmApiGateway.start({ kubeConfig: kc, scopes, dir: path.join(dir, 'grants') });
  });
  afterAll(async () => {
    await gateway.close();
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  async function call(token: string, method: string, url: string, o: { body?: string; headers?: Record<string, string> } = {}) {
    const res = await fetch(`http://127.0.0.1:${gateway.port}/${token}${url}`, {
      method,
      headers: { authorization: 'Bearer from-helm', ...o.headers },
      ...(o.body === undefined ? {} : { body: o.body }),
    });
    const text = await res.text();
    return { status: res.status, json: JSON.parse(text) as Record<string, unknown> };
  }
  async function withGrant<T>(fn: (token: string) => Promise<T>): Promise<T> {
    const grant = await gateway.grant(policy);
    const config = JSON.parse(await readFile(grant.kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] };
    const server = config.clusters[0]?.cluster.server ?? '';
    expect(server.startsWith(`http://127.0.0.1:${gateway.port}/`)).toBe(true);
    expect((await stat(grant.kubeconfig)).mode & 0o777).toBe(0o600);
    try {
      return await fn(server.split('/').pop()!);
    } finally {
      await grant.close();
    }
  }

  it('answers 401 without a grant, and once a grant is closed', async () => {
    expect((await call('nope', 'GET', '/api')).status).toBe(401);
    expect((await call('A'.repeat(43), 'GET', '/api')).status).toBe(401);
    const token = await withGrant(async (t) => {
      expect((await call(t, 'GET', '/api')).status).toBe(200);
      return t;
    });
    expect((await call(token, 'GET', '/api')).status).toBe(401);
  });

  it("forwards with the operator's credentials, never the grant's, and keeps helm's impersonation", async () => {
    await withGrant(async (t) => {
      seen.length = 0;
      const res = await call(t, 'POST', '/api/v1/namespaces/tenant-a/configmaps', {
        body: '{"kind":"ConfigMap"}',
        headers: { 'impersonate-user': 'system:serviceaccount:tenant-a:deployer' },
      });
      expect(res).toEqual({ status: 201, json: { kind: 'ConfigMap' } });
      expect(seen).toEqual([
        {
          method: 'POST',
          url: '/api/v1/namespaces/tenant-a/configmaps',
          authorization: 'Bearer operator-token',
          impersonate: 'system:serviceaccount:tenant-a:deployer',
        },
      ]);
    });
  });

  it('refuses a confined write before it reaches the API server', async () => {
    await withGrant(async (t) => {
      seen.length = 0;
      const res = await call(t, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', { body: '{}' });
      expect(res.status).toBe(403);
      expect(res.json).toMatchObject({ kind: 'Status', reason: 'Forbidden', code: 403 });
      expect(String(res.json.message)).toMatch(/^refused by the helm gateway: /);
      const outside = await call(t, 'PUT', '/api/v1/namespaces/tenant-a/../kube-system/configmaps/x', { body: '{}' });
      expect(outside.status).toBe(403);
      expect(seen).toEqual([]);
    });
  });

  it("hides other namespaces' objects and unreadable Secrets as NotFound, and filters lists", async () => {
    await withGrant(async (t) => {
      expect(await call(t, 'GET', '/api/v1/namespaces/tenant-b/secrets/db')).toMatchObject({ status: 404, json: { reason: 'NotFound' } });
      expect(await call(t, 'GET', '/api/v1/namespaces/tenant-a/secrets/internal')).toMatchObject({
        status: 404,
        json: { reason: 'NotFound' },
      });
      expect(await call(t, 'GET', '/api/v1/namespaces/tenant-a/secrets/mine')).toMatchObject({
        status: 200,
        json: { metadata: { name: 'mine' } },
      });
      const list = await call(t, 'GET', '/api/v1/namespaces/tenant-a/secrets');
      expect((list.json.items as { metadata: { name: string } }[]).map((i) => i.metadata.name)).toEqual(['shared']);
    });
  });

  it('refuses to change a Secret helm may not read, and lets it create one that does not exist', async () => {
    await withGrant(async (t) => {
      seen.length = 0;
      expect((await call(t, 'PATCH', '/api/v1/namespaces/tenant-a/secrets/internal', { body: '{}' })).status).toBe(403);
      expect(seen.map((s) => s.method)).toEqual(['GET']);
      expect((await call(t, 'PATCH', '/api/v1/namespaces/tenant-a/secrets/new-one', { body: '{"a":1}' })).status).toBe(201);
      expect((await call(t, 'PATCH', '/api/v1/namespaces/tenant-a/secrets/mine', { body: '{"a":1}' })).status).toBe(201);
    });
  });

  it("under allowKinds without Secret, creates only helm's own release record, judged by a dry run of the same create", async () => {
    const grant = await gateway.grant({ ...policy, confineWrites: false, allowKinds: ['ConfigMap'] });
    const token = (
      JSON.parse(await readFile(grant.kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] }
    ).clusters[0]!.cluster.server.split('/').pop()!;
    try {
      seen.length = 0;
      const record = { kind: 'Secret', metadata: { name: 'sh.helm.release.v1.web.v1', labels: { owner: 'helm', name: 'web' } } };
      expect((await call(token, 'POST', '/api/v1/namespaces/tenant-a/secrets', { body: JSON.stringify(record) })).status).toBe(201);
      expect(seen.map((x) => x.url)).toEqual(['/api/v1/namespaces/tenant-a/secrets?dryRun=All', '/api/v1/namespaces/tenant-a/secrets']);
      seen.length = 0;
      const other = { kind: 'Secret', metadata: { name: 'planted', labels: { owner: 'helm', name: 'web' } } };
      expect((await call(token, 'POST', '/api/v1/namespaces/tenant-a/secrets', { body: JSON.stringify(other) })).status).toBe(403);
      expect(seen.map((x) => x.url)).toEqual(['/api/v1/namespaces/tenant-a/secrets?dryRun=All']);
    } finally {
      await grant.close();
    }
  });

  it('streams a watch as it comes and ends it upstream when helm goes away', async () => {
    await withGrant(async (t) => {
      const controller = new AbortController();
      const res = await fetch(`http://127.0.0.1:${gateway.port}/${t}/apis/apps/v1/namespaces/tenant-a/deployments?watch=true`, {
        signal: controller.signal,
      });
      const first = await readFirstChunk(res);
      expect(first).toContain('"ADDED"');
      controller.abort();
    });
  });
});
