/**
 * Field-selector sets (`generic.ObjectMetaFieldsSet` + each kind's `ToSelectableFields`).
 */
import type { KubeObject } from '../../types.ts';

/** `ObjectMetaFieldsSet`: `metadata.name`, plus `metadata.namespace` for namespaced kinds. */
export function objectMetaFields(obj: KubeObject, namespaced: boolean): Record<string, string> {
  const set: Record<string, string> = { 'metadata.name': obj.metadata?.name ?? '' };
  if (namespaced) set['metadata.namespace'] = obj.metadata?.namespace ?? '';
  return set;
}
