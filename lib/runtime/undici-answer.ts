/**
 * What the HTTP clients that send through undici's dispatcher API (the Kubernetes client, lib/kube/http.ts;
 * the StorageOS client, lib/storage/storageos/transport.ts) make of an answer, the way `fetch` would: its
 * headers by lower-case name with repeated values joined with `, `, and a gzipped body decompressed.
 *
 * @example
 * const headers = joinHeaders(response.headers);           // { 'content-type': 'application/json', … }
 * const text = (await decodeBody(await response.body.arrayBuffer(), headers)).toString('utf8');
 */
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';

const gunzipBytes = promisify(gunzip);

/** undici's response headers as `fetch` gives them: one string per name, repeated values joined with `, `. */
export function joinHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const joined: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) joined[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return joined;
}

/** The answer says its body is gzipped (`Content-Encoding: gzip`). */
export function isGzipped(headers: Record<string, string>): boolean {
  return headers['content-encoding']?.trim().toLowerCase() === 'gzip';
}

/** A body's bytes, decompressed when the answer gzipped them. */
export async function decodeBody(data: ArrayBuffer, headers: Record<string, string>): Promise<Buffer> {
  return isGzipped(headers) ? gunzipBytes(new Uint8Array(data)) : Buffer.from(data);
}
