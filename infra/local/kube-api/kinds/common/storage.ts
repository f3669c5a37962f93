/**
 * Helpers shared by the volume kinds (`pkg/apis/core/helper`, `pkg/volume/util`).
 */
import type { KubeObject } from '../../types.ts';

/** The access modes, in upstream's validation order. */
export const ACCESS_MODES = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'] as const;
const SHORT: Record<string, string> = { ReadWriteOnce: 'RWO', ReadOnlyMany: 'ROX', ReadWriteMany: 'RWX', ReadWriteOncePod: 'RWOP' };

/** `GetAccessModesAsString`: `RWO,ROX,RWX,RWOP` in that order, duplicates removed. */
export function accessModesAsString(modes: string[] | undefined): string {
  const set = new Set(modes ?? []);
  return ACCESS_MODES.filter((m) => set.has(m)).map((m) => SHORT[m]).join(',');
}

/** The beta storage-class annotation, still honoured by the binder and the printers. */
export const BETA_STORAGE_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';

/** `GetPersistentVolumeClass` / `GetPersistentVolumeClaimClass`: annotation first, then the field. */
export function storageClassOf(obj: KubeObject): string {
  const ann = obj.metadata?.annotations?.[BETA_STORAGE_CLASS_ANNOTATION];
  if (ann !== undefined) return ann;
  return obj.spec?.storageClassName ?? '';
}

/** The volume-mode values. */
export const VOLUME_MODES = ['Block', 'Filesystem'] as const;

/** Timestamp as metav1.Time marshals it (RFC3339, seconds, UTC). */
export const rfc3339 = (d: Date = new Date()): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
