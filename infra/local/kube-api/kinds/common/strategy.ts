/**
 * Builds a {@link KindStrategy} from the hooks a kind actually has; ObjectMeta validation is always run,
 * as every upstream `Validate<Kind>` starts with `ValidateObjectMeta`.
 */
import type { FieldError, KindStrategy, KubeObject } from '../../types.ts';
import { clone } from './field.ts';
import { validateObjectMeta, validateObjectMetaUpdate, type NameValidator } from './meta.ts';

export interface StrategyHooks {
  namespaced: boolean;
  /** The kind's name rule (`ValidateNameFunc`). */
  nameRule: NameValidator;
  /** False for kinds whose upstream validation skips `ValidateObjectMeta` (core/v1 Event). */
  validateMeta?: boolean;
  decode?(obj: KubeObject): void;
  defaults?(obj: KubeObject): void;
  prepareForCreate?(obj: KubeObject): void;
  prepareForUpdate?(obj: KubeObject, old: KubeObject, subresource?: 'status'): void;
  /** Kind-specific create validation (metadata is handled here). */
  validate?(obj: KubeObject): FieldError[];
  /** Kind-specific update validation; defaults to `validate(obj)`. */
  validateUpdate?(obj: KubeObject, old: KubeObject, subresource?: 'status'): FieldError[];
  warnings?(obj: KubeObject, old?: KubeObject): string[];
}

/** Assembles a strategy: missing hooks are no-ops. */
export function makeStrategy(h: StrategyHooks): KindStrategy {
  const meta = h.validateMeta !== false;
  const strategy: KindStrategy = {
    decode: (obj) => h.decode?.(obj),
    defaults: (obj) => h.defaults?.(obj),
    prepareForCreate: (obj) => h.prepareForCreate?.(obj),
    prepareForUpdate: (obj, old, sub) => h.prepareForUpdate?.(obj, old, sub),
    validate: (obj) => [...(meta ? validateObjectMeta(obj, h.namespaced, h.nameRule) : []), ...(h.validate?.(obj) ?? [])],
    validateUpdate: (obj, old, sub) => [
      ...(meta ? validateObjectMetaUpdate(obj, old, h.namespaced, h.nameRule) : []),
      ...(h.validateUpdate ? h.validateUpdate(obj, old, sub) : (h.validate?.(obj) ?? [])),
    ],
  };
  if (h.warnings) strategy.warnings = h.warnings;
  return strategy;
}

/**
 * The status split of `PrepareForUpdate`: the main resource keeps the old status, the status subresource
 * keeps the old spec. Nothing is rejected; the ignored half is silently replaced.
 */
export function splitStatus(obj: KubeObject, old: KubeObject, subresource?: 'status'): void {
  const field = subresource === 'status' ? 'spec' : 'status';
  if (old[field] === undefined) delete obj[field];
  else obj[field] = clone(old[field]);
}

/** The metadata `metav1.ResetObjectMetaForStatus` takes from the stored object (managedFields aside: not kept here). */
export const STATUS_RESET_META = ['deletionTimestamp', 'generation', 'selfLink', 'labels', 'annotations', 'finalizers', 'ownerReferences'] as const;

/** Sets each of `fields` of `obj.metadata` to the old object's (absent when the old object has none). */
export function keepMetaFromOld(obj: KubeObject, old: KubeObject, fields: readonly string[]): void {
  for (const f of fields) {
    if (old.metadata[f] === undefined) delete obj.metadata[f];
    else obj.metadata[f] = clone(old.metadata[f]);
  }
}

/**
 * `metav1.ResetObjectMetaForStatus`: a status write keeps the stored object's {@link STATUS_RESET_META}, so
 * labels, annotations, finalizers and ownerReferences in a `/status` body are silently ignored. Upstream
 * makes this opt-in per status strategy ("for new objects with Status subresource"); of the kinds served
 * here only VolumeAttachment calls it. PersistentVolume, PersistentVolumeClaim, Node, Namespace, Service
 * and ReplicaSet status strategies copy only the spec, so their `/status` writes do apply metadata; Pod's
 * keeps only ownerReferences and Deployment's only labels (each kind says so with {@link keepMetaFromOld}).
 */
export function resetObjectMetaForStatus(obj: KubeObject, old: KubeObject): void {
  keepMetaFromOld(obj, old, STATUS_RESET_META);
}

/** Returns `obj[key]` as an object, creating it when absent. */
export function ensure(obj: Record<string, any>, key: string): Record<string, any> {
  if (obj[key] === undefined || obj[key] === null || typeof obj[key] !== 'object') obj[key] = {};
  return obj[key];
}

/** Verbs of an ordinary resource. */
export const STANDARD_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
