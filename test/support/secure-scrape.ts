/**
 * A scrape as Prometheus makes it with kubebuilder's ServiceMonitor: HTTPS without verifying the
 * (self-signed) certificate, a bearer token when given, h2 offered before HTTP/1.1 so the answer
 * shows whether the server would speak HTTP/2.
 */
import { createRequire } from 'node:module';
import type { RequestOptions } from 'node:https';
import type { ConnectionOptions, TLSSocket } from 'node:tls';

// Through require, as the operator does for node:http (docs/adr/0020).
const https = createRequire(import.meta.url)('node:https') as typeof import('node:https');

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
