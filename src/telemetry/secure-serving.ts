/**
 * The HTTPS listener of `--metrics-secure` (ADR 0079): the certificate of `--metrics-cert-path`
 * (cert-manager's Secret, mounted; re-read when the files change, as controller-runtime's
 * certwatcher does), else a self-signed one made in memory. HTTP/2 only with `--enable-http2`:
 * off by default, as kubebuilder v4 turned it off after the HTTP/2 Rapid Reset and Stream
 * Cancellation advisories (GHSA-qppj-fm5r-hxr3, GHSA-4374-p667-p6c8).
 */
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Server as TlsServer } from 'node:tls';
import type { HttpListener } from './health.js';
import type { Logger } from './logger.js';
import { selfSignedCertificate, type ServingCertificate } from './self-signed-cert.js';

// Through require, as health.ts does for node:http (docs/adr/0020).
const require = createRequire(import.meta.url);
const https = require('node:https') as typeof import('node:https');
const http2 = require('node:http2') as typeof import('node:http2');

export interface CertFiles {
  /** The directory, e.g. where cert-manager's Secret is mounted. */
  readonly dir: string;
  /** Default tls.crt. */
  readonly certName: string;
  /** Default tls.key. */
  readonly keyName: string;
}

/** What `--metrics-secure` and its companion flags ask for; undefined where used: plain HTTP. */
export interface MetricsSecurity {
  /** Undefined: a self-signed certificate made at start. */
  readonly certFiles?: CertFiles;
  /** `--enable-http2`. */
  readonly http2: boolean;
  /** `--metrics-require-rbac`: each scrape reviewed (scrape-auth.ts). */
  readonly requireRbac: boolean;
}

export interface SecureServingOptions {
  /** Undefined: a self-signed certificate made at start. */
  readonly certFiles?: CertFiles;
  readonly http2: boolean;
  readonly log: Logger;
}

export class CertificateError extends Error {
  override readonly name = 'CertificateError';
}

/** The certificate and key of `files`; a clear error when they cannot be read. */
export function readCertFiles(files: CertFiles): ServingCertificate {
  const read = (name: string, flag: string): string => {
    const file = path.join(files.dir, name);
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new CertificateError(`--metrics-cert-path: cannot read ${file} (${flag}): ${(err as Error).message}`, { cause: err });
    }
  };
  return { cert: read(files.certName, '--metrics-cert-name'), key: read(files.keyName, '--metrics-cert-key') };
}

/** The names the self-signed certificate is made for: whatever a scraper may dial. */
const selfSignedHosts = (): string[] => [...new Set([os.hostname(), 'localhost', '127.0.0.1', '::1'])];

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** Starts an HTTPS server on `bind`; rejects when the port is taken or the certificate cannot be read. */
export async function listenHttps(
  bind: { host: string | undefined; port: number },
  handler: Handler,
  o: SecureServingOptions,
): Promise<HttpListener> {
  const credentials = o.certFiles === undefined ? selfSignedCertificate(selfSignedHosts()) : readCertFiles(o.certFiles);
  const server: TlsServer = o.http2
    ? http2.createSecureServer({ ...credentials, allowHTTP1: true }, handler as unknown as Parameters<typeof http2.createSecureServer>[1])
    : https.createServer({ ...credentials, ALPNProtocols: ['http/1.1'] }, handler);
  if (!o.http2) (server as unknown as import('node:https').Server).keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: bind.host, port: bind.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const watcher = o.certFiles === undefined ? undefined : reloadOnChange(server, o.certFiles, o.log);
  const info = server.address() as AddressInfo;
  const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
  return {
    address: `${host}:${info.port}`,
    port: info.port,
    close: () =>
      new Promise<void>((resolve) => {
        watcher?.close();
        server.close(() => {
          resolve();
        });
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}

/**
 * A mounted Secret changes by an atomic swap of a symlink in its directory: the directory is
 * watched, and a certificate that reads whole replaces the served one for new connections.
 */
function reloadOnChange(server: TlsServer, files: CertFiles, log: Logger): FSWatcher | undefined {
  try {
    return watch(files.dir, () => {
      try {
        server.setSecureContext(readCertFiles(files));
        log.info({ dir: files.dir }, 'Reloaded the metrics serving certificate');
      } catch (err) {
        // Mid-swap, or a broken Secret: the served certificate stays until a whole one is there.
        log.debug({ error: err }, 'Metrics certificate not reloaded');
      }
    });
  } catch (err) {
    log.warn({ error: err, dir: files.dir }, 'Cannot watch the metrics certificate directory: a rotated certificate needs a restart');
    return undefined;
  }
}
