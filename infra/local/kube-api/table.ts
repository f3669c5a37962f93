/**
 * Server-side printing (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), as apiserver
 * `handlers/response.go asTable` answers: rows from the kind's table spec, or the default Name/Age columns.
 */
import type { ColumnDefinition, KindSpec, KubeObject } from './types.ts';
import { apiVersionOf } from './store.ts';

/** `includeObject` query values. */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** True when the Accept header asks for a meta.k8s.io Table first (kubectl get). */
export function wantsTable(accept: string | undefined): boolean {
  if (!accept) return false;
  const first = accept.split(',')[0];
  return /as=Table/.test(first) && /g=meta\.k8s\.io/.test(first);
}

/** `duration.HumanDuration` (apimachinery `pkg/util/duration`). */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.floor(hours / 24) % 365;
    return days === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${days}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

const DEFAULT_COLUMNS: ColumnDefinition[] = [
  { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names', priority: 0 },
  { name: 'Age', type: 'string', format: '', description: 'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata', priority: 0 },
];

/** The columns of a kind's table. */
export function columnsOf(spec: KindSpec): ColumnDefinition[] {
  return spec.table?.columns ?? DEFAULT_COLUMNS;
}

function row(spec: KindSpec, obj: KubeObject, now: Date, include: IncludeObject): Record<string, unknown> {
  const cells = spec.table ? spec.table.row(obj, now)
    : [obj.metadata.name, obj.metadata.creationTimestamp ? humanDuration(now.getTime() - Date.parse(obj.metadata.creationTimestamp)) : '<unknown>'];
  const out: Record<string, unknown> = { cells };
  if (include === 'Object') out.object = { ...obj, kind: spec.kind, apiVersion: apiVersionOf(spec) };
  else if (include === 'Metadata') out.object = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
  return out;
}

/** A `meta.k8s.io/v1` Table of objects. */
export function toTable(spec: KindSpec, objects: KubeObject[], options: {
  include: IncludeObject; headers: boolean; resourceVersion?: string; continueToken?: string; remainingItemCount?: number;
}): Record<string, unknown> {
  const now = new Date();
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: {
      ...(options.resourceVersion !== undefined ? { resourceVersion: options.resourceVersion } : {}),
      ...(options.continueToken ? { continue: options.continueToken } : {}),
      ...(options.remainingItemCount !== undefined ? { remainingItemCount: options.remainingItemCount } : {}),
    },
    ...(options.headers ? { columnDefinitions: columnsOf(spec) } : {}),
    rows: objects.map((o) => row(spec, o, now, options.include)),
  };
}
