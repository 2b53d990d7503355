import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { CoreV1Api, RbacAuthorizationV1Api, type V1ClusterRole } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { serviceAccountToken } from '../../support/deploy.js';
import { createNamespace, testKubeConfig } from '../../support/kube.js';
import { ensureCrd, NGINX, NGINX_CHART, ROOT } from '../../support/operator.js';
import { httpsGet } from '../../support/secure-scrape.js';
import { killAll, sample, spawnOperator, watchEntry, watchesFile, type OperatorProcess } from './support.js';

/**
 * `--metrics-secure --metrics-require-rbac`, as kubebuilder v4 deploys it: HTTPS with a
 * self-signed certificate, HTTP/1.1 only, and each scrape's token reviewed by the API server
 * (TokenReview, then a SubjectAccessReview of `get /metrics` that config/'s metrics-reader grants).
 */
describe('secure metrics of a running operator', () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  let ns: Awaited<ReturnType<typeof createNamespace>>;
  let watches: Awaited<ReturnType<typeof watchesFile>>;
  let op: OperatorProcess;
  let role: string;

  beforeAll(async () => {
    await ensureCrd(kc, NGINX);
    ns = await createNamespace(kc, 'secure-metrics');
    role = `${ns.name}-metrics-reader`;
    // This repository's own ClusterRole, under a name of this test's.
    const reader = parse(await readFile(path.join(ROOT, 'config/rbac/metrics_reader_role.yaml'), 'utf8')) as V1ClusterRole;
    await rbac.createClusterRole({ body: { rules: reader.rules ?? [], metadata: { name: role } } });
    for (const name of ['reader', 'stranger'])
      await core.createNamespacedServiceAccount({ namespace: ns.name, body: { metadata: { name } } });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: role },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns.name }],
      },
    });
    watches = await watchesFile(watchEntry(NGINX, NGINX_CHART));
    op = spawnOperator({ watchesFile: watches.file, namespace: ns.name, args: ['--metrics-secure', '--metrics-require-rbac'] });
  });
  afterAll(async () => {
    await killAll();
    await rbac.deleteClusterRoleBinding({ name: role }).catch(() => undefined);
    await rbac.deleteClusterRole({ name: role }).catch(() => undefined);
    await ns.remove();
    await watches.remove();
  });

  it('serves HTTPS (HTTP/1.1 only); 401 without a token, 403 without metrics-reader, 200 with it', { timeout: 90_000 }, async () => {
    const url = (await op.metricsUrl()).replace(/^http:/, 'https:');
    const line = await op.waitForLog('the metrics server line', (l) => l.msg === 'Serving metrics server');
    expect(line.secure).toBe(true);

    const anonymous = await httpsGet(`${url}/metrics`);
    expect(anonymous.status).toBe(401);
    // HTTP/2 is off: offered h2 first, the server still picks HTTP/1.1.
    expect(anonymous.alpn).toBe('http/1.1');
    expect(anonymous.certificateSubject).toContain('CN=');

    const garbage = await httpsGet(`${url}/metrics`, 'not-a-token');
    expect(garbage.status).toBe(401);

    const stranger = await serviceAccountToken(kc, 600, { name: 'stranger', namespace: ns.name });
    const denied = await httpsGet(`${url}/metrics`, stranger);
    expect(denied.status).toBe(403);
    expect(denied.body).toContain(`system:serviceaccount:${ns.name}:stranger`);

    const reader = await serviceAccountToken(kc, 600, { name: 'reader', namespace: ns.name });
    for (let i = 0; i < 2; i++) {
      // The second answer comes from the caches: same result.
      const ok = await httpsGet(`${url}/metrics`, reader);
      expect(ok.status).toBe(200);
      expect(sample(ok.body, 'helm_operator_build_info')).toBe(1);
    }
    expect(await op.stop()).toEqual({ code: 0, signal: null });
  });

  it('refuses --metrics-require-rbac over plain HTTP, by name', { timeout: 60_000 }, async () => {
    const p = spawnOperator({ watchesFile: watches.file, namespace: ns.name, args: ['--metrics-require-rbac'] });
    expect((await p.exited).code).toBe(2);
    expect(p.other.join('\n')).toMatch(/--metrics-require-rbac needs --metrics-secure/);
  });
});
