/**
 * A scrape as Prometheus makes it with kubebuilder's ServiceMonitor: HTTPS without verifying the
 * (self-signed) certificate, a bearer token when given, h2 offered before HTTP/1.1 so the answer
 * shows whether the server would speak HTTP/2.
 */
import { createRequire } from 'node:module';
import type { RequestOptions } from 'node:https';
import type { ConnectionOptions, TLSSocket } from 'node:tls';
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { serviceAccountToken } from './deploy.js';

// Through require, as the operator does for node:http (docs/adr/0020).
const https = createRequire(import.meta.url)('node:https') as typeof import('node:https');

/** The endpoint of kubebuilder v4's ServiceMonitor (config/prometheus/monitor.yaml): HTTPS, the scraper's own token. */
export const SECURE_MONITOR_ENDPOINT = {
  path: '/metrics',
  port: 'https',
  scheme: 'https',
  bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
  tlsConfig: { insecureSkipVerify: true },
} as const;

export interface SecureAnswer {
  readonly status: number;
  readonly body: string;
  /** The protocol the server chose by ALPN. */
  readonly alpn: string | false;
  readonly certificateSubject: string;
}

export function httpsGet(url: string, token?: string): Promise<SecureAnswer> {
  return new Promise((resolve, reject) => {
    const options: RequestOptions & ConnectionOptions = {
      method: 'GET',
      rejectUnauthorized: false,
      ALPNProtocols: ['h2', 'http/1.1'],
      agent: false,
      headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
    };
    const req = https.request(url, options as RequestOptions, (res) => {
      const socket = res.socket as TLSSocket;
      const alpn = socket.alpnProtocol ?? false;
      const cert = socket.getPeerX509Certificate();
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
          alpn,
          certificateSubject: cert?.subject ?? '',
        });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

export interface MetricsScrapers {
  /** A token of a ServiceAccount bound to the metrics-reader ClusterRole: what Prometheus' would hold. */
  readonly reader: string;
  /** A token of a ServiceAccount bound to nothing: authenticated, not authorized (403). */
  readonly stranger: string;
  /** Deletes the ClusterRoleBinding (the ServiceAccounts go with their namespace). */
  remove(): Promise<void>;
}

/**
 * Two ServiceAccounts in `namespace`, `metrics-scraper` bound to `clusterRole` (a deployed
 * metrics-reader) as the ServiceMonitor's Prometheus would be, `metrics-stranger` to nothing.
 */
export async function metricsScrapers(kc: KubeConfig, clusterRole: string, namespace: string): Promise<MetricsScrapers> {
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const binding = `${namespace}-metrics-scraper`;
  for (const name of ['metrics-scraper', 'metrics-stranger'])
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: binding },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
      subjects: [{ kind: 'ServiceAccount', name: 'metrics-scraper', namespace }],
    },
  });
  return {
    reader: await serviceAccountToken(kc, 3600, { name: 'metrics-scraper', namespace }),
    stranger: await serviceAccountToken(kc, 3600, { name: 'metrics-stranger', namespace }),
    remove: async () => {
      await rbac.deleteClusterRoleBinding({ name: binding }).catch(() => undefined);
    },
  };
}
