/**
 * A self-signed serving certificate made in memory, as controller-runtime's metrics server makes
 * one when `--metrics-secure` is given without `--metrics-cert-path` (ADR 0079). Node can sign but
 * not build an X.509 certificate, so the few DER structures of one are written here: an ECDSA
 * P-256 key, a v3 certificate for the given DNS names and IPs, valid for a year, signed by itself.
 * Prometheus' ServiceMonitor scrapes it with `insecureSkipVerify` (kubebuilder's default); a
 * verifying client needs cert-manager's certificate instead.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';

export interface ServingCertificate {
  /** PEM. */
  readonly cert: string;
  /** PEM (PKCS#8). */
  readonly key: string;
}

// ---- DER ---------------------------------------------------------------------------------------

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
};
const seq = (...content: Buffer[]): Buffer => tlv(0x30, ...content);
const set = (...content: Buffer[]): Buffer => tlv(0x31, ...content);

function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * a + b];
  for (const arc of rest) {
    const chunk = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime (years 1950-2049), as RFC 5280 requires up to 2049. */
function time(d: Date): Buffer {
  const two = (n: number): string => String(n).padStart(2, '0');
  const text = `${two(d.getUTCFullYear() % 100)}${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}${two(d.getUTCHours())}${two(d.getUTCMinutes())}${two(d.getUTCSeconds())}Z`;
  return tlv(0x17, Buffer.from(text, 'ascii'));
}

const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));
const name = (commonName: string): Buffer => seq(set(seq(oid('2.5.4.3'), utf8(commonName))));
const extension = (id: string, critical: boolean, value: Buffer): Buffer =>
  seq(oid(id), ...(critical ? [tlv(0x01, Buffer.from([0xff]))] : []), tlv(0x04, value));

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  // IPv6: expand "::" and write the eight 16-bit groups.
  const [head = '', tail] = ip.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.concat(groups.map((g) => Buffer.from(g.padStart(4, '0'), 'hex')));
}

const ECDSA_WITH_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

/**
 * Pure: random bytes as a serial number's DER INTEGER content: positive (top bit clear) and in its
 * shortest form, since DER refuses a leading zero byte before one under 0x80 (OpenSSL: "illegal
 * padding"), which a random first byte made in 1 certificate in 256.
 */
export function certificateSerial(random: Buffer): Buffer {
  const serial = Buffer.from(random);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x40;
  return serial;
}

/**
 * A self-signed certificate for `hosts` (DNS names or IP addresses; the first is the common name),
 * valid from a minute ago for `days`.
 */
export function selfSignedCertificate(
  hosts: readonly string[],
  options: { now?: Date; days?: number; /** 16 random bytes; a test's chosen ones */ serialBytes?: Buffer } = {},
): ServingCertificate {
  const now = options.now ?? new Date();
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const serial = certificateSerial(options.serialBytes ?? randomBytes(16));
  const subject = name(hosts[0] ?? 'helm-operator');
  const altNames = seq(...hosts.map((h) => (isIP(h) === 0 ? tlv(0x82, Buffer.from(h, 'ascii')) : tlv(0x87, ipBytes(h)))));
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))), // v3
    tlv(0x02, serial),
    ECDSA_WITH_SHA256,
    subject,
    seq(time(new Date(now.getTime() - 60_000)), time(new Date(now.getTime() + (options.days ?? 365) * 86_400_000))),
    subject,
    publicKey.export({ type: 'spki', format: 'der' }),
    tlv(
      0xa3,
      seq(
        extension('2.5.29.15', true, tlv(0x03, Buffer.from([0x07, 0x80]))), // keyUsage: digitalSignature
        extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))), // extKeyUsage: serverAuth
        extension('2.5.29.19', true, seq()), // basicConstraints: not a CA
        extension('2.5.29.17', false, altNames),
      ),
    ),
  );
  const signature = sign('sha256', tbs, privateKey);
  const der = seq(tbs, ECDSA_WITH_SHA256, tlv(0x03, Buffer.from([0]), signature));
  const pem = `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END CERTIFICATE-----\n`;
  return { cert: pem, key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}
