/**
 * Label helpers shared by the clients and the controllers (api-manager `labels.go`).
 */
import { LABELS } from './types.ts';

const CSI_RESERVED: ReadonlySet<string> = new Set([LABELS.pvName, LABELS.pvcName, LABELS.pvcNamespace]);

/**
 * True for StorageOS reserved labels: the `storageos.com/` prefix (the bare prefix included) or one of the
 * three CSI keys (api-manager `IsReservedLabel`).
 */
export function isReservedLabel(key: string): boolean {
  return key.startsWith(LABELS.reservedPrefix) || CSI_RESERVED.has(key);
}

/** Go's `strconv.ParseBool`: `undefined` when the value is not a boolean. */
export function parseBool(value: string): boolean | undefined {
  switch (value) {
    case '1': case 't': case 'T': case 'true': case 'TRUE': case 'True':
      return true;
    case '0': case 'f': case 'F': case 'false': case 'FALSE': case 'False':
      return false;
    default:
      return undefined;
  }
}
