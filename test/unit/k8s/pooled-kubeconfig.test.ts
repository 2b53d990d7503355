import { RequestContext, HttpMethod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PooledKubeConfig } from '../../../src/k8s/kubeconfig.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

function kubeconfig(user: Record<string, unknown>): PooledKubeConfig {
  const kc = new PooledKubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', caData: b64('ca'), skipTLSVerify: false }],
    users: [{ name: 'u', ...user }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
  return kc;
}

async function dispatcherOf(kc: PooledKubeConfig): Promise<unknown> {
  const ctx = new RequestContext('https://127.0.0.1:6443/api', HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  return ctx.getDispatcher();
}

describe('PooledKubeConfig', () => {
  it('gives every request the same connection pool while the TLS identity is unchanged', async () => {
    const kc = kubeconfig({ certData: b64('cert'), keyData: b64('key') });
    const first = await dispatcherOf(kc);
    expect(first).toBeDefined();
    expect(await dispatcherOf(kc)).toBe(first);
    expect(await dispatcherOf(kc)).toBe(first);
  });

  it('still applies the token per request', async () => {
    const kc = kubeconfig({ token: 'secret-token' });
    const ctx = new RequestContext('https://127.0.0.1:6443/api', HttpMethod.GET);
    await kc.applySecurityAuthentication(ctx);
    expect(ctx.getHeaders().Authorization).toBe('Bearer secret-token');
  });

  it('builds a new pool when the client certificate changes', async () => {
    const kc = kubeconfig({ certData: b64('cert'), keyData: b64('key') });
    const first = await dispatcherOf(kc);
    const user = kc.getCurrentUser();
    if (user === null) throw new Error('no user');
    (user as { certData: string }).certData = b64('rotated');
    const second = await dispatcherOf(kc);
    expect(second).not.toBe(first);
    expect(await dispatcherOf(kc)).toBe(second);
  });
});
