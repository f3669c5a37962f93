/**
 * ObjectMeta validation (`ValidateObjectMeta`, `ValidateObjectMetaUpdate` in apimachinery
 * `pkg/api/validation/objectmeta.go`), shared by every kind.
 */
import type { FieldError, KubeObject } from '../../types.ts';
import { forbidden, immutable, invalid, required, tooLong } from './field.ts';
import { isDNS1123Label, isQualifiedName, isValidLabelValue } from './names.ts';

/** A name validator: returns upstream messages. */
export type NameValidator = (name: string) => string[];

const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;
const STANDARD_FINALIZERS = new Set(['kubernetes', 'orphan', 'foregroundDeletion']);

/** `ValidateLabels` under `field`. */
export function validateLabels(labels: Record<string, string> | undefined, field: string): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    for (const m of isQualifiedName(k)) errs.push(invalid(field, k, m));
    for (const m of isValidLabelValue(String(v))) errs.push(invalid(field, v, m));
  }
  return errs;
}

/** `ValidateAnnotations`: keys are qualified names (checked lower-cased), total size ≤256 KiB. */
export function validateAnnotations(annotations: Record<string, string> | undefined, field: string): FieldError[] {
  const errs: FieldError[] = [];
  let size = 0;
  for (const [k, v] of Object.entries(annotations ?? {})) {
    for (const m of isQualifiedName(k.toLowerCase())) errs.push(invalid(field, k, m));
    size += k.length + String(v).length;
  }
  if (size > TOTAL_ANNOTATION_SIZE_LIMIT) errs.push(tooLong(field, '', TOTAL_ANNOTATION_SIZE_LIMIT));
  return errs;
}

/** `ValidateFinalizers` + core's `validateKubeFinalizerName`. */
export function validateFinalizers(finalizers: string[] | undefined, field: string): FieldError[] {
  const errs: FieldError[] = [];
  const list = finalizers ?? [];
  for (const f of list) {
    const msgs = isQualifiedName(f);
    for (const m of msgs) errs.push(invalid(field, f, m));
    if (msgs.length === 0 && !f.includes('/') && !STANDARD_FINALIZERS.has(f)) {
      errs.push(invalid(field, f, 'name is neither a standard finalizer name nor is it fully qualified'));
    }
  }
  if (list.includes('orphan') && list.includes('foregroundDeletion')) {
    errs.push(invalid(field, list, 'finalizer orphan and foregroundDeletion cannot be both set'));
  }
  return errs;
}

/** Kinds that may never be owners (`BannedOwners`): both Event kinds. */
const BANNED_OWNERS = new Set(['v1/Event', 'events.k8s.io/v1/Event']);

/** `ValidateOwnerReferences`: apiVersion/kind/name/uid present, at most one controller, no Event owners. */
export function validateOwnerReferences(refs: unknown, field: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!Array.isArray(refs)) return errs;
  let firstController = '';
  for (const ref of refs as Array<Record<string, any>>) {
    const apiVersion = String(ref?.apiVersion ?? '');
    const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
    if (!version) errs.push(invalid(`${field}.apiVersion`, apiVersion, 'version must not be empty'));
    if (!ref?.kind) errs.push(invalid(`${field}.kind`, ref?.kind ?? '', 'kind must not be empty'));
    if (!ref?.name) errs.push(invalid(`${field}.name`, ref?.name ?? '', 'name must not be empty'));
    if (!ref?.uid) errs.push(invalid(`${field}.uid`, ref?.uid ?? '', 'uid must not be empty'));
    if (BANNED_OWNERS.has(`${apiVersion}/${ref?.kind}`)) {
      const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
      errs.push(invalid(field, ref, `${group}/${version}, Kind=${ref.kind} is disallowed from being an owner`));
    }
    if (ref?.controller === true) {
      const current = `${ref.kind}/${ref.name}`;
      if (firstController) {
        errs.push(invalid(field, refs, `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${current}`));
      } else {
        firstController = current;
      }
    }
  }
  return errs;
}

/** `ValidateObjectMeta`: name (by the kind's rule), namespace presence, labels, annotations, owner references, finalizers. */
export function validateObjectMeta(obj: KubeObject, namespaced: boolean, nameRule: NameValidator): FieldError[] {
  const meta = obj.metadata ?? {};
  const errs: FieldError[] = [];
  if (!meta.name) {
    if (!meta.generateName) errs.push(required('metadata.name', 'name or generateName is required'));
  } else {
    for (const m of nameRule(meta.name)) errs.push(invalid('metadata.name', meta.name, m));
  }
  if (namespaced) {
    if (!meta.namespace) errs.push(required('metadata.namespace'));
    else for (const m of isDNS1123Label(meta.namespace)) errs.push(invalid('metadata.namespace', meta.namespace, m));
  } else if (meta.namespace) {
    errs.push(forbidden('metadata.namespace', 'not allowed on this type'));
  }
  if (meta.generation !== undefined && meta.generation < 0) {
    errs.push(invalid('metadata.generation', meta.generation, 'must be greater than or equal to 0'));
  }
  errs.push(...validateLabels(meta.labels, 'metadata.labels'));
  errs.push(...validateAnnotations(meta.annotations, 'metadata.annotations'));
  errs.push(...validateOwnerReferences(meta.ownerReferences, 'metadata.ownerReferences'));
  errs.push(...validateFinalizers(meta.finalizers, 'metadata.finalizers'));
  return errs;
}

/** `ValidateObjectMetaUpdate`: identity and system fields immutable, plus the create-time rules. */
export function validateObjectMetaUpdate(obj: KubeObject, old: KubeObject, namespaced: boolean, nameRule: NameValidator): FieldError[] {
  const m = obj.metadata ?? {};
  const o = old.metadata ?? {};
  const errs = validateObjectMeta(obj, namespaced, nameRule);
  errs.push(...immutable('metadata.name', m.name, o.name));
  errs.push(...immutable('metadata.namespace', m.namespace, o.namespace));
  errs.push(...immutable('metadata.uid', m.uid, o.uid));
  errs.push(...immutable('metadata.creationTimestamp', m.creationTimestamp, o.creationTimestamp));
  if (o.deletionTimestamp !== undefined) {
    errs.push(...immutable('metadata.deletionTimestamp', m.deletionTimestamp, o.deletionTimestamp));
    errs.push(...immutable('metadata.deletionGracePeriodSeconds', m.deletionGracePeriodSeconds, o.deletionGracePeriodSeconds));
  }
  if (m.generation !== undefined && o.generation !== undefined && m.generation < o.generation) {
    errs.push(invalid('metadata.generation', m.generation, 'must not be decremented'));
  }
  return errs;
}
