import { KubeConfig } from '@kubernetes/client-node';

/**
 * $KUBECONFIG, then ~/.kube/config, then the in-cluster service account. loadFromDefault() quietly
 * falls back to http://localhost:8080 when it finds nothing; that is reported instead.
 */
export function loadKubeConfig(file?: string): KubeConfig {
  const kc = new KubeConfig();
  if (file !== undefined && file !== '') kc.loadFromFile(file);
  else kc.loadFromDefault();
  const server = kc.getCurrentCluster()?.server;
  if (server === undefined || server === 'http://localhost:8080') {
    throw new Error('no Kubernetes configuration found: set KUBECONFIG, create ~/.kube/config, or run in a cluster');
  }
  return kc;
}
