import { KubeConfig } from '@kubernetes/client-node';

/** A kubeconfig for a fake API server on loopback (unit tests that speak just enough of the API). */
export function loopbackKubeConfig(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server, skipTLSVerify: true }],
    users: [{ name: 'fake', token: 'test-token' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'fake' }],
    currentContext: 'fake',
  });
  return kc;
}
