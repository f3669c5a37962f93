/**
 * IP and port checks (`IsValidIP`, `ValidateNonSpecialIP`, `IsValidPortNum`, `IsValidPortName`).
 */
import { isIP } from 'node:net';
import type { FieldError } from '../../types.ts';
import { invalid } from './field.ts';

/** `IsValidIP`'s message. */
export const INVALID_IP = 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)';

/** `IsValidIP` for a legacy field: the messages for a value that is not an IP. */
export const isValidIP = (value: string): string[] => (isIP(value) === 0 ? [INVALID_IP] : []);

/** IPv4 address as a 32-bit number; undefined when not IPv4. */
export function ipv4ToNumber(ip: string): number | undefined {
  if (isIP(ip) !== 4) return undefined;
  return ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}

/** Formats a 32-bit number as dotted IPv4. */
export const numberToIpv4 = (n: number): string => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');

function expandIPv6(ip: string): number[] {
  let s = ip;
  const v4 = s.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (v4) {
    const n = ipv4ToNumber(v4[1]) ?? 0;
    s = s.slice(0, -v4[1].length) + `${Math.floor(n / 65536).toString(16)}:${(n % 65536).toString(16)}`;
  }
  const [head, tail] = s.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const fill = tail !== undefined ? new Array(8 - h.length - t.length).fill('0') : [];
  return [...h, ...fill, ...t].map((x) => parseInt(x, 16));
}

/** `ValidateNonSpecialIP`: no unspecified, loopback, link-local or link-local multicast addresses. */
export function validateNonSpecialIP(ip: string, field: string): FieldError[] {
  const family = isIP(ip);
  if (family === 0) return [invalid(field, ip, 'must be a valid IP address')];
  let unspecified: boolean, loopback: boolean, linkLocal: boolean, linkLocalMulticast: boolean;
  if (family === 4) {
    const n = ipv4ToNumber(ip)!;
    unspecified = n === 0;
    loopback = ip.startsWith('127.');
    linkLocal = ip.startsWith('169.254.');
    linkLocalMulticast = Math.floor(n / 256) === (224 * 2 ** 16);
  } else {
    const w = expandIPv6(ip);
    const mapped = w.slice(0, 5).every((x) => x === 0) && w[5] === 0xffff;
    if (mapped) return validateNonSpecialIP(ip.match(/(\d+\.\d+\.\d+\.\d+)$/)?.[1] ?? numberToIpv4(w[6] * 65536 + w[7]), field);
    unspecified = w.every((x) => x === 0);
    loopback = w.slice(0, 7).every((x) => x === 0) && w[7] === 1;
    linkLocal = (w[0] & 0xffc0) === 0xfe80;
    linkLocalMulticast = (w[0] & 0xff0f) === 0xff02;
  }
  const errs: FieldError[] = [];
  if (unspecified) errs.push(invalid(field, ip, `may not be unspecified (${ip})`));
  if (loopback) errs.push(invalid(field, ip, 'may not be in the loopback range (127.0.0.0/8, ::1/128)'));
  if (linkLocal) errs.push(invalid(field, ip, 'may not be in the link-local range (169.254.0.0/16, fe80::/10)'));
  if (linkLocalMulticast) errs.push(invalid(field, ip, 'may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)'));
  return errs;
}

/** `IsValidPortNum`. */
export const isValidPortNum = (port: unknown): string[] =>
  (Number.isInteger(port) && (port as number) >= 1 && (port as number) <= 65535 ? [] : ['must be between 1 and 65535, inclusive']);

/** `IsValidPortName` (IANA_SVC_NAME). */
export function isValidPortName(name: string): string[] {
  const errs: string[] = [];
  if (name.length < 1 || name.length > 15) errs.push('must be no more than 15 characters');
  if (!/^[-a-z0-9]+$/.test(name)) errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
  if (name.includes('--')) errs.push("must not contain consecutive hyphens");
  if (/[a-z]/.test(name) === false) errs.push("must contain at least one letter (a-z)");
  if (name.startsWith('-') || name.endsWith('-')) errs.push("must not begin or end with a hyphen");
  return errs;
}

/** The protocols Services and Endpoints accept, sorted as upstream lists them. */
export const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
