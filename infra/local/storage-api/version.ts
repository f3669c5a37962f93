/**
 * Object versions of the embedded control plane: a counter per object, shown on the wire as StorageOS
 * does, an opaque short base64 string (`5` → `"NQ"`).
 */
import { ApiFailure } from './errors.ts';

/** The wire form of version number `n`. */
export function encodeVersion(n: number): string {
  return Buffer.from(String(n)).toString('base64').replace(/=+$/, '');
}

/**
 * Check the version a write carries against the object's current one: 400 when it is missing, 412
 * (stale write) when it differs, nothing when `ignoreVersion` is set.
 */
export function checkVersion(current: number, sent: string | undefined, ignoreVersion: boolean): void {
  if (ignoreVersion) return;
  if (sent === undefined || sent === '') throw new ApiFailure(400, 'version is required');
  if (sent !== encodeVersion(current)) {
    throw new ApiFailure(412, 'stale write: the object has been modified since the version was obtained');
  }
}
