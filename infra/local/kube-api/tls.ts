/**
 * A serving certificate made at start: an ECDSA P-256 key and a self-signed X.509 v3 certificate for
 * `localhost`, `127.0.0.1` and `::1` (and the listen host), written in DER by hand (no dependency).
 *
 * Why TLS at all: kubectl (client-go's clientcmd) sends a kubeconfig's credentials only over https, as a real
 * apiserver only accepts them there; so an emulator that authenticates serves https, and its kubeconfigs carry
 * this certificate as `certificate-authority-data`.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';

/** A key and certificate in PEM. */
export interface ServingCertificate {
  key: string;
  cert: string;
}

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
};
const seq = (...c: Buffer[]): Buffer => tlv(0x30, ...c);

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out = [40 * parts[0] + parts[1]];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [];
    let v = p;
    do {
      chunk.unshift(v & 0x7f);
      v = Math.floor(v / 128);
    } while (v > 0);
    for (let i = 0; i < chunk.length - 1; i++) chunk[i] |= 0x80;
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

function utcTime(d: Date): Buffer {
  const p = (n: number) => String(n).padStart(2, '0');
  const s = `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  return tlv(0x17, Buffer.from(s, 'ascii'));
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  const [head, tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  return Buffer.concat(groups.map((g) => {
    const b = Buffer.alloc(2);
    b.writeUInt16BE(Number.parseInt(g || '0', 16));
    return b;
  }));
}

const pem = (label: string, der: Buffer): string =>
  `-----BEGIN ${label}-----\n${der.toString('base64').match(/.{1,64}/g)!.join('\n')}\n-----END ${label}-----\n`;

/** A fresh key and a self-signed certificate valid for ten years, for `hosts` (names or IPs). */
export function makeServingCertificate(hosts: string[] = []): ServingCertificate {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const names = [...new Set(['localhost', '127.0.0.1', '::1', ...hosts.filter((h) => h && h !== '0.0.0.0' && h !== '::')])];
  const serial = randomBytes(16);
  serial[0] = (serial[0] & 0x7f) | 0x01;
  const algorithm = seq(oid('1.2.840.10045.4.3.2'));
  const name = seq(tlv(0x31, seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from('kube-api-emulator')))));
  const now = Date.now();
  const validity = seq(utcTime(new Date(now - 3600_000)), utcTime(new Date(now + 10 * 365 * 86400_000)));
  const san = seq(...names.map((n) => (isIP(n) ? tlv(0x87, ipBytes(n)) : tlv(0x82, Buffer.from(n, 'ascii')))));
  const extension = (id: string, critical: boolean, value: Buffer): Buffer =>
    seq(oid(id), ...(critical ? [tlv(0x01, Buffer.from([0xff]))] : []), tlv(0x04, value));
  const extensions = tlv(0xa3, seq(
    extension('2.5.29.15', true, tlv(0x03, Buffer.from([0x02, 0x84]))), // keyUsage: digitalSignature, keyCertSign
    extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))), // extKeyUsage: serverAuth
    extension('2.5.29.19', true, seq(tlv(0x01, Buffer.from([0xff])))), // basicConstraints: CA (its own trust anchor)
    extension('2.5.29.17', false, san),
  ));
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([0x02]))),
    tlv(0x02, serial),
    algorithm,
    name,
    validity,
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    extensions,
  );
  const signature = sign('sha256', tbs, privateKey);
  const cert = seq(tbs, algorithm, tlv(0x03, Buffer.from([0x00]), signature));
  return { key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, cert: pem('CERTIFICATE', cert) };
}
