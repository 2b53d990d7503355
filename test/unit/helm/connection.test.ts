import { describe, expect, it } from 'vitest';
import { withConnectionArgs } from '../../../src/helm/args.js';
import { connectionFor, identityOf } from '../../../src/helm/connection.js';

describe('connectionFor: whom one call acts as, and through what', () => {
  const own = { kubeconfig: '/op/kubeconfig', kubeContext: 'op', kubeCacheDir: '/op/cache' };
  const grant = { kubeconfig: '/g/kubeconfig', cacheDir: '/g/cache' };

  it("is the client's own connection for a call that names no one", () => {
    expect(connectionFor(own)).toEqual(own);
    expect(connectionFor({ ...own, impersonate: 'nobody' }, {})).toEqual({ ...own, impersonate: 'nobody' });
  });

  it("impersonates the call's user over the client's", () => {
    expect(connectionFor({ ...own, impersonate: 'nobody' }, { impersonate: 'system:serviceaccount:demo:deployer' })).toEqual({
      ...own,
      impersonate: 'system:serviceaccount:demo:deployer',
    });
  });

  it("goes through a grant with its own kubeconfig and caches, dropping the client's context", () => {
    const c = connectionFor(own, { impersonate: 'system:serviceaccount:demo:deployer', grant });
    expect(c).toEqual({ kubeconfig: '/g/kubeconfig', kubeCacheDir: '/g/cache', impersonate: 'system:serviceaccount:demo:deployer' });
    expect(withConnectionArgs(['status', '--', 'web'], c)).toEqual([
      'status',
      '--kube-as-user',
      'system:serviceaccount:demo:deployer',
      '--',
      'web',
    ]);
  });

  it("reads a call's identity out of its options and nothing else", () => {
    expect(identityOf({ impersonate: 'u', grant, release: 'web' } as Parameters<typeof identityOf>[0])).toEqual({
      impersonate: 'u',
      grant,
    });
    expect(identityOf({})).toEqual({});
  });
});
