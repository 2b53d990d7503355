import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../support/kube.js';
import { httpsGet } from '../../support/secure-scrape.js';
import type { HttpListener } from '../../../src/telemetry/health.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { listenHttps } from '../../../src/telemetry/secure-serving.js';
import { certificateSerial, selfSignedCertificate } from '../../../src/telemetry/self-signed-cert.js';

describe('selfSignedCertificate', () => {
  it('is a valid v3 server certificate for its hosts, signed by its own key, not a CA', () => {
    const now = new Date('2026-12-02T00:00:00Z');
    const c = selfSignedCertificate(['pod-1', 'localhost', '127.0.0.1', '::1'], { now });
    const x = new X509Certificate(c.cert);
    expect(x.verify(x.publicKey)).toBe(true);
    expect(x.checkPrivateKey(createPrivateKey(c.key))).toBe(true);
    expect(x.subject).toBe('CN=pod-1');
    expect(x.subjectAltName).toBe('DNS:pod-1, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(x.ca).toBe(false);
    expect(x.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(new Date(x.validTo).getTime() - now.getTime()).toBe(365 * 86_400_000);
  });
});

describe('certificateSerial', () => {
  it('is a positive DER INTEGER in its shortest form whatever the random bytes (a leading zero was illegal padding)', () => {
    for (const first of [0x00, 0x01, 0x3f, 0x7f, 0x80, 0xff]) {
      for (const second of [0x00, 0x7f, 0x80]) {
        const serial = certificateSerial(Buffer.from([first, second, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]));
        expect(serial.length).toBe(16);
        expect(serial[0]! & 0x80).toBe(0);
        expect(serial[0]).not.toBe(0);
      }
    }
    // A certificate made from the worst case parses (OpenSSL refused it before).
    const worst = Buffer.from([0x00, 0x10, ...Array<number>(14).fill(0)]);
    expect(new X509Certificate(selfSignedCertificate(['pod-1'], { serialBytes: worst }).cert).serialNumber).toMatch(/^[0-9A-F]+$/);
  });
});

describe('listenHttps', () => {
  let server: HttpListener | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await server?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    server = undefined;
    dir = undefined;
  });
  const hello = (_req: unknown, res: import('node:http').ServerResponse): void => {
    res.end('hello');
  };

  it('serves a self-signed certificate made at start, HTTP/1.1 only unless HTTP/2 is enabled', async () => {
    server = await listenHttps({ host: '127.0.0.1', port: 0 }, hello, { http2: false, log: silentLogger() });
    const a = await httpsGet(`https://${server.address}/`);
    expect(a).toMatchObject({ status: 200, body: 'hello', alpn: 'http/1.1' });
    await server.close();
    server = await listenHttps({ host: '127.0.0.1', port: 0 }, hello, { http2: true, log: silentLogger() });
    // Offered h2 first, an HTTP/2 server picks it (the HTTP/1.1 client then cannot talk to it: only the choice is checked).
    const tls = await import('node:tls');
    const alpn = await new Promise<string | false>((resolve, reject) => {
      const s = tls.connect(
        { host: '127.0.0.1', port: server?.port ?? 0, rejectUnauthorized: false, ALPNProtocols: ['h2', 'http/1.1'] },
        () => {
          resolve(s.alpnProtocol ?? false);
          s.destroy();
        },
      );
      s.on('error', reject);
    });
    expect(alpn).toBe('h2');
  });

  it('serves the certificate of --metrics-cert-path, and the new one after a rotation', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'metrics-cert-'));
    const first = selfSignedCertificate(['first']);
    await writeFile(path.join(dir, 'tls.crt'), first.cert);
    await writeFile(path.join(dir, 'tls.key'), first.key);
    server = await listenHttps({ host: '127.0.0.1', port: 0 }, hello, {
      http2: false,
      log: silentLogger(),
      certFiles: { dir, certName: 'tls.crt', keyName: 'tls.key' },
    });
    const url = `https://${server.address}/`;
    expect((await httpsGet(url)).certificateSubject).toBe('CN=first');
    // As the kubelet swaps a Secret volume: new files renamed into place.
    const second = selfSignedCertificate(['second']);
    await writeFile(path.join(dir, 'new.key'), second.key);
    await writeFile(path.join(dir, 'new.crt'), second.cert);
    await rename(path.join(dir, 'new.key'), path.join(dir, 'tls.key'));
    await rename(path.join(dir, 'new.crt'), path.join(dir, 'tls.crt'));
    await waitFor('the rotated certificate', async () => ((await httpsGet(url)).certificateSubject === 'CN=second' ? true : undefined), {
      timeoutMs: 10_000,
      intervalMs: 50,
    });
  });

  it('says which file it cannot read', async () => {
    await expect(
      listenHttps({ host: '127.0.0.1', port: 0 }, hello, {
        http2: false,
        log: silentLogger(),
        certFiles: { dir: '/nonexistent', certName: 'tls.crt', keyName: 'tls.key' },
      }),
    ).rejects.toThrow(/--metrics-cert-path: cannot read \/nonexistent\/tls\.crt \(--metrics-cert-name\)/);
  });
});
