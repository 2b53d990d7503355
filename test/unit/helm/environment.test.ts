import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { HelmClient } from '../../../src/helm/client.js';
import { connectionFor } from '../../../src/helm/connection.js';
import { clientThrottleEnv, helmEnv, inheritedEnv, INSTANCE_ENV } from '../../../src/helm/environment.js';
import { goRuntimeEnv } from '../../../src/helm/go-runtime.js';
import { selfInstance } from '../../../src/helm/instance.js';
import { workDirPerTest, writeFakeHelm } from './helpers.js';

let work = '';
workDirPerTest('helm-env-test-', (dir) => (work = dir));

describe("helm's client-side throttle", () => {
  it("raises client-go's 5 requests/s unless the operator's environment sets it", () => {
    expect(clientThrottleEnv({})).toEqual({ HELM_QPS: '50', HELM_BURST_LIMIT: '200' });
    expect(clientThrottleEnv({ HELM_QPS: '5' })).toEqual({ HELM_BURST_LIMIT: '200' });
    expect(clientThrottleEnv({ HELM_QPS: '5', HELM_BURST_LIMIT: '10' })).toEqual({});
  });

  it.each([false, true])('reaches the helm process (userHelmHome %s), below extraEnv', async (userHelmHome) => {
    const dump = path.join(work, `env-${String(userHelmHome)}`);
    const c = new HelmClient({
      binary: await writeFakeHelm(work),
      tmpDir: work,
      userHelmHome,
      extraEnv: { FAKE_HELM_ENV_DUMP: dump, HELM_BURST_LIMIT: '7' },
    });
    await c.version();
    const env = await readFile(dump, 'utf8');
    expect(env).toMatch(/^HELM_QPS=50$/m);
    expect(env).toMatch(/^HELM_BURST_LIMIT=7$/m);
  });
});

describe("Go's scheduler in helm processes", () => {
  it("runs one P unless the operator's environment sets GOMAXPROCS, and leaves the collector alone", () => {
    expect(goRuntimeEnv({})).toEqual({ GOMAXPROCS: '1' });
    expect(goRuntimeEnv({ GOMAXPROCS: '4' })).toEqual({});
    expect(goRuntimeEnv({ GOGC: '400' })).toEqual({ GOMAXPROCS: '1' });
  });

  it("reaches the helm process, below the operator's own GOMAXPROCS and extraEnv", async () => {
    const dump = path.join(work, 'env-go');
    const c = new HelmClient({ binary: await writeFakeHelm(work), tmpDir: work, extraEnv: { FAKE_HELM_ENV_DUMP: dump } });
    await c.version();
    const env = await readFile(dump, 'utf8');
    expect(env).toMatch(/^GOMAXPROCS=1$/m);
    expect(env).not.toMatch(/^GOGC=/m);
    expect(env).not.toMatch(/^GOMEMLIMIT=/m);
    vi.stubEnv('GOMAXPROCS', '3');
    try {
      const dump2 = path.join(work, 'env-go-own');
      await new HelmClient({ binary: await writeFakeHelm(work), tmpDir: work, extraEnv: { FAKE_HELM_ENV_DUMP: dump2 } }).version();
      expect(await readFile(dump2, 'utf8')).toMatch(/^GOMAXPROCS=3$/m);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe("helm's environment", () => {
  it("is an allow-list of the operator's: what helm, client-go and Go read, no other secrets", () => {
    const env = {
      PATH: '/bin',
      HOME: '/home/op',
      HTTPS_PROXY: 'http://p',
      no_proxy: 'x',
      KUBERNETES_SERVICE_HOST: '10.0.0.1',
      HELM_DEBUG: '1',
      GODEBUG: 'x=1',
      AWS_SECRET_ACCESS_KEY: 'k',
      GOOGLE_APPLICATION_CREDENTIALS: '/c',
      DB_PASSWORD: 'p',
    };
    expect(inheritedEnv(env)).toEqual({
      PATH: '/bin',
      HOME: '/home/op',
      HTTPS_PROXY: 'http://p',
      no_proxy: 'x',
      KUBERNETES_SERVICE_HOST: '10.0.0.1',
      HELM_DEBUG: '1',
      GODEBUG: 'x=1',
    });
  });

  it.each([false, true])(
    "reaches a helm process without the rest of the operator's environment (userHelmHome %s)",
    async (userHelmHome) => {
      const dump = path.join(work, `env-min-${String(userHelmHome)}`);
      const canary = `canary-${Math.random().toString(36).slice(2)}`;
      vi.stubEnv('OPERATOR_DB_PASSWORD', canary);
      vi.stubEnv('HTTPS_PROXY', 'http://proxy.example:3128');
      try {
        const c = new HelmClient({ binary: await writeFakeHelm(work), tmpDir: work, userHelmHome, extraEnv: { FAKE_HELM_ENV_DUMP: dump } });
        await c.version();
      } finally {
        vi.unstubAllEnvs();
      }
      const env = await readFile(dump, 'utf8');
      expect(env).not.toContain(canary);
      expect(env).toMatch(/^HTTPS_PROXY=http:\/\/proxy\.example:3128$/m);
      expect(env).toMatch(/^PATH=/m);
      expect(env).toMatch(new RegExp(`^${INSTANCE_ENV}=${selfInstance().replace('.', '\\.')}$`, 'm'));
      if (!userHelmHome) expect(env).toMatch(new RegExp(`^HELM_DATA_HOME=${work}/helm/data$`, 'm'));
    },
  );

  it("connects through a call's gateway grant: its kubeconfig and client-go caches, not the operator's", () => {
    const own = { kubeconfig: '/op/kubeconfig', kubeContext: 'op' };
    expect(helmEnv({ tmpDir: work }, connectionFor(own), {})).toMatchObject({
      KUBECONFIG: '/op/kubeconfig',
      KUBECACHEDIR: `${work}/helm/kube-cache`,
    });
    const granted = helmEnv({ tmpDir: work }, connectionFor(own, { grant: { kubeconfig: '/g/kubeconfig', cacheDir: '/g/cache' } }), {});
    expect(granted).toMatchObject({ KUBECONFIG: '/g/kubeconfig', KUBECACHEDIR: '/g/cache', HELM_DATA_HOME: `${work}/helm/data` });
  });
});
