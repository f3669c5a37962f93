/**
 * Table printing helpers (`pkg/printers/internalversion/printers.go`, apimachinery `util/duration`).
 */
import type { ColumnDefinition, KubeObject } from '../../types.ts';

/** `duration.HumanDuration`: kubectl's compact age (`5s`, `3m20s`, `4h5m`, `3d2h`, `2y10d`). */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.trunc(hours / 24) % 365;
    const y = Math.trunc(hours / 24 / 365);
    return dy === 0 ? `${y}y` : `${y}y${dy}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/** `translateTimestampSince`: `<unknown>` for a missing timestamp. */
export function since(timestamp: string | undefined | null, now: Date): string {
  if (!timestamp) return '<unknown>';
  const t = Date.parse(timestamp);
  if (Number.isNaN(t)) return '<unknown>';
  return humanDuration(now.getTime() - t);
}

/** The object's Age cell. */
export const age = (obj: KubeObject, now: Date): string => since(obj.metadata?.creationTimestamp, now);

/** A column definition. */
export function column(name: string, type: ColumnDefinition['type'], description: string, priority = 0, format = ''): ColumnDefinition {
  return { name, type, format, description, priority };
}

/** The Name column every printer starts with. */
export const NAME_COLUMN = column('Name', 'string',
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated.',
  0, 'name');

/** The Age column. */
export const AGE_COLUMN = column('Age', 'string',
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.');

/** `<none>` for empty cells, as printers.go does. */
export const orNone = (s: string | undefined | null): string => (s ? s : '<none>');
